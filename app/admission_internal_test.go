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
	second, err := a.decoder(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.decoder(ctx); err == nil {
		t.Fatal("got a second decoder of one")
	}
	second()
}
