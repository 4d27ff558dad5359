package app

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// CheckReadLag refuses a visibility delay shorter than the store's read lag: a
// message could then become visible before reads can find it.
func CheckReadLag(policy domain.Policy, store ports.MessageStore) error {
	if lag := store.ReadLag(); policy.VisibilityDelay < lag {
		return &ConfigError{
			Setting: "REQLOG_VISIBILITY_DELAY",
			Value:   formatDuration(policy.VisibilityDelay),
			Reason:  fmt.Sprintf("must be at least the store's read lag of %s", formatDuration(lag)),
		}
	}
	return nil
}

// NewLogger builds the service's logger from REQLOG_LOG_LEVEL and
// REQLOG_LOG_FORMAT; it writes to standard error.
func NewLogger(cfg Config) *zap.Logger {
	encoderCfg := zap.NewProductionEncoderConfig()
	encoderCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var encoder zapcore.Encoder
	if cfg.LogFormat == LogFormatConsole {
		encoderCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		encoder = zapcore.NewConsoleEncoder(encoderCfg)
	} else {
		encoder = zapcore.NewJSONEncoder(encoderCfg)
	}
	core := zapcore.NewCore(encoder, zapcore.Lock(os.Stderr), cfg.LogLevel)
	// No automatic stack traces: fx's would show its own internals; panics log theirs.
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(os.Stderr)))
}
