package esdoc

import (
	"fmt"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/record"
)

// Sources reads the _source of search hits into records. Its scratch space
// (one side's headers until record.Content turns them into a map) serves
// one hit after the other.
type Sources struct {
	headers [2][]record.Header
}

// Read reads a _source into r: the members record.Record's json tags name
// (source_test.go checks the result against encoding/json's); others are
// skipped.
func (s *Sources) Read(w *esclient.ReplyReader, r *record.Record) error {
	return w.Object(func(key string) error {
		if w.Null() {
			return w.Err()
		}
		switch key {
		case "id":
			r.ID = w.ReadString()
		case "reference":
			r.Reference = w.ReadString()
		case "account":
			r.Account = w.ReadInterned()
		case "domain":
			r.Domain = w.ReadInterned()
		case "name":
			r.Name = w.ReadInterned()
		case "ip_address":
			r.IPAddress = w.ReadString()
		case "method":
			r.Method = w.ReadInterned()
		case "path":
			r.Path = w.ReadString()
		case "route":
			r.Route = w.ReadString()
		case record.JSONRouteTemplate:
			r.Template = w.ReadString()
		case "status_code":
			n := w.ReadInt64()
			if int64(int32(n)) != n {
				w.Refuse(fmt.Errorf("decode stored message: status_code %d is out of range", n))
			}
			r.StatusCode = int32(n)
		case record.JSONDuration:
			var us record.DurationMicros
			if err := us.UnmarshalJSON(w.ReadNumber()); err != nil {
				return w.Malformed(err)
			}
			r.Duration = &us
		case "request":
			return s.content(w, &r.Request, 0)
		case "response":
			return s.content(w, &r.Response, 1)
		case "created_at":
			r.CreatedAt = readMicros(w)
		case "updated_at":
			r.UpdatedAt = readMicros(w)
		case "visible_at":
			r.VisibleAt = readMicros(w)
		case "expires_at":
			r.ExpiresAt = readMicros(w)
		case "sample_rate":
			n := w.ReadInt64()
			if int64(int32(n)) != n {
				w.Refuse(fmt.Errorf("decode stored message: sample_rate %d is out of range", n))
			}
			r.SampleRate = int32(n)
		case "tally":
			r.Tally = w.ReadBool()
		case "retention_rule":
			r.RetentionRule = w.ReadString()
		case "bodies_expire_at":
			r.BodiesExpireAt = readMicros(w)
		case "rules":
			r.Rules = &record.Rules{}
			return readRules(w, r.Rules)
		default:
			return w.Skip()
		}
		return w.Err()
	})
}

// readRules reads a message's rules record.
func readRules(w *esclient.ReplyReader, r *record.Rules) error {
	return w.Object(func(key string) error {
		if w.Null() {
			return w.Err()
		}
		switch key {
		case "version":
			r.Version = w.ReadInt64()
		case "source":
			r.Source = w.ReadInterned()
		case "rescrubbed":
			r.Rescrubbed = w.ReadInt64()
		case "submitted":
			r.Submitted = w.ReadString()
		case "changes":
			return w.Array(func() error {
				var c record.Change
				err := w.Object(func(key string) error {
					switch key {
					case "rule":
						c.Rule = w.ReadString()
					case "field":
						c.Field = w.ReadString()
					default:
						return w.Skip()
					}
					return w.Err()
				})
				r.Changes = append(r.Changes, c)
				return err
			})
		default:
			return w.Skip()
		}
		return w.Err()
	})
}

// content reads one side of a message; side (0 request, 1 response) picks
// the scratch list for its headers.
func (s *Sources) content(w *esclient.ReplyReader, c *record.Content, side int) error {
	return w.Object(func(key string) error {
		if w.Null() {
			return w.Err()
		}
		switch key {
		case "header":
			c.Headers = s.headers[side][:0]
			err := w.Array(func() error {
				var h record.Header
				if w.Null() {
					c.Headers = append(c.Headers, h)
					return w.Err()
				}
				err := w.Object(func(key string) error {
					if w.Null() {
						return w.Err()
					}
					switch key {
					case "name":
						h.Name = w.ReadInterned()
					case "values":
						h.Values = w.ReadStrings()
					default:
						return w.Skip()
					}
					return w.Err()
				})
				c.Headers = append(c.Headers, h)
				return err
			})
			s.headers[side] = c.Headers
			return err
		case "body":
			c.Body = w.ReadString()
		case "content_type":
			c.ContentType = w.ReadInterned()
		case "size":
			n := int(w.ReadInt64())
			c.Size = &n
		default:
			return w.Skip()
		}
		return w.Err()
	})
}

// readMicros reads a time as record.Micros does: reqlog's own format (six
// fractional digits, UTC) directly, anything else through time.Parse.
func readMicros(w *esclient.ReplyReader) record.Micros {
	text := w.ReadText()
	if w.Err() != nil {
		return 0
	}
	if us, ok := parseStoredTime(text); ok {
		return us
	}
	t, err := time.Parse(time.RFC3339Nano, string(text))
	if err != nil {
		w.Refuse(fmt.Errorf("decode stored message: %w", err))
		return 0
	}
	return record.MicrosOf(t)
}

// parseStoredTime reads "2006-01-02T15:04:05.000000Z", as jsonbytes.AppendTime
// writes it; ok is false for any other text, or a date time.Parse would refuse.
func parseStoredTime(b []byte) (us record.Micros, ok bool) {
	const layout = "dddd-dd-ddTdd:dd:dd.ddddddZ"
	if len(b) != len(layout) {
		return 0, false
	}
	for i := range len(layout) {
		if layout[i] == 'd' {
			if b[i] < '0' || b[i] > '9' {
				return 0, false
			}
		} else if b[i] != layout[i] {
			return 0, false
		}
	}
	num := func(from, to int) int {
		n := 0
		for _, c := range b[from:to] {
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), time.Month(num(5, 7)), num(8, 10)
	hour, minute, sec := num(11, 13), num(14, 16), num(17, 19)
	if hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	t := time.Date(year, month, day, hour, minute, sec, num(20, 26)*1000, time.UTC)
	if y, m, d := t.Date(); y != year || m != month || d != day {
		return 0, false // out of range: time.Parse says why
	}
	return record.MicrosOf(t), true
}
