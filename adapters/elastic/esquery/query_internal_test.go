package esquery

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/domain"
)

// searchReplyOf is a search reply as Elasticsearch sends it, with hits for ids.
func searchReplyOf(t *testing.T, ids ...string) string {
	t.Helper()
	hits := make([]string, len(ids))
	for i, id := range ids {
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		source := esdoc.AppendWithText(nil, domain.Message{ID: id, CreatedAt: at, UpdatedAt: at, VisibleAt: at, ExpiresAt: at})
		hits[i] = fmt.Sprintf(`{"_index":"i","_id":%q,"_score":null,"_source":%s,"sort":["x",%q]}`, id, source, id)
	}
	return `{"took":3,"timed_out":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},` +
		`"hits":{"max_score":null,"hits":[` + strings.Join(hits, ",") + `]}}`
}

func TestPageReaderReadsHitsOnlyAsFarAsThePage(t *testing.T) {
	for _, tc := range []struct {
		limit   int
		ids     []string
		want    int
		hasMore bool
	}{
		{limit: 2, ids: []string{"a", "b", "c"}, want: 2, hasMore: true},
		{limit: 3, ids: []string{"a", "b", "c"}, want: 3, hasMore: false},
		{limit: 5, ids: nil, want: 0, hasMore: false},
	} {
		r := &pageReader{limit: tc.limit}
		// The hits after the page are cut short: the reader must not need them.
		reply := searchReplyOf(t, tc.ids...)
		if tc.hasMore {
			reply = reply[:strings.LastIndex(reply, `{"_index"`)+len(`{"_index"`)]
		}
		if err := r.DecodeReply(strings.NewReader(reply)); err != nil || r.badHit != nil {
			t.Fatalf("limit %d over %v: %v, %v", tc.limit, tc.ids, err, r.badHit)
		}
		if len(r.page.Messages) != tc.want || r.page.HasMore != tc.hasMore {
			t.Errorf("limit %d over %v: %d messages, has_more %t; want %d, %t",
				tc.limit, tc.ids, len(r.page.Messages), r.page.HasMore, tc.want, tc.hasMore)
		}
		for i, m := range r.page.Messages {
			if m.ID != tc.ids[i] {
				t.Errorf("message %d is %q, want %q", i, m.ID, tc.ids[i])
			}
		}
	}
}

func TestPageReaderRefusesMalformedReplies(t *testing.T) {
	whole := searchReplyOf(t, "a", "b")
	afterFirstHit := whole[:strings.LastIndex(whole, `,{"_index"`)]
	for _, reply := range []string{
		``, `[]`, `{"hits":[]}`, `{"hits":{"hits":{}}}`, `{"hits":{"hits":[{"_source":`, `{"hits":{"hits":[1]}}`,
		`{"hits":{"hits":[`, afterFirstHit, afterFirstHit + ",",
	} {
		r := &pageReader{limit: 10}
		if err := r.DecodeReply(strings.NewReader(reply)); err == nil && r.badHit == nil {
			t.Errorf("reply %q was read as a page of %d", reply, len(r.page.Messages))
		}
	}
}
