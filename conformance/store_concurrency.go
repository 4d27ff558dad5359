package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func testConcurrentWritersAndReaders(t *testing.T, s ports.MessageStore) {
	const writers, batches, perBatch, readers = 8, 50, 3, 3
	f := newFixtures(t)
	// All messages are built up front, so readers can look any of them up.
	ties := []time.Time{f.ago(time.Hour), f.ago(90 * time.Minute), f.ago(2 * time.Hour)}
	plan := make([][][]domain.Message, writers)
	byID := map[string]domain.Message{}
	var all []domain.Message
	for w := range plan {
		plan[w] = make([][]domain.Message, batches)
		for b := range plan[w] {
			for i := range perBatch {
				created := f.ago(rand.N(3 * time.Hour))
				if i == 0 {
					created = ties[rand.N(len(ties))]
				}
				m := f.message(scopeLive, created, func(m *domain.Message) { m.Name = fmt.Sprintf("writer-%d", w) })
				plan[w][b] = append(plan[w][b], m)
				byID[m.ID] = m
				all = append(all, m)
			}
		}
	}

	var (
		mu       sync.Mutex
		appended []domain.Message // acknowledged by Append
	)
	stop := make(chan struct{})
	var writing, reading sync.WaitGroup
	for w := range writers {
		writing.Go(func() {
			for _, batch := range plan[w] {
				if err := s.Append(t.Context(), cloneAll(batch)); err != nil {
					t.Errorf("writer %d: Append: %v", w, err)
					return
				}
				mu.Lock()
				appended = append(appended, batch...)
				mu.Unlock()
			}
		})
	}
	for r := range readers {
		reading.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := readOnce(t, s, f.now(), n, r, byID, &mu, &appended); err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
			}
		})
	}
	writing.Wait()
	close(stop)
	reading.Wait()
	if t.Failed() {
		return
	}
	waitForStored(t, s, f.now(), all)
	want := expectedPage(all, domain.Query{Scope: scopeLive}, f.now())
	assertMessages(t, fmt.Sprintf("List after %d writers appended %d batches each", writers, batches),
		want, listAll(t, s, scopeLive, domain.Filter{}, domain.MaxLimit, f.now()))
}

// readOnce lists a page (every other time filtered to one writer) and gets an
// acknowledged message. What it reads must be exactly what was appended; a store
// without read lag must find every acknowledged message.
func readOnce(t *testing.T, s ports.MessageStore, now time.Time, n, reader int, byID map[string]domain.Message, mu *sync.Mutex, appended *[]domain.Message) error {
	q := domain.Query{Scope: scopeLive, Limit: 20}
	if n%2 == 1 {
		q.Filter.Name = fmt.Sprintf("writer-%d", (n+reader)%8)
	}
	page, err := s.List(t.Context(), q, now)
	if err != nil {
		return fmt.Errorf("List: %w", err)
	}
	if err := checkPage(q, page, now); err != nil {
		return fmt.Errorf("List(%s): %w", describeQuery(q), err)
	}
	for _, got := range page.Messages {
		want, ok := byID[got.ID]
		if !ok {
			return fmt.Errorf("List returned %s, which nobody appended", got.ID)
		}
		if diff := messageDiff(want, got); len(diff) > 0 {
			return fmt.Errorf("List returned %s unlike what was appended: %v", got.ID, diff)
		}
	}
	mu.Lock()
	count := len(*appended)
	var m domain.Message
	if count > 0 {
		m = (*appended)[rand.N(count)]
	}
	mu.Unlock()
	if count == 0 {
		return nil
	}
	got, err := s.Get(t.Context(), scopeLive, m.ID, now)
	switch {
	case errors.Is(err, ports.ErrNotFound) && s.ReadLag() > 0:
		return nil // not searchable yet
	case err != nil:
		return fmt.Errorf("Get(%q) of an acknowledged message: %w", m.ID, err)
	}
	if diff := messageDiff(m, got); len(diff) > 0 {
		return fmt.Errorf("Get(%q) unlike what was appended: %v", m.ID, diff)
	}
	return nil
}
