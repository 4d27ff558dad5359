package mongo_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// benchHeader is a typical header set of one side of an exchange.
var benchHeader = domain.Header{
	"Accept": {"application/json"}, "Accept-Encoding": {"gzip, br"}, "Authorization": {"***************"},
	"Cache-Control": {"no-cache"}, "Content-Type": {"application/json"}, "Host": {"api.example.com"},
	"User-Agent": {"example-sdk/1.2.3 go1.26"}, "X-Request-Id": {"5f0c7d3e-8a61-4f0e-9d0b-2f4a6c1b9e77"},
}

// benchMessage is a message with typical headers and 1 KiB bodies.
func benchMessage(tb testing.TB, now time.Time) domain.Message {
	return conformance.NewMessage(tb, scope, now, func(m *domain.Message) {
		m.Request = domain.Content{Header: benchHeader, Body: strings.Repeat("x", 1024), ContentType: "text/plain"}
		m.Response = domain.Content{Header: benchHeader, Body: strings.Repeat("y", 1024), ContentType: "text/plain"}
	})
}

// BenchmarkAppend stores batches of the sizes group commit produces; ns/op over
// the batch size is the cost per message, client-side encoding included.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{1, 64, 500} {
		b.Run("batch="+strconv.Itoa(size), func(b *testing.B) {
			uri, db := mongotest.NewDatabase(b)
			s, err := mongo.New(b.Context(), mongo.Config{URI: uri, Database: db})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close(context.Background()) })
			now := time.Now()
			batch := make([]domain.Message, size)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for i := range batch {
					batch[i] = benchMessage(b, now)
				}
				b.StartTimer()
				if err := s.Append(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
