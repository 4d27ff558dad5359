//go:build unix

package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/domain"
)

// hostileSearches are qs that are not ASCII, chosen to be slow: U+FFFD (which
// strings.ToLower also makes of every invalid byte), CJK, combining marks,
// runes whose lower case is ASCII or changes length in UTF-8, and the longest q
// allowed. None is found in the generated traffic.
var hostileSearches = []struct{ name, q string }{
	{"U+FFFD zz", "\uFFFDzz"},
	{"U+FFFD then e", "\uFFFDe"},
	{"e then U+FFFD", "e\uFFFD"},
	{"U+FFFD inside", "st\uFFFDtus"},
	{"CJK", "日本語"},
	{"combining acute", "e\u0301"},
	{"dotted capital I", "İstanbul"},
	{"capital sharp s", "STRAẞE"},
	{"Kelvin sign", "\u212Aelvin"},
	{"200 runes, U+FFFD and a", strings.Repeat("\uFFFDa", domain.MaxSearchLength/2)},
	{"200 runes, dotted capital I", strings.Repeat("İ", domain.MaxSearchLength)},
}

// asciiTwin is the ASCII q of the same length in runes that a hostile q is
// measured against: each rune beyond ASCII becomes its ASCII lower case if it
// has one (İ is i, the Kelvin sign k), else ~, which the generated traffic
// never holds, so the twin is as cheap as an ASCII q gets: its rarest byte is
// found nowhere.
func asciiTwin(q string) string {
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf {
			return r
		}
		if l := unicode.ToLower(r); l < utf8.RuneSelf {
			return l
		}
		return '~'
	}, q)
}

// searchedMessages are n messages of the load tool's mix, as the service
// stores them (validated, masked, redacted).
func searchedMessages(tb testing.TB, n int) []domain.Message {
	tb.Helper()
	now := time.Now()
	validator := servicePolicy().Validator()
	gen := newGenerator(11)
	msgs := make([]domain.Message, n)
	for i := range msgs {
		batch, err := httpapi.ParseSubmissions(validator, body([]submission{gen.submission(now)}), now)
		if err != nil {
			tb.Fatal(err)
		}
		s := batch.Submissions[0]
		msgs[i] = domain.Message{Path: s.Path, Request: s.Request, Response: s.Response}
	}
	return msgs
}

// BenchmarkHostileSearch runs each hostile q and its ASCII twin over the same
// messages, alternating, and reports the CPU time of each per message and their
// ratio (CPU time, not wall time: the machine is shared): no q may cost more
// than twice its twin. "Matches" searches each text of a message, as a store
// of domain.Message values does; "joined" first rules a message out with one
// scan of its texts joined (Search.CouldBeIn), as a store of records does.
//
//	go test ./cmd/reqlog-bench -run '^$' -bench HostileSearch -benchtime 20x -count 5
func BenchmarkHostileSearch(b *testing.B) {
	msgs := searchedMessages(b, 2000)
	joined := make([]string, len(msgs))
	var bytes int64
	for i, m := range msgs {
		var texts []string
		domain.SearchedTexts(m, func(s string) bool { texts = append(texts, s); return true })
		joined[i] = strings.Join(texts, "\x00")
		bytes += int64(len(joined[i]))
	}
	ways := []struct {
		name  string
		found func(s domain.Search, i int) bool
	}{
		{"Matches", func(s domain.Search, i int) bool { return s.Matches(msgs[i]) }},
		{"joined", func(s domain.Search, i int) bool { return s.CouldBeIn(joined[i]) && s.Matches(msgs[i]) }},
	}
	for _, way := range ways {
		scan := func(s domain.Search) time.Duration {
			began := selfCPU()
			for i := range msgs {
				if way.found(s, i) {
					b.Fatalf("found in %+v", msgs[i])
				}
			}
			return selfCPU() - began
		}
		for _, c := range hostileSearches {
			hostile, twin := domain.NewSearch(c.q), domain.NewSearch(asciiTwin(c.q))
			b.Run(way.name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(bytes)
				var spentHostile, spentTwin time.Duration
				for b.Loop() {
					spentTwin += scan(twin)
					spentHostile += scan(hostile)
				}
				perMessage := float64(b.N * len(msgs))
				b.ReportMetric(float64(spentHostile.Nanoseconds())/perMessage, "cpu-ns/msg")
				b.ReportMetric(float64(spentTwin.Nanoseconds())/perMessage, "ascii-cpu-ns/msg")
				b.ReportMetric(float64(spentHostile)/float64(spentTwin), "ratio")
			})
		}
	}
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
