package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/ports"
)

func limitedIngester(store *recordingStore, decoders, waiting int) *app.Ingester {
	return newIngester(store).LimitDecoding(app.AdmissionOptions{Decoders: decoders, MaxWaiting: waiting})
}

func TestAdmissionRefusesBeyondTheWaitingRoomAtOnce(t *testing.T) {
	in := limitedIngester(&recordingStore{}, 1, 1)
	first, err := in.Admit(acmeLive, app.IdempotencyKey{}, -1)
	if err != nil {
		t.Fatal(err)
	}
	second, err := in.Admit(acmeLive, app.IdempotencyKey{}, -1)
	if err != nil {
		t.Fatalf("Admit with one decoder and room for one more: %v", err)
	}
	if _, err := in.Admit(acmeLive, app.IdempotencyKey{}, -1); !errors.Is(err, ports.ErrOverloaded) {
		t.Fatalf("Admit with the decoder and the waiting room taken: %v, want ErrOverloaded", err)
	}
	first.Release()
	first.Release() // a second Release must not make room held by another
	third, err := in.Admit(acmeLive, app.IdempotencyKey{}, -1)
	if err != nil {
		t.Fatalf("Admit after a Release: %v", err)
	}
	if _, err := in.Admit(acmeLive, app.IdempotencyKey{}, -1); !errors.Is(err, ports.ErrOverloaded) {
		t.Fatalf("Admit with two admitted again: %v, want ErrOverloaded", err)
	}
	second.Release()
	third.Release()
}

func TestSubmitCountsTheSubmissionOutBeforeTheStoreAnswers(t *testing.T) {
	store := &recordingStore{block: make(chan struct{})}
	in := limitedIngester(store, 1, 0)
	result := make(chan error, 1)
	go func() {
		_, err := in.Submit(context.Background(), acmeLive, draftsOf(submitted), "")
		result <- err
	}()
	// The one place frees up while the first submission still waits for the store.
	deadline := time.Now().Add(10 * time.Second)
	for {
		admitted, err := in.Admit(acmeLive, app.IdempotencyKey{}, -1)
		if err == nil {
			admitted.Release()
			break
		}
		if !errors.Is(err, ports.ErrOverloaded) || time.Now().After(deadline) {
			t.Fatalf("Admit while a submission waits for the store: %v", err)
		}
	}
	select {
	case err := <-result:
		t.Fatalf("Submit returned (%v) before the store answered", err)
	default:
	}
	close(store.block)
	if err := <-result; err != nil {
		t.Fatal(err)
	}
}

func TestNoDecoderLimit(t *testing.T) {
	in := limitedIngester(&recordingStore{}, 0, 0)
	for range 100 {
		if _, err := in.Admit(acmeLive, app.IdempotencyKey{}, -1); err != nil {
			t.Fatalf("Admit without a limit: %v", err)
		}
	}
}

func TestAdmitRefusesReadOnlyPrincipals(t *testing.T) {
	reader := acmeLive
	reader.ReadOnly = true
	if _, err := newIngester(&recordingStore{}).Admit(reader, app.IdempotencyKey{}, -1); !errors.Is(err, ports.ErrForbidden) {
		t.Fatalf("Admit of a read-only principal: %v, want ErrForbidden", err)
	}
}
