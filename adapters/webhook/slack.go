package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/reqlog/reqlog/domain/alerting"
)

// slackTopPaths is how many of the window's top paths a Slack message lists.
const slackTopPaths = 3

// slackBody is the event as a Slack incoming webhook's message: a few lines a
// person reads in a channel.
func slackBody(e alerting.Event) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the text is Slack's markup, escaped as Slack wants
	if err := enc.Encode(struct {
		Text string `json:"text"`
	}{SlackText(e)}); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// SlackText is the message's text, in Slack's mrkdwn: what happened to which
// rule, the value against the threshold over the window, the top paths, and a
// link to the portal. Everything but the link is escaped as Slack asks (&, <
// and >).
func SlackText(e alerting.Event) string {
	r, o := e.Rule, e.Observation
	var b strings.Builder
	switch {
	case e.Type == alerting.EventTest:
		b.WriteString(":test_tube: *TEST*")
	case e.Type == alerting.EventResolved:
		b.WriteString(":white_check_mark: *RESOLVED*")
	case e.Repeat:
		b.WriteString(":rotating_light: *STILL FIRING*")
	default:
		b.WriteString(":rotating_light: *FIRING*")
	}
	b.WriteString(" " + Title(r) + "\n")
	value := "no data"
	if o.HasValue {
		value = formatValue(r.Metric, o.Value)
	}
	fmt.Fprintf(&b, "%s is %s (threshold %s %s) over %s, %s to %s UTC: %d requests, %d errors, %d server errors",
		r.Metric, value, r.Comparison, formatValue(r.Metric, e.Threshold()), alerting.FormatDuration(r.Window),
		o.From.UTC().Format("15:04"), o.To.UTC().Format("15:04"), o.Count, o.Errors, o.ServerErrors)
	if e.Reason != "" && e.Reason != alerting.ReasonThreshold {
		b.WriteString(" (" + strings.ReplaceAll(string(e.Reason), "_", " ") + ")")
	}
	if len(o.TopPaths) > 0 {
		b.WriteString("\nTop paths:")
		for i, p := range o.TopPaths[:min(len(o.TopPaths), slackTopPaths)] {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " `%s` %d (%d errors)", strings.ReplaceAll(truncateText(p.Key, 120), "`", "'"), p.Count, p.Errors)
		}
	}
	text := slackEscape(b.String())
	if e.PortalURL != "" {
		text += "\n<" + slackEscape(e.PortalURL) + "|Open these requests in reqlog>"
	}
	return text
}

// Title is the rule's title, or one made of its condition and filters.
func Title(r alerting.Rule) string {
	if r.Title != "" {
		return r.Title
	}
	parts := []string{fmt.Sprintf("%s %s %s", r.Metric, r.Comparison, formatValue(r.Metric, r.Threshold))}
	for _, f := range []string{r.Filter.Name, r.Filter.Method, r.Filter.PathPrefix} {
		if f != "" {
			parts = append(parts, f)
		}
	}
	if classes := r.Filter.StatusClassNames(); len(classes) > 0 {
		parts = append(parts, strings.Join(classes, "/"))
	}
	return strings.Join(parts, " ")
}

// formatValue writes a metric's value for a person: rates in percent,
// durations in milliseconds, counts whole.
func formatValue(m alerting.Metric, v float64) string {
	round := func(x float64, places float64) string {
		scale := math.Pow(10, places)
		return strconv.FormatFloat(math.Round(x*scale)/scale, 'f', -1, 64)
	}
	switch {
	case m.IsRate():
		return round(v*100, 2) + " %"
	case m.IsDuration():
		return round(v, 3) + " ms"
	}
	return round(v, 3)
}

// slackEscape escapes what Slack reads as markup: &, < and >.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
