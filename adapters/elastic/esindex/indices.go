package esindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/domain"
)

// Config is what the indices take of the store's configuration, with the
// store's defaults filled in.
type Config struct {
	Prefix          string
	Shards          int
	Replicas        int
	RefreshInterval time.Duration
	// WarmUp bounds PrepareWrites' wait for copies and its warm-up; negative
	// disables both.
	WarmUp time.Duration
}

// Indices sets up and prepares the store's indices, and knows the layout of
// each daily index. It is safe for concurrent use.
type Indices struct {
	cfg     Config
	names   Names
	client  *esclient.Client
	layouts *Layouts
}

// New manages the indices of cfg.Prefix through client.
func New(client *esclient.Client, cfg Config) *Indices {
	return &Indices{cfg: cfg, names: NewNames(cfg.Prefix), client: client, layouts: NewLayouts()}
}

// Names names the indices.
func (s *Indices) Names() Names { return s.names }

// Layouts knows which daily indices predate in-place indexing.
func (s *Indices) Layouts() *Layouts { return s.layouts }

// SetUp checks the cluster, installs the template, and brings the indices that
// already exist in line with it: their refresh interval (so the store's read
// lag holds for them), new mappings (additive changes only), no leftover purge
// block.
func (s *Indices) SetUp(ctx context.Context) error {
	ctx, cancel := s.client.Bounded(ctx)
	defer cancel()
	if err := s.client.Do(ctx, "check cluster", esapi.ClusterHealthRequest{}, nil); err != nil {
		return err
	}
	for _, t := range []struct {
		name     string
		template indexTemplate
	}{{s.names.Template(), newIndexTemplate(s.cfg)}, {s.names.RollupsTemplate(), newRollupsTemplate(s.cfg)}} {
		body, err := esclient.JSONBody(t.template)
		if err != nil {
			return err
		}
		if err := s.client.Do(ctx, "install index template", esapi.IndicesPutIndexTemplateRequest{
			Name: t.name, Body: body,
		}, nil); err != nil {
			return err
		}
	}
	if err := s.updateExistingMappings(ctx); err != nil {
		return err
	}
	// Fields added to the rollups' mappings reach their indices too.
	if err := s.updateExisting(ctx, "update mappings of existing rollups indices", func() esapi.Request {
		return esapi.IndicesPutMappingRequest{Index: []string{s.names.RollupsPattern()}, Body: bytes.NewReader(rollupMappings),
			AllowNoIndices: esapi.BoolPtr(true)}
	}, nil); err != nil {
		return err
	}
	existing := []string{s.names.ReadPattern(), s.names.RollupsPattern()}
	settings, err := json.Marshal(liveSettings(s.cfg))
	if err != nil {
		return fmt.Errorf("elastic: encode index settings: %w", err)
	}
	return s.updateExisting(ctx, "update settings of existing indices", func() esapi.Request {
		return esapi.IndicesPutSettingsRequest{Index: existing, Body: bytes.NewReader(settings), AllowNoIndices: esapi.BoolPtr(true)}
	}, nil)
}

// updateExistingMappings adds the current mappings' new fields to the indices
// that exist: legacyMappings to those created before in-place indexing (their
// request and response cannot become indexed), mappings.json's to the others.
// It remembers which are which for the store's writes.
func (s *Indices) updateExistingMappings(ctx context.Context) error {
	var existing map[string]indexMapping
	if err := s.updateExisting(ctx, "read mappings of existing indices", func() esapi.Request {
		return esapi.IndicesGetMappingRequest{Index: []string{s.names.ReadPattern()}, AllowNoIndices: esapi.BoolPtr(true), FilterPath: indexMappingFields}
	}, &existing); err != nil {
		return err
	}
	var legacy, current []string
	for index, m := range existing {
		if m.legacy() {
			legacy = append(legacy, index)
		} else {
			current = append(current, index)
		}
		s.layouts.Learn(index, m.legacy())
	}
	for _, update := range []struct {
		indices  []string
		mappings []byte
	}{{legacy, legacyMappings}, {current, existingMappings}} {
		for _, indices := range namesInURLs(update.indices) {
			// An index dropped since by another replica's purge needs no update.
			if err := s.updateExisting(ctx, "update mappings of existing indices", func() esapi.Request {
				return esapi.IndicesPutMappingRequest{
					Index: indices, Body: bytes.NewReader(update.mappings), IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true),
				}
			}, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxURLNames bounds the bytes of index names one request's URL lists:
// Elasticsearch refuses a request line over 4 KB (http.max_initial_line_length),
// and a year of daily indices is over 10 KB of names.
const maxURLNames = 3 << 10

// namesInURLs splits indices into lists that fit in a URL.
func namesInURLs(indices []string) [][]string {
	var lists [][]string
	for len(indices) > 0 {
		n, size := 0, 0
		for n < len(indices) && (n == 0 || size+len(indices[n])+1 <= maxURLNames) {
			size += len(indices[n]) + 1
			n++
		}
		lists = append(lists, indices[:n])
		indices = indices[n:]
	}
	return lists
}

// indexMapping is what the store reads of an index's mapping: whether its
// request is an unindexed object, as in every index created before in-place
// indexing (legacyMappings), never since.
type indexMapping struct {
	Mappings struct {
		Properties struct {
			Request struct {
				Enabled *bool `json:"enabled"`
			} `json:"request"`
		} `json:"properties"`
	} `json:"mappings"`
}

// indexMappingFields is the filter_path of the mapping reads: dynamic, which
// every template of reqlog sets, so that each of its indices is in the reply
// (an index of the pattern that no template of reqlog made is left alone).
var indexMappingFields = []string{"*.mappings.dynamic", "*.mappings.properties.request.enabled"}

func (m indexMapping) legacy() bool {
	e := m.Mappings.Properties.Request.Enabled
	return e != nil && !*e
}

// legacyMappings are mappings.json as an index created before in-place
// indexing can take them (template versions 1 and 2): request and response
// unindexed objects (enabled: false cannot be changed), path without its
// text sub-field; the writer sends the searched texts in "text" instead.
var legacyMappings = func() []byte {
	var m map[string]any
	if err := json.Unmarshal(mappings, &m); err != nil {
		panic("elastic: mappings.json: " + err.Error())
	}
	delete(m, "_source")
	props := m["properties"].(map[string]any)
	props["path"] = map[string]any{"type": "keyword"}
	for _, side := range []string{"request", "response"} {
		props[side] = map[string]any{"type": "object", "enabled": false}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		panic("elastic: legacy mappings: " + err.Error())
	}
	return raw
}()

// Layouts remembers, per daily index, whether it was created before in-place
// indexing: its documents must then carry the searched texts in the full-text
// field (esdoc.AppendWithText). Indices learn it at start-up for the indices
// that exist, when they create an index, and from the index's mapping the
// first time the store writes to any other (LearnLayouts).
type Layouts struct {
	mu     sync.RWMutex
	legacy map[string]bool // by index name; absent: not known yet
}

// NewLayouts knows no index yet.
func NewLayouts() *Layouts { return &Layouts{legacy: map[string]bool{}} }

// Lookup says whether index was created before in-place indexing, if known.
func (l *Layouts) Lookup(index string) (legacy, known bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	legacy, known = l.legacy[index]
	return legacy, known
}

// Learn notes the layout of index.
func (l *Layouts) Learn(index string, legacy bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.legacy[index] = legacy
}

// LearnLayouts learns the layout of every index msgs go to that the store
// does not know yet, with one read of their mappings. An index that does not
// exist yet stays unknown: the write creates it from whichever template the
// cluster holds (a replica of an earlier version may have put its own back),
// so the store sends such an index the full-text field, which both layouts
// take, and the next write learns what it became.
func (s *Indices) LearnLayouts(ctx context.Context, msgs []domain.Message) error {
	var indices []string
	days := Days{Names: s.names}
	for _, m := range msgs {
		if index, changed := days.Of(m); changed {
			indices = append(indices, index)
		}
	}
	return s.LearnIndexLayouts(ctx, indices)
}

// LearnIndexLayouts learns the layout of each of the indices named that
// exists and the store does not know yet, with one read of their mappings.
func (s *Indices) LearnIndexLayouts(ctx context.Context, indices []string) error {
	var unknown []string
	for _, index := range indices {
		if _, known := s.layouts.Lookup(index); !known && !slices.Contains(unknown, index) {
			unknown = append(unknown, index)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	ctx, cancel := s.client.Bounded(ctx)
	defer cancel()
	var found map[string]indexMapping
	if err := s.client.Do(ctx, "read the indices' mappings", esapi.IndicesGetMappingRequest{
		Index: unknown, IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true), FilterPath: indexMappingFields,
	}, &found); err != nil {
		return fmt.Errorf("elastic: append: %w", err)
	}
	for _, index := range unknown {
		if m, exists := found[index]; exists {
			s.layouts.Learn(index, m.legacy())
		}
	}
	return nil
}

// updateAttempts bounds how often updateExisting asks again.
const updateAttempts = 3

// updateExisting runs the request that request builds on the indices the read
// pattern matches. An index dropped while the pattern was being resolved (by the
// purge job of another replica) fails it with index_not_found, although that
// index needs no update: asking again resolves the pattern without it.
func (s *Indices) updateExisting(ctx context.Context, op string, request func() esapi.Request, out any) error {
	for attempt := 1; ; attempt++ {
		err := s.client.Do(ctx, op, request(), out)
		if !errors.Is(err, esclient.ErrIndexNotFound) || attempt == updateAttempts {
			return err
		}
	}
}

// createDays creates the daily indices of now's UTC day and the next if they
// are missing, and waits until their primaries are active. Otherwise the first
// write into a day's index creates it, which on a newly started or busy
// cluster took several seconds, longer than ShardWait: that day's first
// writes were refused, or held while the index was being created.
func (s *Indices) createDays(ctx context.Context, now time.Time) error {
	ctx, cancel := s.client.Bounded(ctx)
	defer cancel()
	for _, day := range []time.Time{now, now.AddDate(0, 0, 1)} {
		index := s.names.For(day)
		err := s.client.Do(ctx, "create the day's index", esapi.IndicesCreateRequest{
			Index: index, WaitForActiveShards: "1",
		}, nil)
		switch {
		case err == nil:
			s.layouts.Learn(index, false) // from the template
		case !errors.Is(err, esclient.ErrIndexExists):
			return err
		}
		// The day's rollups too: an Append marks them right after its messages.
		err = s.client.Do(ctx, "create the day's rollups index", esapi.IndicesCreateRequest{
			Index: s.names.RollupsFor(day), WaitForActiveShards: "1",
		}, nil)
		if err != nil && !errors.Is(err, esclient.ErrIndexExists) {
			return err
		}
	}
	return nil
}
