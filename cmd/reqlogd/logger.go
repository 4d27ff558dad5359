package main

import (
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the service's logger from REQLOG_LOG_LEVEL and
// REQLOG_LOG_FORMAT; it writes to standard error.
func newLogger(cfg config) *zap.Logger {
	encoderCfg := zap.NewProductionEncoderConfig()
	encoderCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var encoder zapcore.Encoder
	if cfg.LogFormat == logFormatConsole {
		encoderCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		encoder = zapcore.NewConsoleEncoder(encoderCfg)
	} else {
		encoder = zapcore.NewJSONEncoder(encoderCfg)
	}
	core := zapcore.NewCore(encoder, zapcore.Lock(os.Stderr), cfg.LogLevel)
	// No automatic stack traces: fx's would show its own internals; panics log theirs.
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(os.Stderr)))
}
