package app_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// Counts stay true for alerts (issue 39): the same traffic kept whole on one
// service and sampled 1 in 10 on another (the other nine kept as tallies, as
// the ingester appends them) makes an error-rate alert fire on the same
// minute with the same value, since both evaluate what was received.
func TestAnErrorRateAlertFiresOnTheSameMinuteSampledOrWhole(t *testing.T) {
	sample := conformance.SampleOneIn(t, 10)
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0
	whole, sampled := newAlertingWith(t, start, cfg.Policy()), newAlertingWith(t, start, cfg.Policy())
	for _, a := range []*alertService{whole, sampled} {
		if _, err := a.alerts.CreateRule(t.Context(), acmeKey, obj(t, `{"metric":"server_error_rate","threshold":0.25,"window":"5m","min_requests":100}`)); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(39, 4))
	firedAt := map[*alertService]int{}
	dropped := 0
	const minutes, perMinute = 30, 300
	for minute := range minutes {
		var kept, all []domain.Message
		for i := range perMinute {
			at := start.Add(time.Duration(minute)*time.Minute + time.Duration(i*59/perMinute)*time.Second)
			status := 200
			if rng.IntN(minutes) < minute { // the share of 503s grows a thirtieth a minute
				status = 503
			}
			m := domain.Message{ID: fmt.Sprintf("01890000-0000-7000-8000-%05d%07d", minute, i), Account: "acme", Domain: domain.DomainLive,
				Name: "shop", Method: "GET", Path: "/v1/orders", StatusCode: status, Duration: 12 * time.Millisecond, HasDuration: true,
				CreatedAt: at, UpdatedAt: at, VisibleAt: at, ExpiresAt: at.Add(24 * time.Hour)}
			m.Reference = "msg_" + m.ID[len(m.ID)-12:]
			all = append(all, m)
			if !sample.Apply(&m, rules.SourceAPI).Stored {
				dropped++
			}
			kept = append(kept, m)
		}
		for a, msgs := range map[*alertService][]domain.Message{whole: all, sampled: kept} {
			if err := a.messages.Append(t.Context(), msgs); err != nil {
				t.Fatal(err)
			}
			a.minute(t)
			if _, fired := firedAt[a]; !fired && len(a.receiver.Requests()) > 0 {
				firedAt[a] = minute
			}
		}
	}
	if dropped < minutes*perMinute*8/10 {
		t.Fatalf("the sample dropped %d of %d", dropped, minutes*perMinute)
	}
	w, ok := firedAt[whole]
	if !ok {
		t.Fatal("the alert never fired on the traffic kept whole")
	}
	if s, ok := firedAt[sampled]; !ok || s != w {
		t.Fatalf("kept whole the alert fired at minute %d; sampled 1 in 10 at %d (fired: %v)", w, s, ok)
	}
	a, b := decodeAll(t, whole.receiver.Requests(), whole.endpoint.Secrets[0].Secret), decodeAll(t, sampled.receiver.Requests(), sampled.endpoint.Secrets[0].Secret)
	if a[0].Type != "alert.firing" || b[0].Type != a[0].Type || *a[0].Data.Value != *b[0].Data.Value || a[0].Data.Window != b[0].Data.Window {
		t.Errorf("first deliveries differ: kept whole %+v (value %v), sampled %+v (value %v)", a[0], *a[0].Data.Value, b[0], *b[0].Data.Value)
	}
}
