// Package memoryfx wires the memory store into an fx graph (cmd/reqlogd's);
// a program without fx calls memory.New.
package memoryfx

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the in-memory store as the service's ports.MessageStore. Callers
// discover optional capabilities such as ports.HealthChecker by type assertion.
var Module = fx.Module("memory",
	fx.Provide(fx.Annotate(memory.New, fx.As(new(ports.MessageStore)))),
)

// AlertModule provides the in-memory alert store as the service's
// ports.AlertStore (rules, states and the delivery queue) and the rule set
// store as its ports.RuleSetStore and the journal of erasures as its
// ports.ErasureJournal, kept until the process ends.
var AlertModule = fx.Module("memory.alerts",
	fx.Provide(fx.Annotate(memory.NewAlertStore, fx.As(new(ports.AlertStore)))),
	fx.Provide(fx.Annotate(memory.NewRuleSetStore, fx.As(new(ports.RuleSetStore)))),
	fx.Provide(fx.Annotate(memory.NewErasureJournal, fx.As(new(ports.ErasureJournal)))),
)
