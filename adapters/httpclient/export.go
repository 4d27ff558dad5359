package httpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"

	"github.com/reqlog/reqlog/ports"
)

// maxExportLine bounds one line of an export: far above the largest message the
// service stores (its bodies come from a POST of at most a few MiB).
const maxExportLine = 64 << 20

// Export iterates over every message that opts selects, newest first, streamed
// from GET /v1/messages/export as NDJSON and decoded one line at a time, so
// memory stays bounded whatever the count. opts.Limit is the most messages (1 to
// 100,000; 0: the service's default, 100,000); opts.Cursor is not used.
//
// The request is retried as List's are, until the stream starts. A failure,
// a stream cut short included, is yielded once as the error of the last pair;
// breaking out of the loop closes the stream.
func (c *Client) Export(ctx context.Context, opts ListOptions) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		opts.Cursor = ""
		values := opts.values()
		values.Set("format", "ndjson")
		u := c.messages.JoinPath("export")
		u.RawQuery = values.Encode()
		r := call{method: http.MethodGet, url: u,
			header: http.Header{"Accept": {"application/x-ndjson, application/json"}}}
		resp, err := c.open(ctx, r)
		if err != nil {
			yield(Message{}, err)
			return
		}
		defer resp.Body.Close()
		lines := bufio.NewReaderSize(resp.Body, 64<<10)
		var line []byte
		for n := 1; ; n++ {
			line, err = readLine(lines, line[:0])
			switch {
			case errors.Is(err, errLongLine):
				yield(Message{}, fmt.Errorf("httpclient: %s: line %d: %w", r, n, err))
				return
			case err != nil && !errors.Is(err, io.EOF):
				// What was read of the line is cut short: the error says why.
				yield(Message{}, fmt.Errorf("httpclient: %s: line %d: %w: %w", r, n, ports.ErrUnavailable, err))
				return
			}
			if len(bytes.TrimSpace(line)) > 0 {
				var m Message
				if decodeErr := json.Unmarshal(line, &m); decodeErr != nil {
					yield(Message{}, fmt.Errorf("httpclient: %s: line %d is not a message: %w", r, n, decodeErr))
					return
				}
				if !yield(m, nil) {
					return
				}
			}
			if err != nil { // io.EOF: the whole export was read
				return
			}
		}
	}
}

var errLongLine = fmt.Errorf("a line longer than %d bytes", maxExportLine)

// readLine appends the next line of r, without its newline, to buf. At the end
// of the stream it returns what is left and io.EOF.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(buf) > maxExportLine {
				return nil, errLongLine
			}
		default:
			return buf, err
		}
	}
}
