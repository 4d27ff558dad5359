package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
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

func TestDecodingSparesACoreWhileRefusing(t *testing.T) {
	a := newAdmission(AdmissionOptions{Decoders: 3})
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	// A deadline, so that a wrongly spared core fails the test instead of hanging it.
	soon, stop := context.WithTimeout(t.Context(), 5*time.Second)
	defer stop()
	var held []func()
	takeDecoder := func(ctx context.Context) error {
		release, err := a.decoder(ctx)
		if err == nil {
			held = append(held, release)
		}
		return err
	}
	for range 3 {
		if err := takeDecoder(soon); err != nil {
			t.Fatalf("decoder %d of 3, nothing refused: %v", len(held)+1, err)
		}
	}
	for _, release := range held {
		release()
	}
	held = nil

	a.lastRefusal.Store(time.Now().Add(time.Hour).UnixNano()) // refusing, however slow the test
	for range 2 {
		if err := takeDecoder(soon); err != nil {
			t.Fatal(err)
		}
	}
	if err := takeDecoder(ended); !errors.Is(err, ports.ErrUnavailable) {
		t.Fatalf("a third decoder of 3 while refusing: %v, want to wait (a core spared)", err)
	}
	if len(a.decoders) != 2 || len(a.spared) != 2 {
		t.Fatalf("%d decoders and %d spared held after a failed wait, want 2 and 2", len(a.decoders), len(a.spared))
	}
	a.lastRefusal.Store(0) // long without refusals
	if err := takeDecoder(soon); err != nil {
		t.Fatalf("the third decoder once refusals stopped: %v", err)
	}
	for _, release := range held {
		release()
	}
	if len(a.decoders) != 0 || len(a.spared) != 0 {
		t.Errorf("%d decoders and %d spared held after every release", len(a.decoders), len(a.spared))
	}
}

type discardWriter struct{}

func (discardWriter) Append(context.Context, []domain.Message) error { return nil }

func (discardWriter) Lookup(context.Context, domain.Scope, []string) ([]domain.Message, error) {
	return nil, nil
}

func TestAQueueRefusalCountsAsRefusing(t *testing.T) {
	g := NewGroupCommitter(discardWriter{}, GroupCommitOptions{MaxQueueBytes: 10,
		Stamper: &StoredTimeStamper{Policy: domain.DefaultPolicy(), Clock: SystemClock{}}})
	in, err := NewIngesterWith(IngestPorts{Store: discardWriter{}, Queue: g, Lookup: discardWriter{}, Clock: SystemClock{}},
		domain.DefaultPolicy(), DefaultAdmissionOptions())
	if err != nil {
		t.Fatal(err)
	}
	held, err := g.Reserve(100)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Cancel()
	if in.admission.refusing() {
		t.Fatal("refusing before any refusal")
	}
	if _, err := in.Admit(domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive}}, IdempotencyKey{}, 100); !errors.Is(err, ports.ErrOverloaded) {
		t.Fatalf("Admit behind a full queue: %v, want ErrOverloaded", err)
	}
	if !in.admission.refusing() {
		t.Error("not refusing right after the queue refused a submission")
	}
}
