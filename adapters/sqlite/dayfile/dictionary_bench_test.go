package dayfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"

	"github.com/reqlog/reqlog/domain"
)

// corpusTexts reads the headers (as a row stores them) and bodies of the
// submissions of REQLOG_BENCH_CORPUS (reqlog-bench -n N generate).
func corpusTexts(b *testing.B) []texts {
	b.Helper()
	path := os.Getenv("REQLOG_BENCH_CORPUS")
	if path == "" {
		b.Skip("REQLOG_BENCH_CORPUS names no corpus: reqlog-bench -n 30000 generate > corpus.jsonl")
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	type side struct {
		Header map[string]json.RawMessage `json:"header"`
		Body   string                     `json:"body"`
	}
	var out []texts
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 16<<20)
	for lines.Scan() {
		var s struct{ Request, Response side }
		if err := json.Unmarshal(lines.Bytes(), &s); err != nil {
			b.Fatal(err)
		}
		header := func(h map[string]json.RawMessage) []byte {
			d := domain.Header{}
			for k, v := range h {
				var one string
				var many []string
				if json.Unmarshal(v, &one) == nil {
					many = []string{one}
				} else if err := json.Unmarshal(v, &many); err != nil {
					b.Fatal(err)
				}
				d[k] = many
			}
			raw, _ := json.Marshal(d)
			return raw
		}
		out = append(out, texts{header(s.Request.Header), []byte(s.Request.Body), header(s.Response.Header), []byte(s.Response.Body)})
	}
	return out
}

func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func joined(t texts) []byte {
	return bytes.Join([][]byte{t.requestHeader, t.requestBody, t.responseHeader, t.responseBody}, nil)
}

func skeletonOf(t texts) []byte {
	var s []byte
	for _, part := range [][]byte{t.requestHeader, t.requestBody, t.responseHeader, t.responseBody} {
		s = appendSkeleton(s, part)
	}
	return s
}

// BenchmarkDictionaries compares, on the corpus's texts after the first
// 2,000 (which train the dictionaries), one frame per row without a
// dictionary against dictionaries trained on the first messages whole or
// on their skeletons (appendSkeleton), at two levels, and the headers and
// the bodies in two frames.
//
//	REQLOG_BENCH_CORPUS=/tmp/corpus.jsonl taskset -c 1 go test -run '^$' -bench Dictionaries -benchtime 1x ./adapters/sqlite/dayfile/
func BenchmarkDictionaries(b *testing.B) {
	const trainOn = 2000
	all := corpusTexts(b)
	if len(all) <= 2*trainOn {
		b.Skipf("the corpus holds %d messages", len(all))
	}
	train, tested := all[:trainOn], all[trainOn:]
	build := func(samples [][]byte, size int, level zstd.EncoderLevel) ([]byte, time.Duration) {
		cpu := processCPU(b)
		d, err := dict.BuildZstdDict(samples, dict.Options{MaxDictSize: size, HashBytes: 6, ZstdDictID: 7, ZstdLevel: level})
		if err != nil {
			b.Fatal(err)
		}
		return d, processCPU(b) - cpu
	}
	var whole, skeletons [][]byte
	for _, t := range train {
		whole = append(whole, joined(t))
		skeletons = append(skeletons, skeletonOf(t))
	}
	type variant struct {
		name  string
		level zstd.EncoderLevel
		dict  func() ([]byte, time.Duration)
		raw   bool
		split bool
	}
	rawOf := func(samples [][]byte, limit int) ([]byte, time.Duration) {
		cpu := processCPU(b)
		seen := map[string]bool{}
		var content []byte
		for i := len(samples) - 1; i >= 0 && len(content)+len(samples[i]) <= limit; i-- {
			if !seen[string(samples[i])] {
				seen[string(samples[i])] = true
				content = append(samples[i][:len(samples[i]):len(samples[i])], content...)
			}
		}
		return content, processCPU(b) - cpu
	}
	variants := []variant{
		{name: "row", level: zstd.SpeedFastest},
		{name: "row", level: zstd.SpeedDefault},
		{name: "row-split", level: zstd.SpeedFastest, split: true},
		{name: "dict-whole-64KiB", level: zstd.SpeedFastest, dict: func() ([]byte, time.Duration) { return build(whole, 64<<10, zstd.SpeedFastest) }},
		{name: "dict-skeleton-16KiB", level: zstd.SpeedFastest, dict: func() ([]byte, time.Duration) { return build(skeletons, 16<<10, zstd.SpeedFastest) }},
		{name: "dict-skeleton-64KiB", level: zstd.SpeedFastest, dict: func() ([]byte, time.Duration) { return build(skeletons, 64<<10, zstd.SpeedFastest) }},
		{name: "dict-skeleton-64KiB", level: zstd.SpeedDefault, dict: func() ([]byte, time.Duration) { return build(skeletons, 64<<10, zstd.SpeedDefault) }},
		{name: "dict-skeleton200-64KiB", level: zstd.SpeedFastest, dict: func() ([]byte, time.Duration) { return build(skeletons[:200], 64<<10, zstd.SpeedFastest) }},
		{name: "raw-skeleton-64KiB", level: zstd.SpeedFastest, raw: true, dict: func() ([]byte, time.Duration) { return rawOf(skeletons, 64<<10) }},
		{name: "raw-skeleton200-64KiB", level: zstd.SpeedFastest, raw: true, dict: func() ([]byte, time.Duration) { return rawOf(skeletons[:200], 64<<10) }},
		{name: "raw-skeleton200-32KiB", level: zstd.SpeedFastest, raw: true, dict: func() ([]byte, time.Duration) { return rawOf(skeletons[:200], 32<<10) }},
		{name: "raw-skeleton200-16KiB", level: zstd.SpeedFastest, raw: true, dict: func() ([]byte, time.Duration) { return rawOf(skeletons[:200], 16<<10) }},
		{name: "raw-skeleton200-8KiB", level: zstd.SpeedFastest, raw: true, dict: func() ([]byte, time.Duration) { return rawOf(skeletons[:200], 8<<10) }},
		{name: "dict-skeleton-64KiB-split", level: zstd.SpeedFastest, split: true, dict: func() ([]byte, time.Duration) { return build(skeletons, 64<<10, zstd.SpeedFastest) }},
	}
	n := float64(len(tested))
	for _, v := range variants {
		b.Run(v.name+"/"+v.level.String(), func(b *testing.B) {
			encOpts := []zstd.EOption{zstd.WithEncoderLevel(v.level), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true)}
			decOpts := []zstd.DOption{zstd.WithDecoderConcurrency(1)}
			var training time.Duration
			if v.dict != nil {
				var d []byte
				d, training = v.dict()
				if v.raw {
					encOpts = append(encOpts, zstd.WithEncoderDictRaw(7, d))
					decOpts = append(decOpts, zstd.WithDecoderDictRaw(7, d))
				} else {
					encOpts = append(encOpts, zstd.WithEncoderDict(d))
					decOpts = append(decOpts, zstd.WithDecoderDicts(d))
				}
				b.ReportMetric(float64(len(d)), "dict-B")
			}
			enc, err := zstd.NewWriter(nil, encOpts...)
			if err != nil {
				b.Fatal(err)
			}
			dec, err := zstd.NewReader(nil, decOpts...)
			if err != nil {
				b.Fatal(err)
			}
			frames := make([][][]byte, len(tested))
			size := 0
			cpu := processCPU(b)
			for i, t := range tested {
				parts := [][]byte{joined(t)}
				if v.split {
					parts = [][]byte{append(bytes.Clone(t.requestHeader), t.responseHeader...), append(bytes.Clone(t.requestBody), t.responseBody...)}
				}
				for _, p := range parts {
					f := enc.EncodeAll(p, nil)
					frames[i] = append(frames[i], f)
					size += len(f)
				}
			}
			encCPU := processCPU(b) - cpu
			cpu = processCPU(b)
			var out []byte
			for _, fs := range frames {
				for _, f := range fs {
					if out, err = dec.DecodeAll(f, out[:0]); err != nil {
						b.Fatal(err)
					}
				}
			}
			decCPU := processCPU(b) - cpu
			b.ReportMetric(float64(size)/n, "B/msg")
			b.ReportMetric(float64(encCPU.Nanoseconds())/n/1000, "enc-µs/msg")
			b.ReportMetric(float64(decCPU.Nanoseconds())/n/1000, "dec-µs/msg")
			b.ReportMetric(float64(training.Milliseconds()), "train-ms")
		})
	}
}
