package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

const (
	// settleMargin is how long past its ReadLag a store may take before a write
	// counts as lost.
	settleMargin = 15 * time.Second
	pollInterval = 50 * time.Millisecond
	// maxPages stops a walk that never ends, e.g. over a store ignoring cursors.
	maxPages = 10000
)

func freshStore(t *testing.T, newStore StoreMaker) ports.MessageStore {
	t.Helper()
	s, err := newStore(t.Context(), t)
	if err != nil {
		t.Fatalf("StoreMaker: %v", err)
	}
	if s == nil {
		t.Fatal("StoreMaker returned a nil store")
	}
	if lag := s.ReadLag(); lag < 0 {
		t.Fatalf("ReadLag() = %s, must not be negative", lag)
	}
	return s
}

func mustAppend(t testing.TB, s ports.MessageStore, msgs []domain.Message) {
	t.Helper()
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatalf("Append(%d messages): %v", len(msgs), err)
	}
}

// eventually runs check until it passes. A store with no read lag gets exactly
// one try; others get ReadLag plus settleMargin, re-checked every pollInterval.
func eventually(ctx context.Context, s ports.MessageStore, check func() error) error {
	err := check()
	lag := s.ReadLag()
	if err == nil || lag <= 0 {
		return err
	}
	wait := lag + settleMargin
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %v)", err, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("%w (still so %s after the write; ReadLag %s)", err, wait, lag)
		case <-tick.C:
			if err = check(); err == nil {
				return nil
			}
		}
	}
}

// walk reads every page of q at now, following each page's cursor, and checks
// the page rules on the way: at most Limit messages, all of q.Scope, readable at
// now, strictly after the cursor and newest first, and no HasMore without a
// following message. before, if set, runs before each List call.
func walk(ctx context.Context, s ports.MessageStore, q domain.Query, now time.Time, before func()) ([]domain.Message, error) {
	var all []domain.Message
	hadMore := false
	for n := 1; ; n++ {
		if before != nil {
			before()
		}
		page, err := s.List(ctx, q, now)
		if err != nil {
			return all, fmt.Errorf("List page %d (limit %d): %w", n, q.Limit, err)
		}
		if err := checkPage(q, page, now); err != nil {
			return all, fmt.Errorf("page %d (limit %d): %w", n, q.Limit, err)
		}
		if hadMore && len(page.Messages) == 0 {
			return all, fmt.Errorf("page %d (limit %d) is empty although page %d said HasMore", n, q.Limit, n-1)
		}
		all = append(all, page.Messages...)
		next := page.Next()
		if next == nil {
			return all, nil
		}
		if n == maxPages {
			return all, fmt.Errorf("walk did not end after %d pages of %d", maxPages, q.Limit)
		}
		hadMore = true
		q.After = next
	}
}

func checkPage(q domain.Query, page domain.Page, now time.Time) error {
	msgs := page.Messages
	if len(msgs) > q.Limit {
		return fmt.Errorf("holds %d messages, over the limit", len(msgs))
	}
	if page.HasMore && len(msgs) == 0 {
		return errors.New("is empty but says HasMore")
	}
	for i, m := range msgs {
		switch {
		case m.Scope() != q.Scope:
			return fmt.Errorf("message %s belongs to %+v, not to the listed scope %+v", m.ID, m.Scope(), q.Scope)
		case !m.Readable(now):
			return fmt.Errorf("message %s is not readable at %s (visible %s, expires %s)", m.ID,
				domain.FormatTime(now), domain.FormatTime(m.VisibleAt), domain.FormatTime(m.ExpiresAt))
		case q.After != nil && !q.After.Admits(m):
			return fmt.Errorf("message %s (%s) is not after the cursor (%s, %s)", m.ID,
				domain.FormatTime(m.CreatedAt), domain.FormatTime(q.After.CreatedAt), q.After.ID)
		case i > 0 && !domain.Precedes(msgs[i-1], m):
			return fmt.Errorf("message %s (%s) at %d does not follow %s (%s) in newest-first order", m.ID,
				domain.FormatTime(m.CreatedAt), i, msgs[i-1].ID, domain.FormatTime(msgs[i-1].CreatedAt))
		}
	}
	return nil
}

// listAll reads all of scope's messages readable at now, matching filter.
func listAll(t testing.TB, s ports.MessageStore, scope domain.Scope, filter domain.Filter, limit int, now time.Time) []domain.Message {
	t.Helper()
	got, err := walk(t.Context(), s, domain.Query{Scope: scope, Filter: filter, Limit: limit}, now, nil)
	if err != nil {
		t.Fatalf("listing %+v with %s at %s: %v", scope, describeFilter(filter), domain.FormatTime(now), err)
	}
	return got
}

// waitForStored waits until List shows every one of msgs in their scopes at now,
// so that what follows may assert exact content and absences.
func waitForStored(t testing.TB, s ports.MessageStore, now time.Time, msgs []domain.Message) {
	t.Helper()
	byScope := map[domain.Scope]map[string]bool{}
	for _, m := range msgs {
		if byScope[m.Scope()] == nil {
			byScope[m.Scope()] = map[string]bool{}
		}
		byScope[m.Scope()][m.ID] = true
	}
	for scope, want := range byScope {
		err := eventually(t.Context(), s, func() error {
			got, err := walk(t.Context(), s, domain.Query{Scope: scope, Limit: domain.MaxLimit}, now, nil)
			if err != nil {
				return err
			}
			seen := map[string]bool{}
			for _, m := range got {
				seen[m.ID] = true
			}
			var missing []string
			for id := range want {
				if !seen[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				slices.Sort(missing)
				return fmt.Errorf("%d of %d appended messages missing: %s", len(missing), len(want), abbreviate(missing))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("waiting for appended messages of %+v at %s: %v", scope, domain.FormatTime(now), err)
		}
	}
}

// assertIDs fails unless got holds exactly want's ids in want's order.
func assertIDs(t testing.TB, what string, want, got []domain.Message) bool {
	t.Helper()
	if slices.Equal(idsOf(want), idsOf(got)) {
		return true
	}
	t.Errorf("%s: wrong messages or order\n%s", what, describeIDDiff(want, got))
	return false
}

// assertMessages fails unless got equals want message by message, every field.
func assertMessages(t testing.TB, what string, want, got []domain.Message) {
	t.Helper()
	if !assertIDs(t, what, want, got) {
		return
	}
	for i := range want {
		assertMessage(t, fmt.Sprintf("%s, message %d", what, i), want[i], got[i])
	}
}

func assertMessage(t testing.TB, what string, want, got domain.Message) {
	t.Helper()
	if diff := messageDiff(want, got); len(diff) > 0 {
		t.Errorf("%s (id %s) differs from what was appended:\n  %s", what, want.ID, strings.Join(diff, "\n  "))
	}
}

// assertHolds fails unless List and Get at now show exactly msgs (all of one
// scope, all readable), every field as appended.
func assertHolds(t testing.TB, s ports.MessageStore, when string, now time.Time, msgs []domain.Message) {
	t.Helper()
	scope := msgs[0].Scope()
	want := expectedPage(msgs, domain.Query{Scope: scope}, now)
	if len(want) != len(msgs) {
		t.Fatalf("fixture error: %d of %d messages are of scope %+v and readable at %s", len(want), len(msgs), scope, domain.FormatTime(now))
	}
	assertMessages(t, "List "+when, want, listAll(t, s, scope, domain.Filter{}, domain.MaxLimit, now))
	for _, m := range msgs {
		assertGet(t, s, m, now)
	}
}

// assertNotFound fails unless Get reports ports.ErrNotFound.
func assertNotFound(t testing.TB, s ports.MessageStore, scope domain.Scope, key string, now time.Time) {
	t.Helper()
	m, err := s.Get(t.Context(), scope, key, now)
	if !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get(%+v, %.60q) at %s = (id %q, error %v), want an error wrapping ports.ErrNotFound",
			scope, key, domain.FormatTime(now), m.ID, err)
	}
}

// assertGet fails unless Get by id and by reference both return want.
func assertGet(t testing.TB, s ports.MessageStore, want domain.Message, now time.Time) {
	t.Helper()
	for _, key := range []string{want.ID, want.Reference} {
		got, err := s.Get(t.Context(), want.Scope(), key, now)
		if err != nil {
			t.Errorf("Get(%+v, %q) at %s: %v", want.Scope(), key, domain.FormatTime(now), err)
			continue
		}
		assertMessage(t, fmt.Sprintf("Get(%q)", key), want, got)
	}
}

func describeIDDiff(want, got []domain.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  got %d messages, want %d\n", len(got), len(want))
	for i := 0; i < min(len(want), len(got)); i++ {
		if want[i].ID != got[i].ID {
			fmt.Fprintf(&b, "  first difference at %d: got %s (%s), want %s (%s)\n", i,
				got[i].ID, domain.FormatTime(got[i].CreatedAt), want[i].ID, domain.FormatTime(want[i].CreatedAt))
			break
		}
	}
	wantSet, gotCount := map[string]bool{}, map[string]int{}
	for _, m := range want {
		wantSet[m.ID] = true
	}
	var unexpected, duplicated, missing []string
	for _, m := range got {
		gotCount[m.ID]++
		switch {
		case !wantSet[m.ID] && gotCount[m.ID] == 1:
			unexpected = append(unexpected, m.ID)
		case gotCount[m.ID] == 2:
			duplicated = append(duplicated, m.ID)
		}
	}
	for _, m := range want {
		if gotCount[m.ID] == 0 {
			missing = append(missing, m.ID)
		}
	}
	fmt.Fprintf(&b, "  missing: %s\n  unexpected: %s\n  duplicated: %s\n", abbreviate(missing), abbreviate(unexpected), abbreviate(duplicated))
	fmt.Fprintf(&b, "  want: %s\n  got:  %s", abbreviate(idsOf(want)), abbreviate(idsOf(got)))
	return b.String()
}

// abbreviate lists at most 30 ids.
func abbreviate(ids []string) string {
	const most = 30
	if len(ids) == 0 {
		return "none"
	}
	if len(ids) <= most {
		return "[" + strings.Join(ids, " ") + "]"
	}
	return fmt.Sprintf("[%s ... and %d more]", strings.Join(ids[:most], " "), len(ids)-most)
}

// messageDiff names every field of got that differs from want. Times compare as
// instants; a nil header or value list equals an empty one.
func messageDiff(want, got domain.Message) []string {
	var diff []string
	field := func(name string, w, g any) {
		if w != g {
			diff = append(diff, fmt.Sprintf("%s: got %.80q, want %.80q", name, fmt.Sprint(g), fmt.Sprint(w)))
		}
	}
	field("ID", want.ID, got.ID)
	field("Reference", want.Reference, got.Reference)
	field("Account", want.Account, got.Account)
	field("Domain", want.Domain, got.Domain)
	field("Name", want.Name, got.Name)
	field("IPAddress", want.IPAddress, got.IPAddress)
	field("Method", want.Method, got.Method)
	field("Path", want.Path, got.Path)
	field("Route", want.Route, got.Route)
	field("StatusCode", want.StatusCode, got.StatusCode)
	field("HasDuration", want.HasDuration, got.HasDuration)
	field("Duration", want.Duration, got.Duration)
	field("SampleRate", want.SampleRate, got.SampleRate)
	field("Rules", fmt.Sprint(want.Rules), fmt.Sprint(got.Rules))
	for _, side := range []struct {
		name      string
		want, got domain.Content
	}{{"Request", want.Request, got.Request}, {"Response", want.Response, got.Response}} {
		diff = append(diff, headerDiff(side.name+".Header", side.want.Header, side.got.Header)...)
		if d := bodyDiff(side.want.Body, side.got.Body); d != "" {
			diff = append(diff, side.name+".Body: "+d)
		}
		field(side.name+".ContentType", side.want.ContentType, side.got.ContentType)
		field(side.name+".Size", side.want.Size, side.got.Size)
	}
	for _, ts := range []struct {
		name      string
		want, got time.Time
	}{
		{"CreatedAt", want.CreatedAt, got.CreatedAt},
		{"UpdatedAt", want.UpdatedAt, got.UpdatedAt},
		{"VisibleAt", want.VisibleAt, got.VisibleAt},
		{"ExpiresAt", want.ExpiresAt, got.ExpiresAt},
	} {
		if !ts.want.Equal(ts.got) {
			diff = append(diff, fmt.Sprintf("%s: got %s, want %s", ts.name, ts.got.UTC().Format(time.RFC3339Nano), domain.FormatTime(ts.want)))
		}
	}
	return diff
}

func headerDiff(name string, want, got domain.Header) []string {
	var diff []string
	for _, key := range sortedKeys(want, got) {
		w, inWant := want[key]
		g, inGot := got[key]
		switch {
		case !inGot:
			diff = append(diff, fmt.Sprintf("%s[%q] is missing, want %q", name, key, w))
		case !inWant:
			diff = append(diff, fmt.Sprintf("%s[%q] = %q is unexpected", name, key, g))
		case !slices.Equal(w, g):
			diff = append(diff, fmt.Sprintf("%s[%q] = %q, want %q (order matters)", name, key, g, w))
		}
	}
	return diff
}

func sortedKeys(headers ...domain.Header) []string {
	var keys []string
	for _, h := range headers {
		for k := range h {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// bodyDiff describes a body difference briefly: bodies may be a MiB long.
func bodyDiff(want, got string) string {
	if want == got {
		return ""
	}
	at := 0
	for at < min(len(want), len(got)) && want[at] == got[at] {
		at++
	}
	return fmt.Sprintf("got %d bytes, want %d; first difference at byte %d: got %.40q, want %.40q",
		len(got), len(want), at, got[at:], want[at:])
}

// describeFilter names only the filters that are set.
func describeFilter(f domain.Filter) string {
	var parts []string
	add := func(name string, set bool, value any) {
		if set {
			parts = append(parts, fmt.Sprintf("%s=%q", name, fmt.Sprint(value)))
		}
	}
	add("name", f.Name != "", f.Name)
	add("method", f.Method != "", f.Method)
	add("ip", f.IPAddress != "", f.IPAddress)
	add("path", f.Path != "", f.Path)
	add("path_prefix", f.PathPrefix != "", f.PathPrefix)
	add("route", f.Route != "", f.Route)
	add("status_min", f.StatusMin != 0, f.StatusMin)
	add("status_max", f.StatusMax != 0, f.StatusMax)
	add("from", !f.From.IsZero(), domain.FormatTime(f.From))
	add("to", !f.To.IsZero(), domain.FormatTime(f.To))
	add("q", f.Text != "", f.Text)
	if f.MinDuration != nil {
		add("min_duration", true, *f.MinDuration)
	}
	if f.MaxDuration != nil {
		add("max_duration", true, *f.MaxDuration)
	}
	if len(parts) == 0 {
		return "no filter"
	}
	return "filter " + strings.Join(parts, " ")
}

func describeQuery(q domain.Query) string {
	s := fmt.Sprintf("%s/%s, %s, limit %d", q.Scope.Account, q.Scope.Domain, describeFilter(q.Filter), q.Limit)
	if q.After != nil {
		s += fmt.Sprintf(", after (%s, %s)", domain.FormatTime(q.After.CreatedAt), q.After.ID)
	}
	return s
}
