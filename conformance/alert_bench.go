package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// BenchAlertRules is how many rules BenchAlertEvaluation evaluates: as many
// as one scope may have by default (app.AlertConfig.MaxRules).
const BenchAlertRules = 1000

// BenchAlertEvaluation times the evaluation of BenchAlertRules rules of scope
// over messages (a store the caller filled with the day before now), one
// round of every rule per iteration, each round a minute after the one
// before as the service evaluates, after a first round (untimed) that writes
// every rule's first state. The rounds start two hours before now, so that
// every window (an hour at most) of the first 120 rounds is full of messages. It reports the process's CPU per round (cpu-ms/round:
// the store's too when it runs in the process, as the embedded FerretDB does)
// and what that is of one core at a round a minute (%core@1/min).
//
// Two ways run in the same process, one after the other: "shared", the
// evaluator as the service runs it (rules of one scope, window and filter
// share a statistics call; an unchanged state is written every tenth round),
// and "per-rule", the simplest evaluator doing the same job (one statistics
// call per rule, then the same step and a compare-and-set of every state),
// whose CPU over shared's is what the two buy.
//
// The rules are as varied as an account's might be: four applications (one
// of them none), five path prefixes, three methods (one of them any), three
// windows (5m, 15m, 1h) and every metric; names are the applications messages
// has.
func BenchAlertEvaluation(b *testing.B, messages ports.MessageReader, alerts ports.AlertStore, scope domain.Scope, names []string, now time.Time) {
	start := now.Add(-2 * time.Hour)
	rules := benchRules(b, alerts, scope, names, start)
	clock := NewFakeClock(start)
	got := app.NewStatistics(messages, domain.DefaultPolicy(), clock)
	cfg := app.DefaultAlertConfig()
	evaluator := app.NewAlertEvaluator(alerts, got, clock, nil, "bench", cfg, zap.NewNop())
	slot := start.Truncate(time.Minute)
	next := func() time.Time {
		slot = slot.Add(time.Minute)
		clock.Set(slot.Add(time.Second))
		return slot
	}
	groups := map[string]bool{}
	for _, r := range rules {
		groups[fmt.Sprint(r.StatsQuery(start).Filter)] = true
	}
	b.Logf("%d rules in %d groups of one scope, window and filter", len(rules), len(groups))
	// The first round writes every rule's first state: not what a minute
	// costs once the service runs.
	if err := evaluator.Evaluate(b.Context(), next()); err != nil {
		b.Fatal(err)
	}
	states, err := alerts.AllStates(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	seen := map[string]int{}
	for _, st := range states {
		seen[fmt.Sprintf("%s/%s", st.Status, st.Reason)]++
	}
	b.Logf("after the first round: %v", seen)
	b.Run("shared", func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			if err := evaluator.Evaluate(b.Context(), next()); err != nil {
				b.Fatal(err)
			}
		}
		reportRoundCPU(b, cpu)
	})
	b.Run("per-rule", func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			at := next()
			states, err := alerts.AllStates(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			byRule := map[string]alerting.State{}
			for _, st := range states {
				byRule[st.RuleID] = st
			}
			for _, r := range rules {
				s, err := got.Compute(b.Context(), domain.Principal{Scope: r.Scope}, r.StatsQuery(at))
				if err != nil {
					b.Fatal(err)
				}
				st := byRule[r.ID]
				step := r.Step(st, at, r.Observe(s), "")
				step.State.Outbox = st.Outbox
				if err := alerts.SwapState(b.Context(), step.State, st.Version); err != nil && !errors.Is(err, ports.ErrStale) {
					b.Fatal(err)
				}
			}
		}
		reportRoundCPU(b, cpu)
	})
}

// benchRules stores BenchAlertRules varied rules of scope, created at now.
func benchRules(b *testing.B, alerts ports.AlertStore, scope domain.Scope, names []string, now time.Time) []alerting.Rule {
	prefixes := []string{"", "/v1/orders", "/v1/orders/1", "/v1/orders/2", "/v1/orders/42"}
	methods := []string{"", "GET", "POST"}
	windows := []time.Duration{5 * time.Minute, 15 * time.Minute, time.Hour}
	apps := append([]string{""}, names...)
	thresholds := map[alerting.Metric]float64{alerting.MetricErrorRate: 0.2, alerting.MetricServerErrorRate: 0.05,
		alerting.MetricRequestCount: 100_000, alerting.MetricDurationP50: 100, alerting.MetricDurationP95: 250, alerting.MetricDurationP99: 500}
	rules := make([]alerting.Rule, BenchAlertRules)
	for i := range rules {
		r := alerting.DefaultRule()
		r.ID, r.Scope, r.CreatedAt, r.UpdatedAt = DerivedBenchID(i), scope, now, now
		r.Filter = alerting.Filter{Name: apps[i%len(apps)], PathPrefix: prefixes[(i/4)%len(prefixes)], Method: methods[(i/20)%len(methods)]}
		r.Window = windows[(i/60)%len(windows)]
		r.Metric = alerting.Metrics[i%len(alerting.Metrics)]
		r.Threshold, r.ResolveThreshold = thresholds[r.Metric], thresholds[r.Metric]
		if err := alerts.CreateRule(b.Context(), r); err != nil {
			b.Fatal(err)
		}
		rules[i] = r
	}
	return rules
}

// DerivedBenchID is the id of the benchmark's rule i.
func DerivedBenchID(i int) string {
	return alerting.DerivedID(alerting.RuleIDPrefix, "bench", fmt.Sprint(i))
}

// reportRoundCPU reports the process's CPU since cpu per iteration, and that
// share of one core at an iteration a minute.
func reportRoundCPU(b *testing.B, cpu int64) {
	per := time.Duration((processCPU() - cpu) / int64(b.N))
	b.ReportMetric(float64(per.Microseconds())/1000, "cpu-ms/round")
	b.ReportMetric(100*per.Seconds()/60, "%core@1/min")
}

// NoTraffic is a message reader that holds nothing: with it
// BenchAlertEvaluation times what alerting adds to the statistics (the rules,
// the states' compare-and-set), every rule seeing a window without data.
type NoTraffic struct{}

var _ ports.MessageReader = NoTraffic{}

// List finds nothing.
func (NoTraffic) List(context.Context, domain.Query, time.Time) (domain.Page, error) {
	return domain.Page{Messages: []domain.Message{}}, nil
}

// Get finds nothing.
func (NoTraffic) Get(_ context.Context, _ domain.Scope, id string, _ time.Time) (domain.Message, error) {
	return domain.Message{}, fmt.Errorf("message %q: %w", id, ports.ErrNotFound)
}

// Stats counts nothing.
func (NoTraffic) Stats(_ context.Context, q stats.Query, _ time.Time) (stats.Stats, error) {
	return stats.New(q), nil
}
