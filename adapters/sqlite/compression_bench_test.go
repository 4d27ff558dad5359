package sqlite_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkCompression measures the day file layouts against each other on
// the load tool's traffic (REQLOG_BENCH_CORPUS: a file of `reqlog-bench
// -n N generate`), in one run: headers and bodies as text (the layout
// before schema version 7) or compressed per row, at pages of 4, 8 and 16
// KiB, with the day file's dictionary (schema version 11) or without;
// and, on the same messages' texts, the codec alone: one frame per
// row at two levels against dictionaries trained on the day's first
// messages or on each application's. Each layout reports disk, ingest CPU
// (Append in batches of 500), export CPU (pages of 1,000) and Get CPU, per
// message; the codec, bytes and CPU per message.
//
//	go run ./cmd/reqlog-bench -n 30000 generate > /tmp/corpus.jsonl
//	REQLOG_BENCH_CORPUS=/tmp/corpus.jsonl taskset -c 1 go test -run '^$' -bench Compression -benchtime 1x ./adapters/sqlite/
func BenchmarkCompression(b *testing.B) {
	msgs := corpusMessages(b)
	layouts := []struct {
		name   string
		layout dayfile.Layout
	}{
		{"text/page=4KiB", dayfile.Layout{Plain: true, PageSize: 4096}},
		{"zstd/page=4KiB", dayfile.Layout{PageSize: 4096, NoDictionary: true}},
		{"zstd/page=8KiB", dayfile.Layout{PageSize: 8192, NoDictionary: true}},
		{"zstd/page=16KiB", dayfile.Layout{PageSize: 16384, NoDictionary: true}},
		{"zstd-dict/page=16KiB", dayfile.Layout{PageSize: 16384}},
		{"zstd-dict/page=32KiB", dayfile.Layout{PageSize: 32768}},
	}
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) {
			for range b.N {
				measureLayout(b, l.layout, msgs)
			}
		})
	}
	b.Run("codec", func(b *testing.B) { measureCodecs(b, msgs) })
}

// corpusMessages parses the submissions of the corpus REQLOG_BENCH_CORPUS
// names as the service does; without one it skips the benchmark.
func corpusMessages(b *testing.B) []domain.Message {
	b.Helper()
	path := os.Getenv("REQLOG_BENCH_CORPUS")
	if path == "" {
		b.Skip("REQLOG_BENCH_CORPUS names no corpus: reqlog-bench -n 30000 generate > corpus.jsonl")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	policy := domain.DefaultPolicy()
	now := time.Now()
	var msgs []domain.Message
	lines := bufio.NewScanner(bytes.NewReader(raw))
	lines.Buffer(nil, 1<<20)
	var batch [][]byte
	parse := func() {
		parsed, err := httpapi.ParseSubmissions(policy.Validator(), append(append([]byte{'['}, bytes.Join(batch, []byte{','})...), ']'), now)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range parsed.Submissions {
			id, err := domain.NewIdentity()
			if err != nil {
				b.Fatal(err)
			}
			msgs = append(msgs, policy.NewMessage(scope, s, id, now))
		}
		batch = batch[:0]
	}
	for lines.Scan() {
		batch = append(batch, bytes.Clone(lines.Bytes()))
		if len(batch) == 100 {
			parse()
		}
	}
	if len(batch) > 0 {
		parse()
	}
	if err := lines.Err(); err != nil {
		b.Fatal(err)
	}
	return msgs
}

// measureLayout stores msgs in a new directory laid out as layout, then
// reads them all back as an export does and 2,000 of them by id.
func measureLayout(b *testing.B, layout dayfile.Layout, msgs []domain.Message) {
	dir := b.TempDir()
	s, err := sqlite.NewWithLayout(b.Context(), sqlite.Config{Dir: dir}, layout)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	n := float64(len(msgs))
	cpu := cpuTime(b)
	for i := 0; i < len(msgs); i += 500 {
		if err := s.Append(b.Context(), msgs[i:min(i+500, len(msgs))]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/n, "ingest-cpu-µs/msg")

	now := time.Now().Add(time.Hour)
	cpu = cpuTime(b)
	if read := listAll(b, s, domain.Query{Scope: scope, Limit: 1000}, now, nil); read != len(msgs) {
		b.Fatalf("the export read %d messages of %d", read, len(msgs))
	}
	b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/n/1000, "export-cpu-µs/msg")

	const gets = 2000
	rng := rand.New(rand.NewPCG(1, 2))
	cpu = cpuTime(b)
	for range gets {
		if _, err := s.Get(b.Context(), scope, msgs[rng.IntN(len(msgs))].ID, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/gets, "get-cpu-µs")
	if err := s.Close(); err != nil { // checkpoints the WAL into the files
		b.Fatal(err)
	}
	b.ReportMetric(float64(diskBytes(b, dir))/n, "disk-B/msg")
}

// payloadOf is what a row compresses of m: its headers as stored and its
// bodies, one after the other.
func payloadOf(b *testing.B, m domain.Message) []byte {
	reqHeader, err := json.Marshal(m.Request.Header)
	if err != nil {
		b.Fatal(err)
	}
	respHeader, err := json.Marshal(m.Response.Header)
	if err != nil {
		b.Fatal(err)
	}
	return append(append(append(reqHeader, m.Request.Body...), respHeader...), m.Response.Body...)
}

// measureCodecs compresses each message's texts alone with each codec,
// after the first 2,000 (which train the dictionaries), and reports bytes,
// compression and decompression CPU per message.
func measureCodecs(b *testing.B, msgs []domain.Message) {
	const trainOn = 2000
	if len(msgs) <= 2*trainOn {
		b.Skipf("the corpus holds %d messages; the codecs want more than %d", len(msgs), 2*trainOn)
	}
	payloads := make([][]byte, len(msgs))
	byApp := map[string][][]byte{}
	for i, m := range msgs {
		payloads[i] = payloadOf(b, m)
		if i < trainOn {
			byApp[m.Name] = append(byApp[m.Name], payloads[i])
		}
	}
	type codec struct {
		name  string
		enc   func(app string) *zstd.Encoder
		dec   *zstd.Decoder
		train time.Duration // the CPU its dictionaries took to train
	}
	plain := func(level zstd.EncoderLevel) codec {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1))
		if err != nil {
			b.Fatal(err)
		}
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		if err != nil {
			b.Fatal(err)
		}
		return codec{name: "row/" + level.String(), enc: func(string) *zstd.Encoder { return enc }, dec: dec}
	}
	trained := func(name string, samples map[string][][]byte, level zstd.EncoderLevel) codec {
		cpu := cpuTime(b)
		encs, dicts := map[string]*zstd.Encoder{}, [][]byte{}
		id := uint32(1)
		for app, sample := range samples {
			d, err := dict.BuildZstdDict(sample, dict.Options{MaxDictSize: 64 << 10, HashBytes: 6, ZstdDictID: id, ZstdLevel: level})
			if err != nil {
				b.Fatal(err)
			}
			id++
			if encs[app], err = zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1), zstd.WithEncoderDict(d)); err != nil {
				b.Fatal(err)
			}
			dicts = append(dicts, d)
		}
		train := cpuTime(b) - cpu
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderDicts(dicts...))
		if err != nil {
			b.Fatal(err)
		}
		return codec{name: name, enc: func(app string) *zstd.Encoder {
			if e, ok := encs[app]; ok {
				return e
			}
			return encs[""]
		}, dec: dec, train: train}
	}
	codecs := []codec{
		plain(zstd.SpeedFastest),
		plain(zstd.SpeedDefault),
		trained("dict-day/"+zstd.SpeedFastest.String(), map[string][][]byte{"": payloads[:trainOn]}, zstd.SpeedFastest),
		trained("dict-app/"+zstd.SpeedFastest.String(), byApp, zstd.SpeedFastest),
	}
	tested, apps := payloads[trainOn:], msgs[trainOn:]
	n := float64(len(tested))
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			frames := make([][]byte, len(tested))
			var size int
			cpu := cpuTime(b)
			for i, p := range tested {
				frames[i] = c.enc(apps[i].Name).EncodeAll(p, nil)
				size += len(frames[i])
			}
			encCPU := cpuTime(b) - cpu
			cpu = cpuTime(b)
			var out []byte
			for i, f := range frames {
				var err error
				if out, err = c.dec.DecodeAll(f, out[:0]); err != nil || !bytes.Equal(out, tested[i]) {
					b.Fatalf("frame %d does not read back: %v", i, err)
				}
			}
			decCPU := cpuTime(b) - cpu
			b.ReportMetric(float64(size)/n, "B/msg")
			b.ReportMetric(float64(encCPU.Nanoseconds())/n/1000, "enc-cpu-µs/msg")
			b.ReportMetric(float64(decCPU.Nanoseconds())/n/1000, "dec-cpu-µs/msg")
			b.ReportMetric(float64(c.train.Milliseconds()), "train-cpu-ms")
		})
	}
	b.Run("none", func(b *testing.B) {
		var raw int
		for _, p := range tested {
			raw += len(p)
		}
		b.ReportMetric(float64(raw)/n, "B/msg")
	})
}
