package httpapi

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Every CSV column is defused, one column at a time: a cell starting with one of
// =, +, -, @, tab or carriage return gets a leading ', and only such cells.
func TestCSVRecordDefusesEveryColumn(t *testing.T) {
	at := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	plain := domain.Message{ID: "01959000-0000-7000-8000-000000000001", Reference: "msg_AAAAAAAAAAAB", Name: "shop",
		Method: "GET", Path: "/p", StatusCode: 200, Duration: 41200 * time.Microsecond, HasDuration: true,
		IPAddress: "203.0.113.9", Request: domain.Content{Size: 12}, Response: domain.Content{Size: 3}, CreatedAt: at}
	e := &exportWriter{record: make([]string, len(exportColumns))}
	want := slices.Clone(e.csvRecord(plain))
	if slices.ContainsFunc(want, func(c string) bool { return strings.HasPrefix(c, "'") }) {
		t.Fatalf("a plain record was changed: %q", want)
	}
	for _, start := range []string{"=", "+", "-", "@", "\t", "\r"} {
		// What each column holds when it starts with start, as far as its type
		// allows: the numbers and the time can only be negative.
		hostile := map[string]func(*domain.Message) string{
			"created_at": func(m *domain.Message) string {
				m.CreatedAt = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)
				return domain.FormatTime(m.CreatedAt)
			},
			"id":          func(m *domain.Message) string { m.ID = start + "cmd|' /C calc'!A0"; return m.ID },
			"reference":   func(m *domain.Message) string { m.Reference = start + "SUM(1+1)"; return m.Reference },
			"name":        func(m *domain.Message) string { m.Name = start + "HYPERLINK(\"http://x\")"; return m.Name },
			"method":      func(m *domain.Message) string { m.Method = start + "CMD|'CALC'!A0"; return m.Method },
			"path":        func(m *domain.Message) string { m.Path = start + "2+3"; return m.Path },
			"status_code": func(m *domain.Message) string { m.StatusCode = -200; return "-200" },
			"duration_ms": func(m *domain.Message) string {
				m.Duration = -1500 * time.Microsecond
				return "-1.5"
			},
			"ip_address":    func(m *domain.Message) string { m.IPAddress = start + "1+1"; return m.IPAddress },
			"request.size":  func(m *domain.Message) string { m.Request.Size = -1; return "-1" },
			"response.size": func(m *domain.Message) string { m.Response.Size = -2; return "-2" },
		}
		for i, column := range exportColumns {
			t.Run(column, func(t *testing.T) {
				m := plain
				value := hostile[column](&m)
				if !strings.HasPrefix(value, "-") && !strings.HasPrefix(value, start) {
					t.Fatalf("the test's %s %q does not start with %q", column, value, start)
				}
				got := e.csvRecord(m)
				wantRow := slices.Clone(want)
				wantRow[i] = "'" + value
				if !slices.Equal(got, wantRow) {
					t.Errorf("%s starting with %q:\n got %q\nwant %q", column, value[:1], got, wantRow)
				}
			})
		}
	}
	// A ' inside or a formula character later in the cell is left alone.
	m := plain
	m.Name, m.Path = "a=b+c", "/=x"
	if got := e.csvRecord(m); got[3] != "a=b+c" || got[5] != "/=x" {
		t.Errorf("cells without a formula start were changed: %q", got)
	}
}
