package esclient

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkReadBulkReply: the CPU Creates spends on a reply of 500 created items,
// as Elasticsearch writes it whole and as bulkReplyFields filters it.
//
//	go test -run '^$' -bench ReadBulkReply -benchmem ./adapters/elastic/esclient/
func BenchmarkReadBulkReply(b *testing.B) {
	targets := make([]Target, 500)
	whole, filtered := []string{}, []string{}
	for i := range targets {
		targets[i] = Target{Index: "reqlog-messages-2025.03.14", ID: fmt.Sprintf("msg_%020d", i)}
		whole = append(whole, fmt.Sprintf(`{"create":{"_index":"reqlog-messages-2025.03.14","_id":%q,"_version":1,"result":"created",`+
			`"_shards":{"total":2,"successful":1,"failed":0},"_seq_no":%d,"_primary_term":1,"status":201}}`, targets[i].ID, i))
		filtered = append(filtered, `{"create":{"status":201}}`)
	}
	for _, c := range []struct {
		name  string
		reply string
	}{
		{"whole", `{"took":17,"errors":false,"items":[` + strings.Join(whole, ",") + `]}`},
		{"filtered", `{"items":[` + strings.Join(filtered, ",") + `]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.reply)))
			b.ReportAllocs()
			for b.Loop() {
				var reply bulkReply
				if err := json.NewDecoder(strings.NewReader(c.reply)).Decode(&reply); err != nil {
					b.Fatal(err)
				}
				if err := checkBulk(targets, 0, reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
