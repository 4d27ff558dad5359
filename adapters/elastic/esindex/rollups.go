package esindex

import (
	_ "embed"
	"encoding/json"
)

// rollupMappings are the strict mappings of the daily indices of rollups:
// per scope, application and minute a mark and a kept rollup (esrollup).
// Marks are searched by scope, application and minute and summed by hour;
// kept rollups are read by id; the purge searches expires_at.
//
//go:embed rollups.json
var rollupMappings json.RawMessage

// rollupsTemplateVersion changes whenever the rollups' template does.
const rollupsTemplateVersion = 1

// newRollupsTemplate builds the template of cfg's daily indices of rollups:
// one shard, the messages' copies and refresh interval.
func newRollupsTemplate(cfg Config) indexTemplate {
	names := NewNames(cfg.Prefix)
	return indexTemplate{
		IndexPatterns: []string{names.RollupsPattern()},
		Priority:      templatePriority,
		Version:       rollupsTemplateVersion,
		Meta:          map[string]any{"managed_by": "reqlog"},
		Template: templateContent{
			Settings: map[string]any{"index": map[string]any{
				"number_of_shards":     1,
				"auto_expand_replicas": cfg.AutoExpandReplicas(),
				"refresh_interval":     cfg.refreshSetting(),
			}},
			Mappings: rollupMappings,
		},
	}
}
