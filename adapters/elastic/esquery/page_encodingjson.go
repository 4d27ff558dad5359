package esquery

import (
	"encoding/json"
	"io"

	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
)

// encodingJSONReplies makes searches read their replies with encoding/json
// (decodeWithEncodingJSON) instead of the reply reader. A build with the tag
// reqlog_encodingjson_replies sets it, so that reqlogd's CPU per fetch can be
// measured with either reader (docs/benchmarks.md, section Elasticsearch);
// such a build reads whole replies, so the tests of reading only as far as
// the page fail in it.
var encodingJSONReplies = false

// decodeWithEncodingJSON reads a search reply as the library would: the whole
// reply by a json.Decoder, each hit's _source kept as a json.RawMessage, then
// decoded into the record (record.DecodeJSON) as far as the page goes. It is
// what the reply reader is tested and measured against.
func (p *pageReader) decodeWithEncodingJSON(r io.Reader) error {
	var reply struct {
		Hits struct {
			Hits []struct {
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(r).Decode(&reply); err != nil {
		return err
	}
	hits, next := reply.Hits.Hits, 0
	p.page, p.badHit = domain.FillPage(p.limit, min(p.limit, maxPresized), func() bool { return next < len(hits) },
		func() (domain.Message, error) {
			next++
			return record.DecodeJSON(hits[next-1].Source)
		})
	return nil
}
