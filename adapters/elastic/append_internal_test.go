package elastic

import (
	"bytes"
	"testing"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
)

// Documents carry the full-text field exactly in the indices the store knows
// as created before in-place indexing, or does not know yet; each entry ends
// where the next starts, and creates its message in its day's index.
func TestEncodeBulkFollowsTheLayouts(t *testing.T) {
	s, err := newUnopened(Config{Addresses: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := fixtures.EdgeMessages(esdoc.MaxStorableTime)
	names, layouts := s.indices.Names(), s.indices.Layouts()
	legacy := map[string]bool{}
	for i, m := range msgs {
		index := names.Of(m)
		switch i % 3 {
		case 0:
			legacy[index] = true
			layouts.Learn(index, true)
		case 1:
			layouts.Learn(index, false)
		default: // not known: the full-text field, which either layout takes
			legacy[index] = true
		}
	}
	if len(legacy) == 0 || len(legacy) == len(msgs) {
		t.Fatalf("%d of %d messages' indices are legacy: the test needs both kinds", len(legacy), len(msgs))
	}
	body, ends, targets, err := s.encodeBulk(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i, m := range msgs {
		index := names.Of(m)
		want = esdoc.AppendCreate(want, index, legacy[index], m)
		if ends[i] != len(want) {
			t.Errorf("message %d (%q) ends at %d, want %d", i, m.ID, ends[i], len(want))
		}
		if wantTarget := (esclient.Target{Index: index, ID: m.ID}); targets[i] != wantTarget {
			t.Errorf("message %d goes to %+v, want %+v", i, targets[i], wantTarget)
		}
	}
	if !bytes.Equal(body, want) {
		t.Fatalf("bulk body:\n got %s\nwant %s", body, want)
	}
}
