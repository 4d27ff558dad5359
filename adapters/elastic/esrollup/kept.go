package esrollup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
)

// keptDoc is the rollup of one application's minute as counted at the
// version of its mark, under the id statsengine.MarkID("kept", ...). Readers write it whole, marks never: a reader that counted at an
// older version can only make the minute look stale again.
type keptDoc struct {
	Kind      string `json:"kind"`
	Account   string `json:"account"`
	Domain    string `json:"domain"`
	Name      string `json:"name"`
	Minute    int64  `json:"minute"` // Unix seconds
	Version   int64  `json:"version"`
	Count     int64  `json:"count"`
	Data      []byte `json:"data"`
	ExpiresAt int64  `json:"expires_at"` // epoch milliseconds
}

func (r *Rollups) keptTarget(scope domain.Scope, name string, minute time.Time) esclient.Target {
	return esclient.Target{Index: r.names.RollupsFor(minute), ID: statsengine.MarkID("kept", scope, name, minute)}
}

// Kept yields the rollups kept for marks' minutes (statsengine.MarkStore).
func (r *Rollups) Kept(ctx context.Context, scope domain.Scope, marks []statsengine.Mark, yield func(statsengine.Kept) error) error {
	targets := make([]esclient.Target, len(marks))
	for i, mk := range marks {
		targets[i] = r.keptTarget(scope, mk.Name, mk.Minute)
	}
	return mget(ctx, r.client, "stats: kept rollups", targets, func(doc *keptDoc) error {
		return yield(statsengine.Kept{Minute: time.Unix(doc.Minute, 0).UTC(), Name: doc.Name, Version: uint64(doc.Version),
			Expires: time.UnixMilli(doc.ExpiresAt).UTC(), Messages: doc.Count, Data: doc.Data})
	})
}

// Keep writes kept rollups, each replacing its minute's whole, in one bulk
// request (statsengine.MarkStore).
func (r *Rollups) Keep(ctx context.Context, scope domain.Scope, kept []statsengine.Kept) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, k := range kept {
		t := r.keptTarget(scope, k.Name, k.Minute)
		doc := keptDoc{Kind: "kept", Account: scope.Account, Domain: scope.Domain, Name: k.Name, Minute: k.Minute.Unix(),
			Version: int64(k.Version), Count: k.Messages, Data: k.Data, ExpiresAt: k.Expires.UnixMilli() + 1}
		if err := enc.Encode(map[string]any{"index": map[string]string{"_index": t.Index, "_id": t.ID}}); err != nil {
			return fmt.Errorf("elastic: stats: keep rollups: %w", err)
		}
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("elastic: stats: keep rollups: %w", err)
		}
	}
	if body.Len() == 0 {
		return nil
	}
	return r.client.Bulk(ctx, "stats: keep rollups", &body)
}

// Recount is the messages' (esquery.Queries.Recount).
func (r *Rollups) Recount(ctx context.Context, scope domain.Scope, name string, from, to time.Time, yield func(*domain.Message) error) error {
	return r.queries.Recount(ctx, scope, name, from, to, yield)
}
