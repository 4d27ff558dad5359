package esindex

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A year of daily indices goes into URLs under Elasticsearch's 4 KB request
// line, every name once, in order.
func TestNamesInURLsFitUnderTheRequestLine(t *testing.T) {
	for _, n := range []int{0, 1, 2, 100, 400} {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("reqlog-prod-eu-messages-%04d.%02d.%02d", 2026+i/365, 1+i/31%12, 1+i%28))
		}
		lists := namesInURLs(names)
		var again []string
		for _, list := range lists {
			if joined := strings.Join(list, ","); len(joined) > maxURLNames || len(list) == 0 {
				t.Errorf("%d names: a list of %d names takes %d bytes, want 1 to %d", n, len(list), len(joined), maxURLNames)
			}
			again = append(again, list...)
		}
		if !slices.Equal(again, names) {
			t.Errorf("%d names: the lists hold %d names, want each once in order", n, len(again))
		}
		if fewest := (n*37 + maxURLNames - 1) / maxURLNames; n > 0 && len(lists) > fewest+1 {
			t.Errorf("%d names in %d lists, want about %d", n, len(lists), fewest)
		}
	}
}
