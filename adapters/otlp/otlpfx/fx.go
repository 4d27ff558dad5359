// Package otlpfx wires the OpenTelemetry receiver into an fx graph
// (cmd/reqlogd's); a program without fx calls otlp.New.
package otlpfx

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/otlp"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the receiver as the API's httpapi.TraceReceiver, so reqlogd
// serves POST /v1/traces. It needs an otlp.Config, the *app.Ingester it stores
// through, a *zap.Logger and the *prometheus.Registry, where it counts spans
// by outcome.
var Module = fx.Module("otlp",
	fx.Provide(fx.Annotate(newReceiver, fx.As(new(httpapi.TraceReceiver)))),
)

func newReceiver(cfg otlp.Config, in *app.Ingester, reg *prometheus.Registry, log *zap.Logger) (*otlp.Receiver, error) {
	spans := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reqlog_otlp_spans_total",
		Help: "Spans received on POST /v1/traces, by outcome: stored (HTTP server spans), ignored (other spans), rejected (HTTP server spans refused, as the reply's partial_success says).",
	}, []string{"outcome"})
	if err := reg.Register(spans); err != nil {
		return nil, err
	}
	submitter := func(p domain.Principal) ports.ExchangeSubmitter {
		return app.LocalSubmitter{Ingester: in, Principal: p, Source: rules.SourceOTLP}
	}
	return otlp.New(cfg, submitter, spanCounter{spans}, log.Named("otlp")), nil
}

type spanCounter struct{ vec *prometheus.CounterVec }

func (c spanCounter) CountSpans(stored, ignored, rejected int) {
	c.vec.WithLabelValues("stored").Add(float64(stored))
	c.vec.WithLabelValues("ignored").Add(float64(ignored))
	c.vec.WithLabelValues("rejected").Add(float64(rejected))
}
