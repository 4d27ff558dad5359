package esindex

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// mappings are the strict mappings of every daily index.
//
//go:embed mappings.json
var mappings json.RawMessage

// existingMappings are mappings without _source, for PUT _mapping on the
// indices that exist already: Elasticsearch refuses to change an index's
// _source excludes, while fields may be added to it.
var existingMappings = func() json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(mappings, &m); err != nil {
		panic("elastic: mappings.json: " + err.Error())
	}
	delete(m, "_source")
	raw, err := json.Marshal(m)
	if err != nil {
		panic("elastic: mappings.json: " + err.Error())
	}
	return raw
}()

// templateVersion changes whenever the template body does, so operators can
// tell which reqlog wrote it. 2: duration_ms, route and the full-text field.
// 3: the searched texts indexed in place (indices.go: legacyMappings).
// 4: route_template, the route template (added to existing indices at
// start-up, as any new field). 5: rules, the rules record (not indexed), and
// subjects, the subject index's keyed hashes
// (domain.Message.Subjects; erasures), added the same way. 6: sample_rate
// and tally, what ingest rules keep of a sample and drop (added likewise).
// 7: retention_rule and bodies_expire_at, a message's retention class and
// its bodies' expiry (added likewise).
const templateVersion = 7

// templatePriority outranks the built-in templates of a full distribution
// (logs-*-*, metrics-*-* at 100), which would otherwise turn an index of a
// prefix such as "logs" into a data stream.
const templatePriority = 200

// indexTemplate is the body of PUT _index_template/<prefix>-messages.
type indexTemplate struct {
	IndexPatterns []string        `json:"index_patterns"`
	Priority      int             `json:"priority"`
	Version       int             `json:"version"`
	Meta          map[string]any  `json:"_meta"`
	Template      templateContent `json:"template"`
}

type templateContent struct {
	Settings map[string]any  `json:"settings"`
	Mappings json.RawMessage `json:"mappings"`
}

// newIndexTemplate builds the template of cfg's daily indices.
func newIndexTemplate(cfg Config) indexTemplate {
	names := NewNames(cfg.Prefix)
	return indexTemplate{
		IndexPatterns: []string{names.ReadPattern()},
		Priority:      templatePriority,
		Version:       templateVersion,
		Meta:          map[string]any{"managed_by": "reqlog"},
		Template: templateContent{
			Settings: map[string]any{
				"index": map[string]any{
					// One primary shard by default: a day's index stays small.
					"number_of_shards": cfg.Shards,
					// Replicas follow the cluster's size (Config.Replicas).
					"auto_expand_replicas": cfg.AutoExpandReplicas(),
					"refresh_interval":     cfg.refreshSetting(),
					// Segments sorted newest first let a page stop early.
					"sort.field": []string{"created_at", "id"},
					"sort.order": []string{"desc", "desc"},
				},
			},
			Mappings: mappings,
		},
	}
}

// liveSettings are applied at start-up to the indices that already exist, so
// that ReadLag holds for them too and they keep as many copies as new ones;
// the block removal undoes a purge that died between blocking an index and
// deleting it (esquery: PurgeExpired).
func liveSettings(cfg Config) map[string]any {
	return map[string]any{"index": map[string]any{
		"refresh_interval":     cfg.refreshSetting(),
		"auto_expand_replicas": cfg.AutoExpandReplicas(),
		"blocks.write":         nil,
	}}
}

// AutoExpandReplicas is index.auto_expand_replicas for Replicas.
func (cfg Config) AutoExpandReplicas() string {
	return fmt.Sprintf("0-%d", cfg.Replicas)
}

// refreshSetting is RefreshInterval in Elasticsearch's time unit syntax.
func (cfg Config) refreshSetting() string {
	return fmt.Sprintf("%dms", cfg.RefreshInterval.Milliseconds())
}
