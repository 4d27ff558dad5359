package dayfile

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// A day file compresses its messages with a dictionary (schema version 11)
// once it holds dictionarySamples of them: a raw zstd dictionary (content
// alone, nothing trained) of the distinct skeletons of its first
// dictionarySamples messages' headers and bodies (appendSkeleton), at most
// maxDictionaryBytes, the most frequent last (zstd reaches the end of a
// dictionary cheapest). Built in the Append that finds the file has them,
// in its transaction, from rows it reads back: a few milliseconds once a
// file. The messages before it stay in codingZstd; those after are written
// in codingZstdDict. It holds names (header names, JSON member names) and
// punctuation, never a value: an erasure leaves nothing of a message's
// values in it (docs/erasure.md).
const (
	dictionarySamples  = 200
	maxDictionaryBytes = 32 << 10
	// minDictionaryBytes: skeletons shorter in all (texts that are not
	// JSON) make no dictionary: the file keeps codingZstd, and its row in
	// dictionaries, of an empty content, says so.
	minDictionaryBytes = 64
)

// dictCodec compresses with one of a day file's dictionaries and inflates
// what it compressed. Both are safe for concurrent use (EncodeAll,
// DecodeAll).
type dictCodec struct {
	id  uint32
	enc *zstd.Encoder
	dec *zstd.Decoder
}

func newDictCodec(id uint32, content []byte) (*dictCodec, error) {
	// One encoder: a file's writes are one at a time (its one writer).
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true),
		zstd.WithEncoderConcurrency(1), zstd.WithEncoderDictRaw(id, content))
	if err != nil {
		return nil, fmt.Errorf("dictionary %d: %w", id, err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxPayloadBytes), zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderDictRaw(id, content))
	if err != nil {
		return nil, fmt.Errorf("dictionary %d: %w", id, err)
	}
	return &dictCodec{id: id, enc: enc, dec: dec}, nil
}

// dictionaries are a day file's, by id; nil when it has none.
type dictionaries map[uint64]*dictCodec

// get is the dictionary of id, nil when there is none.
func (d dictionaries) get(id uint64) *dictCodec { return d[id] }

// newest is the dictionary new rows are written with: the highest id, nil
// for none.
func (d dictionaries) newest() *dictCodec {
	var newest *dictCodec
	for _, c := range d {
		if newest == nil || c.id > newest.id {
			newest = c
		}
	}
	return newest
}

// readDictionaries reads a file's dictionaries (table dictionaries), each
// made a codec; built says it has made them (an empty content is the mark
// that it has none).
func readDictionaries(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (d dictionaries, built bool, err error) {
	rows, err := q.QueryContext(ctx, `SELECT id, content FROM dictionaries`)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      uint32
			content []byte
		)
		if err := rows.Scan(&id, &content); err != nil {
			return nil, false, err
		}
		built = true
		if len(content) == 0 {
			continue
		}
		c, err := newDictCodec(id, content)
		if err != nil {
			return nil, false, err
		}
		if d == nil {
			d = dictionaries{}
		}
		d[uint64(id)] = c
	}
	return d, built, rows.Err()
}

// fileDictionaries are what a File knows of its dictionaries while open.
type fileDictionaries struct {
	byID dictionaries
	// built: the file has made its dictionary (or found it could not):
	// no Append tries again.
	built bool
}

// dictionaries returns the file's dictionaries, read at their first use
// after the file opened. The caller holds the file.
func (f *File) dictionaries(ctx context.Context) (*fileDictionaries, error) {
	if d := f.dicts.Load(); d != nil {
		return d, nil
	}
	return f.readDictionaries(ctx)
}

// readDictionaries reads the file's dictionaries as committed, and keeps
// them unless what the file knows is as new.
func (f *File) readDictionaries(ctx context.Context) (*fileDictionaries, error) {
	f.dictsMu.Lock()
	defer f.dictsMu.Unlock()
	byID, built, err := readDictionaries(ctx, f.Read)
	if err != nil {
		return nil, fmt.Errorf("its compression dictionaries: %w", err)
	}
	return f.noteDictionaries(&fileDictionaries{byID: byID, built: built}), nil
}

// noteDictionaries keeps d as what the file knows of its dictionaries
// unless what it knows is as new (they are only ever added to): a read
// that began before an Append made one must not undo it. It returns what
// the file knows.
func (f *File) noteDictionaries(d *fileDictionaries) *fileDictionaries {
	for {
		old := f.dicts.Load()
		if old != nil && (old.built || !d.built) && len(old.byID) >= len(d.byID) {
			return old
		}
		if f.dicts.CompareAndSwap(old, d) {
			return d
		}
	}
}

// dictionary is the file's dictionary of id, nil when it has none: one
// not among those read is looked for again, since a reader may meet a row
// of a dictionary made after it read them.
func (f *File) dictionary(id uint64) *dictCodec {
	if d := f.dicts.Load(); d != nil && d.byID[id] != nil {
		return d.byID[id]
	}
	d, err := f.readDictionaries(context.Background())
	if err != nil {
		return nil // the read fails naming the message and the dictionary
	}
	return d.byID[id]
}

// RowReader reads the rows of a day file open outside a Dir (tools and
// tests), with the file's dictionaries.
type RowReader struct{ dicts dictionaries }

// NewRowReader reads the dictionaries of the day file db is open on.
func NewRowReader(ctx context.Context, db *sql.DB) (RowReader, error) {
	d, _, err := readDictionaries(ctx, db)
	return RowReader{d}, err
}

// ScanMessage reads a row of MessageColumns, then of extra's columns into
// extra.
func (r RowReader) ScanMessage(row Scanner, extra ...any) (domain.Message, error) {
	return scanMessage(row, r.dicts.get, extra...)
}

// ScanMessage reads a row of MessageColumns of the file, then of extra's
// columns into extra.
func (f *File) ScanMessage(row Scanner, extra ...any) (domain.Message, error) {
	return scanMessage(row, f.dictionary, extra...)
}

// dictionaryFor is the dictionary an Append writes its rows with: the
// file's newest, or one built now in tx when the file holds
// dictionarySamples messages and has none, which is the file's once tx
// commits (keep). Nil: codingZstd.
func (f *File) dictionaryFor(ctx context.Context, tx *sql.Tx) (codec *dictCodec, keep func(), err error) {
	keep = func() {}
	if f.plain || f.noDictionary {
		return nil, keep, nil
	}
	d, err := f.dictionaries(ctx)
	if err != nil || d.built || f.messages.Load() < dictionarySamples {
		if d != nil {
			codec = d.byID.newest()
		}
		return codec, keep, err
	}
	// What tx reads is the file's: a dictionary made is never made again.
	byID, built, err := readDictionaries(ctx, tx)
	if err != nil || built {
		known := &fileDictionaries{byID: byID, built: true}
		return byID.newest(), func() { f.noteDictionaries(known) }, err
	}
	content, samples, err := skeletonDictionary(ctx, tx)
	if err != nil || samples < dictionarySamples {
		return nil, keep, err
	}
	const id = 1
	if len(content) < minDictionaryBytes {
		content = nil
	} else if codec, err = newDictCodec(id, content); err != nil {
		return nil, keep, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO dictionaries(id, content) VALUES (?, coalesce(?, x''))`, id, content); err != nil {
		return nil, keep, fmt.Errorf("its dictionary: %w", err)
	}
	made := &fileDictionaries{built: true}
	if codec != nil {
		made.byID = dictionaries{id: codec}
	}
	return codec, func() { f.noteDictionaries(made) }, nil
}

// skeletonDictionary is the content of a dictionary of the file's first
// dictionarySamples messages (fewer when it holds fewer: samples says how
// many), read in tx: their distinct skeletons, the most frequent last, at
// most maxDictionaryBytes.
func skeletonDictionary(ctx context.Context, tx *sql.Tx) (content []byte, samples int, err error) {
	// Counted first: a file of tallies may hold fewer for long.
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM messages LIMIT ?)`, dictionarySamples).Scan(&samples); err != nil || samples < dictionarySamples {
		return nil, samples, err
	}
	samples = 0
	rows, err := tx.QueryContext(ctx, `SELECT request_header, request_body, response_header, response_body, content
		FROM messages ORDER BY seq LIMIT ?`, dictionarySamples)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var t [4][]byte
		var value []byte
		if err := rows.Scan(&t[0], &t[1], &t[2], &t[3], &value); err != nil {
			return nil, 0, err
		}
		samples++
		if value != nil {
			u, err := unpack(value, nil) // no dictionary yet: every row is codingZstd
			if err != nil {
				continue // its reads fail naming it; the appends go on
			}
			t = [4][]byte{u.requestHeader, u.requestBody, u.responseHeader, u.responseBody}
		}
		var s []byte
		for _, text := range t {
			s = appendSkeleton(s, text)
		}
		counts[string(s)]++
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	skeletons := make([]string, 0, len(counts))
	for s := range counts {
		skeletons = append(skeletons, s)
	}
	// The most frequent first, ties by their bytes: the same rows make the
	// same dictionary.
	slices.SortFunc(skeletons, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	// Laid out from the end: the most frequent nearest to it.
	var kept []string
	size := 0
	for _, s := range skeletons {
		if size+len(s) > maxDictionaryBytes {
			continue
		}
		kept, size = append(kept, s), size+len(s)
	}
	for i := len(kept) - 1; i >= 0; i-- {
		content = append(content, kept[i]...)
	}
	return content, samples, nil
}

// skeletonDepth bounds how deep appendSkeleton follows nested JSON.
const skeletonDepth = 32

// appendSkeleton appends the structure of the JSON document raw with every
// value blanked: member names and punctuation kept, each string "" and
// each number 0 (true, false and null are kept: they name no one). A text
// that is not JSON appends nothing. A day file's dictionary is trained on
// skeletons alone, so that it holds no header value and no JSON value of
// any message: an erased message's values cannot survive in it.
func appendSkeleton(dst, raw []byte) []byte {
	if !jsonbytes.IsValid(raw) {
		return dst
	}
	return appendSkeletonOf(dst, trimJSONSpace(raw), skeletonDepth)
}

func trimJSONSpace(raw []byte) []byte {
	start := jsonbytes.SkipSpace(raw, 0)
	end := len(raw)
	for end > start && jsonbytes.IsSpace(raw[end-1]) {
		end--
	}
	return raw[start:end]
}

func appendSkeletonOf(dst, raw []byte, depth int) []byte {
	switch jsonbytes.KindOf(raw) {
	case jsonbytes.Object:
		if depth == 0 {
			return append(dst, "{}"...)
		}
		dst = append(dst, '{')
		first := true
		for key, value := range jsonbytes.Members(raw, nil) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(append(dst, key...), ':')
			dst = appendSkeletonOf(dst, value, depth-1)
		}
		return append(dst, '}')
	case jsonbytes.Array:
		if depth == 0 {
			return append(dst, "[]"...)
		}
		dst = append(dst, '[')
		first := true
		for element := range jsonbytes.Elements(raw, nil) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendSkeletonOf(dst, element, depth-1)
		}
		return append(dst, ']')
	case jsonbytes.String:
		return append(dst, `""`...)
	case jsonbytes.Number:
		return append(dst, '0')
	}
	return append(dst, raw...) // true, false, null
}
