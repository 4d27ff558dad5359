package memory_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkAppend stores batches of the sizes group commit produces into a store
// that already holds 100,000 messages; ns/op over the batch size is the store's
// cost per message, which group commit cannot lower much for this store (one lock
// per batch is all it saves).
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{1, 64, 500} {
		b.Run("batch="+strconv.Itoa(size), func(b *testing.B) {
			s := memory.New()
			now := time.Now()
			fill := make([]domain.Message, 1000)
			for range 100 {
				for i := range fill {
					fill[i] = message(b, now.Add(-time.Duration(i)*time.Millisecond))
				}
				if err := s.Append(b.Context(), fill); err != nil {
					b.Fatal(err)
				}
			}
			batch := make([]domain.Message, size)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for i := range batch {
					batch[i] = message(b, now)
				}
				b.StartTimer()
				if err := s.Append(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
