package esrollup

import (
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esindex"
	"github.com/reqlog/reqlog/adapters/elastic/esquery"
	"github.com/reqlog/reqlog/adapters/statsengine"
)

var _ statsengine.MarkStore = (*Rollups)(nil)

// Rollups are the store's marks and kept rollups, in the daily indices
// "<prefix>-rollups-<day>" of the minutes' UTC day, and the state of the
// marks in "<prefix>-rollup-state". It is safe for concurrent use.
type Rollups struct {
	client  *esclient.Client
	names   esindex.Names
	queries *esquery.Queries
	// settle is how long after its marks a minute's messages are surely
	// searchable: twice the read lag and a second.
	settle     time.Duration
	marksSince statsengine.MarksSince
	recent     recentMarks
}

// New keeps rollups through client in the indices of names, recounting
// minutes with queries, for a store whose reads lag its writes by readLag.
func New(client *esclient.Client, names esindex.Names, queries *esquery.Queries, readLag time.Duration) *Rollups {
	return &Rollups{client: client, names: names, queries: queries, settle: 2*readLag + time.Second}
}
