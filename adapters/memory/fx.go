package memory

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/ports"
)

// Module provides the in-memory store as the service's ports.MessageStore. Callers
// discover optional capabilities such as ports.HealthChecker by type assertion.
var Module = fx.Module("memory",
	fx.Provide(fx.Annotate(New, fx.As(new(ports.MessageStore)))),
)

// AlertModule provides the in-memory alert store as the service's
// ports.AlertStore: rules, states and the delivery queue, kept until the
// process ends.
var AlertModule = fx.Module("memory.alerts",
	fx.Provide(fx.Annotate(NewAlertStore, fx.As(new(ports.AlertStore)))),
)
