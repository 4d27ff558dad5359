package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// searchQuery is what the search workload asks: the first page of the messages
// holding rareToken, which seed planted in one message in -rare.
var searchQuery = "limit=20&q=" + url.QueryEscape(rareToken)

// prepareSearch checks that the server finds the planted token, so that the
// workload measures a search that hits, and returns its URL.
func (s *server) prepareSearch(ctx context.Context, stdout io.Writer) (string, error) {
	page, err := s.list(ctx, searchQuery)
	if err != nil {
		return "", err
	}
	if len(page.Messages) == 0 {
		return "", fmt.Errorf("no message holds %q: seed the server with this tool first (reqlog-bench seed), and mind its visibility delay", rareToken)
	}
	more := ""
	if page.Pagination.NextCursor != nil {
		more = " (and more on further pages)"
	}
	fmt.Fprintf(stdout, "search: q=%s finds %d messages on its first page%s\n", rareToken, len(page.Messages), more)
	return s.base + "/v1/messages?" + searchQuery, nil
}

// statsReply is what the stats workload reads of a first reply.
type statsReply struct {
	Data struct {
		From     string `json:"from"`
		To       string `json:"to"`
		Interval string `json:"interval"`
		Total    struct {
			Count    int64 `json:"count"`
			Duration *struct {
				Count int64   `json:"count"`
				P50   float64 `json:"p50"`
				P99   float64 `json:"p99"`
			} `json:"duration_ms"`
		} `json:"total"`
		Buckets []json.RawMessage `json:"buckets"`
	} `json:"data"`
}

// prepareStats asks for the default statistics (the last 24 hours), with
// query's parameters added, once, reports what they cover, and returns their
// URL.
func (s *server) prepareStats(ctx context.Context, query string, stdout io.Writer) (string, error) {
	path := "/v1/stats"
	if query != "" {
		path += "?" + query
	}
	status, body, err := s.get(ctx, path)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %s", path, status, body)
	}
	var reply statsReply
	if err := json.Unmarshal(body, &reply); err != nil {
		return "", fmt.Errorf("GET /v1/stats: %w", err)
	}
	d := reply.Data
	fmt.Fprintf(stdout, "stats: %s to %s in %d buckets of %s: %d messages", d.From, d.To, len(d.Buckets), d.Interval, d.Total.Count)
	if d.Total.Duration != nil {
		fmt.Fprintf(stdout, ", %d durations (p50 %.1fms, p99 %.1fms)", d.Total.Duration.Count, d.Total.Duration.P50, d.Total.Duration.P99)
	}
	fmt.Fprintln(stdout)
	if d.Total.Count == 0 {
		return "", errors.New("the statistics count no message: seed the server first (reqlog-bench seed, whose -spread is 24h)")
	}
	return s.base + path, nil
}

// getTargets asks for target again and again.
func (s *server) getTargets(target string) vegeta.Targeter {
	header := s.header()
	return func(t *vegeta.Target) error {
		*t = vegeta.Target{Method: http.MethodGet, URL: target, Header: header}
		return nil
	}
}

// exportRun is one export request, read to its end.
type exportRun struct {
	messages, bytes int64
	firstByte, took time.Duration
}

// export streams GET /v1/messages/export, one request after the other, until
// -duration has passed (at least once), counting lines rather than decoding them
// so that the tool is not what limits the rate. It reports messages per second
// and the server's memory: sampled from /metrics as it goes, and with -pid the
// exact peak resident size of that process during the exports (VmHWM, reset
// first).
func (s *server) export(ctx context.Context, title string, o options, stdout io.Writer) error {
	query := url.Values{"format": {o.format}}
	rssBefore, heapBefore := s.memory()
	resetPeak := false
	if o.pid > 0 {
		if err := resetPeakRSS(o.pid); err != nil {
			fmt.Fprintf(stdout, "warning: no exact peak for process %d: %v\n", o.pid, err)
		} else {
			resetPeak = true
		}
	}
	peak := s.watchMemory(50 * time.Millisecond)
	began := time.Now()
	var runs []exportRun
	var err error
	for len(runs) == 0 || time.Since(began) < o.load.duration {
		var run exportRun
		if run, err = s.exportOnce(ctx, query, o.format); err != nil {
			break
		}
		runs = append(runs, run)
	}
	elapsed := time.Since(began)
	peakRSS, peakHeap := peak()
	rssAfter, heapAfter := s.memory()
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "\n== %s: %s, one request at a time for %s\n", title, o.format, o.load.duration)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "export\tmessages\tMiB\tfirst byte\ttook\tmessages/s\t")
	var messages, bytes int64
	for i, r := range runs {
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%s\t%s\t%.0f\t\n", i+1, r.messages, float64(r.bytes)/(1<<20), ms(r.firstByte),
			r.took.Round(time.Millisecond), float64(r.messages)/r.took.Seconds())
		messages, bytes = messages+r.messages, bytes+r.bytes
	}
	_ = tw.Flush()
	fmt.Fprintf(stdout, "export: %d messages in %s: %.0f messages/s, %.1f MiB/s\n", messages, elapsed.Round(time.Millisecond),
		float64(messages)/elapsed.Seconds(), float64(bytes)/(1<<20)/elapsed.Seconds())
	fmt.Fprintf(stdout, "server memory: rss %s before, %s at most while exporting (sampled every 50ms), %s after; heap in use %s, %s, %s\n",
		mib(rssBefore), mib(peakRSS), mib(rssAfter), mib(heapBefore), mib(peakHeap), mib(heapAfter))
	if resetPeak {
		if hwm, err := peakRSSOf(o.pid); err == nil {
			fmt.Fprintf(stdout, "process %d: peak rss %s while exporting (VmHWM, reset before)\n", o.pid, mib(hwm))
		}
	}
	return nil
}

// exportOnce reads one export to its end.
func (s *server) exportOnce(ctx context.Context, query url.Values, format string) (exportRun, error) {
	var run exportRun
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/v1/messages/export?"+query.Encode(), nil)
	if err != nil {
		return run, err
	}
	req.Header = s.header()
	began := time.Now()
	// No overall timeout: a store that scans may take minutes for 100,000 messages.
	resp, err := (&http.Client{Transport: s.client.Transport}).Do(req)
	if err != nil {
		return run, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return run, fmt.Errorf("GET /v1/messages/export: %d %s", resp.StatusCode, body)
	}
	buf := make([]byte, 256<<10)
	var lines int64
	var head []byte // the start of the stream, to check its first line
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && run.bytes == 0 {
			run.firstByte = time.Since(began)
		}
		if len(head) < maxCheckedLine {
			head = append(head, buf[:min(n, maxCheckedLine-len(head))]...)
		}
		run.bytes += int64(n)
		lines += int64(bytes.Count(buf[:n], []byte("\n")))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return run, fmt.Errorf("GET /v1/messages/export: after %d bytes: %w", run.bytes, err)
		}
	}
	run.took = time.Since(began)
	run.messages = lines
	if format == "csv" {
		run.messages = max(lines-1, 0) // the header
	} else if line, _, whole := bytes.Cut(head, []byte("\n")); whole && !json.Valid(line) {
		return run, fmt.Errorf("GET /v1/messages/export: the first line is not JSON: %.200s", line)
	}
	return run, nil
}

// maxCheckedLine bounds what export keeps of a stream to check its first line.
const maxCheckedLine = 1 << 20

// watchMemory samples the server's memory every interval until the returned
// function is called, which gives the largest resident and heap sizes seen.
func (s *server) watchMemory(interval time.Duration) func() (rss, heap float64) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	peakRSS, peakHeap := -1.0, -1.0
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			rss, heap := s.memory()
			peakRSS, peakHeap = max(peakRSS, rss), max(peakHeap, heap)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() (float64, float64) {
		close(done)
		wg.Wait()
		return peakRSS, peakHeap
	}
}

// resetPeakRSS resets the peak resident size (VmHWM) of process pid to its
// current size (Linux, the process's owner).
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// peakRSSOf reads the peak resident size of process pid, in bytes.
func peakRSSOf(pid int) (float64, error) { return procStatusBytes(pid, "VmHWM:") }

// procStatusBytes reads a size field of /proc/<pid>/status ("VmRSS:",
// "VmHWM:"), in bytes.
func procStatusBytes(pid int, field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
