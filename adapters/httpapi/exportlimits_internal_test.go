package httpapi

import (
	"errors"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// The pace lets a reader at or above the minimum rate go on for ever, cuts one
// below it once its slack is spent, and bounds a stall after a fast start by
// Stall, not by the bytes the start read.
func TestExportPace(t *testing.T) {
	limits := ExportLimits{MinRate: 1000, Stall: 10 * time.Second}
	const chunk = 1000 // bytes: a second at the minimum rate

	steady := exportPace{limits: limits}
	for i := range 10_000 {
		if got := steady.allowance(chunk); got < limits.Stall {
			t.Fatalf("a reader at twice the minimum rate is allowed %s for write %d, less than Stall", got, i)
		}
		steady.wrote(chunk, 500*time.Millisecond)
	}

	trickle := exportPace{limits: limits}
	writes := 0
	for ; trickle.allowance(chunk) >= 2*time.Second; writes++ { // each write takes 2 s: half the rate
		trickle.wrote(chunk, 2*time.Second)
		if writes > 1000 {
			t.Fatal("a reader at half the minimum rate is never cut")
		}
	}
	// Stall's 10 s of slack, spent a second per write.
	if writes < 9 || writes > 10 {
		t.Errorf("a reader at half the minimum rate was cut after %d writes, want 9 or 10", writes)
	}

	fast := exportPace{limits: limits}
	fast.wrote(100<<20, time.Second) // 100 MiB in a second
	if got, want := fast.allowance(chunk), limits.Stall+time.Second; got != want {
		t.Errorf("after a fast start a write of %d bytes may take %s, want %s (Stall and its bytes at the rate)", chunk, got, want)
	}

	noRate := exportPace{limits: ExportLimits{Stall: 10 * time.Second}}
	noRate.wrote(1, time.Hour)
	if got := noRate.allowance(chunk); got != 10*time.Second {
		t.Errorf("without a minimum rate a write may take %s, want Stall", got)
	}
}

func TestExportLimitsValidate(t *testing.T) {
	for _, c := range []struct {
		edit  func(*ExportLimits)
		field string
	}{
		{func(*ExportLimits) {}, ""},
		{func(l *ExportLimits) { l.MinRate = 0 }, ""},
		{func(l *ExportLimits) { l.PerKey = 0 }, "Exports.PerKey"},
		{func(l *ExportLimits) { l.Total = 0 }, "Exports.Total"},
		{func(l *ExportLimits) { l.MinRate = -1 }, "Exports.MinRate"},
		{func(l *ExportLimits) { l.Stall = 0 }, "Exports.Stall"},
	} {
		cfg := DefaultConfig()
		c.edit(&cfg.Exports)
		field := ""
		var invalid *domain.ValidationError
		if err := cfg.Validate(); errors.As(err, &invalid) && len(invalid.Fields) == 1 {
			field = invalid.Fields[0].Field
		} else if err != nil {
			t.Fatalf("%+v: %v, not a refusal of one field", cfg.Exports, err)
		}
		if field != c.field {
			t.Errorf("%+v: refused %q, want %q", cfg.Exports, field, c.field)
		}
	}
}
