package domain

import "strconv"

// Export formats and bounds.
const (
	ExportNDJSON = "ndjson"
	ExportCSV    = "csv"
	// MaxExport is the most messages one export holds, and its default.
	MaxExport = 100_000
)

// ExportQuery asks for every message passing Filter, newest first, at most Max
// of them, written in Format.
type ExportQuery struct {
	Filter Filter
	Max    int
	Format string
}

// ParseExportQuery reads the export's query parameters: every fetch filter,
// format (ndjson, the default, or csv) and limit (1 to MaxExport, the default).
func ParseExportQuery(values map[string][]string) (ExportQuery, error) {
	p := NewQueryParams(values)
	q := ExportQuery{Filter: p.Filter(), Max: MaxExport, Format: ExportNDJSON}
	if v, ok := p.Get("format"); ok {
		switch v {
		case ExportNDJSON, ExportCSV:
			q.Format = v
		default:
			p.fe.Add("format", "must be ndjson or csv")
		}
	}
	if v, ok := p.Get("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxExport {
			p.fe.Add("limit", "must be an integer from 1 to %d", MaxExport)
		} else {
			q.Max = n
		}
	}
	if err := p.Err(); err != nil {
		return ExportQuery{}, err
	}
	return q, nil
}
