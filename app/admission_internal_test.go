package app

import (
	"context"
	"errors"
	"testing"

	"github.com/reqlog/reqlog/ports"
)

func TestDecoderWaitEndsWithTheContext(t *testing.T) {
	a := newAdmission(AdmissionOptions{Decoders: 1})
	release, err := a.decoder(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.decoder(ctx); !errors.Is(err, ports.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting for the only decoder with an ended context: %v, want ErrUnavailable and context.Canceled", err)
	}
	release()
	release() // a second release must not free a decoder held by another
	if len(a.decoders) != 0 {
		t.Fatalf("%d decoders held after release", len(a.decoders))
	}
	second, err := a.decoder(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.decoder(ctx); err == nil {
		t.Fatal("got a second decoder of one")
	}
	second()
}

func TestAdmissionBoundsTheBytesBeingRead(t *testing.T) {
	a := newAdmission(AdmissionOptions{Decoders: 1, MaxWaiting: 10, MaxBytes: 1000})
	refused := func(bodyBytes int64, why string) {
		t.Helper()
		if _, err := a.admit(bodyBytes); !errors.Is(err, ports.ErrOverloaded) {
			t.Fatalf("admit %d bytes %s: %v, want ErrOverloaded", bodyBytes, why, err)
		}
	}
	big, err := a.admit(5000)
	if err != nil {
		t.Fatalf("admit 5000 bytes of 1000 with nothing admitted: %v", err)
	}
	refused(0, "behind 5000 of 1000")
	big.bodyRead(300) // the chunked body turned out short
	second, err := a.admit(700)
	if err != nil {
		t.Fatalf("admit 700 bytes beside 300 of 1000: %v", err)
	}
	refused(1, "with 1000 of 1000 admitted")
	big.leave()
	big.leave() // a second leave must not count out another's bytes
	big.bodyRead(0)
	third, err := a.admit(300)
	if err != nil {
		t.Fatalf("admit 300 bytes beside 700 of 1000: %v", err)
	}
	refused(1, "with 1000 of 1000 admitted again")
	second.leave()
	third.leave()
	if a.admitted != 0 || a.bytes != 0 {
		t.Errorf("%d submissions, %d bytes counted once all left", a.admitted, a.bytes)
	}
}
