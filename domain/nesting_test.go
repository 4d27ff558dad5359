package domain

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// hostileBodies are 5 MiB documents nested far beyond MaxNesting.
func hostileBodies() map[string][]byte {
	const size = 5 << 20
	return map[string][]byte{
		"arrays":  []byte(strings.Repeat("[", size)),
		"objects": []byte(strings.Repeat(`{"a":`, size/5)),
		"closed":  []byte(strings.Repeat("[", MaxNesting+1) + strings.Repeat("]", MaxNesting+1)),
	}
}

func TestDeepNestingIsRefusedBeforeDecoding(t *testing.T) {
	p := DefaultPolicy()
	validator := p.Validator() // as the server validates
	for name, body := range hostileBodies() {
		var err error
		allocs := testing.AllocsPerRun(1, func() { _, err = validator.parse(body, testNow) })
		var invalid *ValidationError
		if !errors.As(err, &invalid) || !strings.Contains(invalid.Message, fmt.Sprint(MaxNesting)) {
			t.Errorf("%s: %v, want a ValidationError stating the depth limit", name, err)
		}
		// A handful for the error itself: nothing grows with the body.
		if allocs > 10 {
			t.Errorf("%s: %v allocations to refuse the body", name, allocs)
		}
	}
	// The deepest legitimate body is far inside the limit.
	deepest := `{"messages":[` + validItem("request", `{"header":{"Accept":["a"]}}`) + `]}`
	if _, err := p.parse([]byte(deepest), testNow); err != nil {
		t.Errorf("envelope with header lists: %v", err)
	}
}

// BenchmarkParseSubmissionsHostile shows that refusing hostile bodies costs time
// linear in their size: compare ns/op (MB/s stays flat) across sizes.
func BenchmarkParseSubmissionsHostile(b *testing.B) {
	p := DefaultPolicy()
	for _, shape := range []struct {
		name string
		make func(size int) string
	}{
		{"nested-arrays", func(n int) string { return strings.Repeat("[", n) }},
		{"nested-objects", func(n int) string { return strings.Repeat(`{"a":`, n/5) }},
		// Valid and flat, so it passes the depth check and reaches the decoder.
		{"flat-array", func(n int) string { return "[" + strings.Repeat("0,", n/2) + "0]" }},
		{"long-name", func(n int) string { return validItem("name", `"`+strings.Repeat("x", n)+`"`) }},
	} {
		for _, size := range []int{1 << 20, 2 << 20, 4 << 20} {
			body := []byte(shape.make(size))
			b.Run(fmt.Sprintf("%s/%dMiB", shape.name, size>>20), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.parse(body, testNow); err == nil {
						b.Fatal("hostile body accepted")
					}
				}
			})
		}
	}
}
