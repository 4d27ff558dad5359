package dayfile

import (
	"fmt"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// BenchmarkAppendSubjects is the store's share of issue 38's subject keys:
// batches of 30 messages, with their words, appended to a day file without
// subject hashes and with three a message (one shared, one of 10 values,
// one of 640, as BenchmarkIngestSubjectKeys's header, address and e-mail
// addresses), an op a batch, 20,000 messages a run at -benchtime 667x. It
// reports CPU microseconds a message (the process's: pin it to one core).
func BenchmarkAppendSubjects(b *testing.B) {
	for _, keys := range []int{0, 3} {
		b.Run(fmt.Sprintf("subjects=%d", keys), func(b *testing.B) {
			d, err := Open(b.Context(), Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			now := time.Now()
			f, err := d.Acquire(b.Context(), Part{Day: DayOf(now)}, true)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Release()
			const batch = 30
			msgs := make([]domain.Message, batch)
			cpu := processCPU(b)
			b.ResetTimer()
			for op := range b.N {
				for i := range msgs {
					k := op*batch + i
					msgs[i] = domain.Message{ID: fmt.Sprintf("0190a0b0-c0d0-7e0f-8a0b-%012d", k), Account: "acme", Domain: domain.DomainLive,
						Name: "shop", Method: "POST", Path: fmt.Sprintf("/orders/%d", k%500), StatusCode: 200, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
						Request: domain.Content{Header: domain.Header{"Content-Type": {"application/json"}},
							Body: fmt.Sprintf(`{"customer":"c-%d","email":"user%d@example.com","items":[{"sku":"sku-%d","qty":%d}],"note":"deliver before noon"}`, k%640, k%640, k%97, k%5)},
						Response: domain.Content{Header: domain.Header{}, Body: fmt.Sprintf(`{"order":"o-%d","status":"accepted"}`, k)}}
					if keys > 0 {
						msgs[i].Subjects = []string{"5d41402abc4b2a76b9719d911017c592", fmt.Sprintf("%032x", 1<<40+k%10), fmt.Sprintf("%032x", k%640*7919)}
					}
				}
				if err := f.Append(b.Context(), msgs, true); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N*batch), "cpu-µs/msg")
		})
	}
}
