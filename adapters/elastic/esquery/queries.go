package esquery

import (
	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esindex"
)

// Queries are the store's reads and its purge, over the daily indices that
// names names. They are safe for concurrent use.
type Queries struct {
	client *esclient.Client
	names  esindex.Names
}

// New runs the queries through client over the indices of names.
func New(client *esclient.Client, names esindex.Names) *Queries {
	return &Queries{client: client, names: names}
}
