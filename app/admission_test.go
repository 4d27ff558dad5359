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

// admitAsync admits in the background; the result arrives on the channel.
func admitAsync(in *app.Ingester, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() {
		admitted, err := in.Admit(ctx, acmeLive)
		if err == nil {
			admitted.Release()
		}
		done <- err
	}()
	return done
}

func TestAdmissionRefusesBeyondTheWaitingRoomAtOnce(t *testing.T) {
	in := limitedIngester(&recordingStore{}, 1, 1)
	held, err := in.Admit(context.Background(), acmeLive)
	if err != nil {
		t.Fatal(err)
	}
	// Two wait for the one decoder, with room for one: the other is refused at once.
	first, second := admitAsync(in, context.Background()), admitAsync(in, context.Background())
	var waiting <-chan error
	select {
	case err = <-first:
		waiting = second
	case err = <-second:
		waiting = first
	}
	if !errors.Is(err, ports.ErrOverloaded) {
		t.Fatalf("Admit with the decoder busy and the waiting room full: %v, want ErrOverloaded", err)
	}
	select {
	case err := <-waiting:
		t.Fatalf("the waiter was answered (%v) while the only decoder is held", err)
	default:
	}
	held.Release()
	if err := <-waiting; err != nil {
		t.Fatalf("the waiter got %v after the decoder was released, want admission", err)
	}
}

func TestAdmissionWaitEndsWithTheContext(t *testing.T) {
	in := limitedIngester(&recordingStore{}, 1, 10)
	held, err := in.Admit(context.Background(), acmeLive)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := context.WithCancel(context.Background())
	waiter := admitAsync(in, ctx)
	cancel()
	if err := <-waiter; !errors.Is(err, ports.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Admit after its context ended: %v, want ErrUnavailable and context.Canceled", err)
	}
}

func TestSubmitGivesTheDecoderBackBeforeTheStoreAnswers(t *testing.T) {
	store := &recordingStore{block: make(chan struct{})}
	in := limitedIngester(store, 1, 0)
	result := make(chan error, 1)
	go func() {
		_, err := in.Submit(context.Background(), acmeLive, []byte(submitted), "")
		result <- err
	}()
	// The one decoder frees up while the first submission still waits for the store.
	deadline := time.Now().Add(10 * time.Second)
	for {
		admitted, err := in.Admit(context.Background(), acmeLive)
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

func TestReleaseTwiceFreesOneDecoder(t *testing.T) {
	in := limitedIngester(&recordingStore{}, 1, 0)
	first, err := in.Admit(context.Background(), acmeLive)
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	first.Release()
	second, err := in.Admit(context.Background(), acmeLive)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	if _, err := in.Admit(context.Background(), acmeLive); !errors.Is(err, ports.ErrOverloaded) {
		t.Fatalf("a second Admit with one decoder held: %v, want ErrOverloaded", err)
	}
}

func TestNoDecoderLimit(t *testing.T) {
	in := limitedIngester(&recordingStore{}, 0, 0)
	for range 100 {
		if _, err := in.Admit(context.Background(), acmeLive); err != nil {
			t.Fatalf("Admit without a limit: %v", err)
		}
	}
}

func TestAdmitRefusesReadOnlyPrincipals(t *testing.T) {
	reader := acmeLive
	reader.ReadOnly = true
	if _, err := newIngester(&recordingStore{}).Admit(context.Background(), reader); !errors.Is(err, ports.ErrForbidden) {
		t.Fatalf("Admit of a read-only principal: %v, want ErrForbidden", err)
	}
}
