package esclient

import (
	"context"
	"io"
	"net/http"

	"github.com/elastic/go-elasticsearch/v8/esapi"
)

// BulkRefreshed sends body, bulk entries of updates or deletes, refreshes
// the shards they touched before it answers (refresh=true: a search right
// after sees them), and returns how many items succeeded. An item that
// found no document (404) is not counted and no failure; any other failed
// item fails the request, classified as a request's failure is.
func (c *Client) BulkRefreshed(ctx context.Context, op string, body io.Reader) (int64, error) {
	var reply struct {
		Items []map[string]struct {
			ID     string   `json:"_id"`
			Status int      `json:"status"`
			Error  *esError `json:"error"`
		} `json:"items"`
	}
	if err := c.Do(ctx, op, esapi.BulkRequest{Body: body, Refresh: "true",
		FilterPath: []string{"items.*._id", "items.*.status", "items.*.error"}}, &reply); err != nil {
		return 0, err
	}
	var done int64
	for _, item := range reply.Items {
		for _, r := range item {
			switch {
			case r.Status < 300:
				done++
			case r.Status != http.StatusNotFound:
				return done, failure(op+" "+r.ID, r.Status, r.Error)
			}
		}
	}
	return done, nil
}
