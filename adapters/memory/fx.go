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
