package app

import "go.uber.org/zap"

// named is log.Named(name), or a logger that drops everything when log is nil:
// an embedder that passes no logger gets no logs, never a panic.
func named(log *zap.Logger, name string) *zap.Logger {
	if log == nil {
		return zap.NewNop()
	}
	return log.Named(name)
}
