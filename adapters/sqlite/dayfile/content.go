package dayfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Since schema version 7 a message's headers and bodies are stored as one
// compressed value, the column content, and its four text columns hold
// empty strings. The value is
//
//	codingZstd | uvarint: the payload's length | zstd frame of the payload
//	codingZstdDict | uvarint: the dictionary's id | uvarint: the payload's length | zstd frame
//
// and the payload is the lengths of the request's header, the request's
// body and the response's header as uvarints, then the four texts one
// after the other (the response's body takes the rest). A message stored
// before version 7, or whose value would not be smaller than its texts
// (random or already compressed bodies), has a NULL content and its texts
// in their columns. One frame per row, without a dictionary until the day
// file has one (schema version 11, dictionary.go), with it from then on:
// the measurements that chose it are in docs/benchmarks.md ("Compressed
// exchanges", "Dictionaries").
const (
	codingZstd     = 1
	codingZstdDict = 2
)

// maxPayloadBytes bounds a payload: past it a message is stored as text.
// A value declaring more is corrupt, and is not inflated.
const maxPayloadBytes = 1 << 30

// maxInflation bounds the length a zstd frame may declare from its own
// length: its densest form is a 3-byte block header and one byte repeated
// over a block of 128 KiB. A declared length past it is corrupt, and
// nothing is allocated for it.
const maxInflation = (128 << 10) / 3

// codec is the zstd encoder and decoder every day file shares: both are
// safe for concurrent use (EncodeAll, DecodeAll). The fastest level: the
// default one saves 7 % more of the bytes for 50 % more CPU a message
// (docs/benchmarks.md).
type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

var sharedCodec = sync.OnceValue(func() codec {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
	if err != nil {
		panic(fmt.Sprintf("dayfile: zstd encoder: %v", err)) // fixed, valid options
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxPayloadBytes), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		panic(fmt.Sprintf("dayfile: zstd decoder: %v", err))
	}
	return codec{enc: enc, dec: dec}
})

// texts are what a content value holds of a message: its headers as
// stored (JSON objects) and its bodies.
type texts struct {
	requestHeader, requestBody, responseHeader, responseBody []byte
}

// packer compresses messages' texts, reusing its buffers from one message
// to the next: a value it returns is valid until its next call. With a
// dictionary it writes codingZstdDict, without one codingZstd.
type packer struct {
	payload, value []byte
	dict           *dictCodec
}

// pack returns the content value of a message's headers (as stored) and
// bodies, or nil when it is not smaller than they are, and they are then
// stored as they are.
func (p *packer) pack(requestHeader []byte, requestBody string, responseHeader []byte, responseBody string) []byte {
	size := len(requestHeader) + len(requestBody) + len(responseHeader) + len(responseBody)
	if size > maxPayloadBytes {
		return nil
	}
	p.payload = binary.AppendUvarint(p.payload[:0], uint64(len(requestHeader)))
	p.payload = binary.AppendUvarint(p.payload, uint64(len(requestBody)))
	p.payload = binary.AppendUvarint(p.payload, uint64(len(responseHeader)))
	p.payload = append(append(append(append(p.payload, requestHeader...), requestBody...), responseHeader...), responseBody...)
	enc := sharedCodec().enc
	if p.dict != nil {
		enc = p.dict.enc
		p.value = binary.AppendUvarint(append(p.value[:0], codingZstdDict), uint64(p.dict.id))
	} else {
		p.value = append(p.value[:0], codingZstd)
	}
	p.value = binary.AppendUvarint(p.value, uint64(len(p.payload)))
	p.value = enc.EncodeAll(p.payload, p.value)
	if len(p.value) >= size {
		return nil
	}
	return p.value
}

// errCorruptContent is the error of a content value that does not read.
var errCorruptContent = errors.New("corrupt")

// unpack reads a content value, of codingZstdDict with the dictionary
// dict finds by its id (nil: none): the payload is inflated into a buffer
// of the length the value declares, and never past it.
func unpack(value []byte, dict func(id uint64) *dictCodec) (texts, error) {
	if len(value) == 0 || value[0] != codingZstd && value[0] != codingZstdDict {
		return texts{}, fmt.Errorf("%w: unknown coding", errCorruptContent)
	}
	dec, rest := sharedCodec().dec, value[1:]
	if value[0] == codingZstdDict {
		id, n := binary.Uvarint(rest)
		var d *dictCodec
		if n > 0 && dict != nil {
			d = dict(id)
		}
		if d == nil {
			return texts{}, fmt.Errorf("%w: dictionary %d is not in the file", errCorruptContent, id)
		}
		dec, rest = d.dec, rest[n:]
	}
	size, n := binary.Uvarint(rest)
	frame := rest[max(n, 0):]
	if n <= 0 || size > maxPayloadBytes || size > uint64(len(frame))*maxInflation {
		return texts{}, fmt.Errorf("%w: a length of %d for a frame of %d bytes", errCorruptContent, size, len(frame))
	}
	payload, err := dec.DecodeAll(frame, make([]byte, 0, size))
	if err != nil {
		return texts{}, fmt.Errorf("%w: %w", errCorruptContent, err)
	}
	if uint64(len(payload)) != size {
		return texts{}, fmt.Errorf("%w: %d bytes inflated, %d declared", errCorruptContent, len(payload), size)
	}
	var lengths [3]uint64
	rest = payload
	for i := range lengths {
		length, n := binary.Uvarint(rest)
		if n <= 0 || length > uint64(len(rest)-n) {
			return texts{}, fmt.Errorf("%w: text %d's length", errCorruptContent, i+1)
		}
		lengths[i], rest = length, rest[n:]
	}
	if lengths[0]+lengths[1]+lengths[2] > uint64(len(rest)) {
		return texts{}, fmt.Errorf("%w: the texts' lengths exceed the payload", errCorruptContent)
	}
	var t texts
	t.requestHeader, rest = rest[:lengths[0]], rest[lengths[0]:]
	t.requestBody, rest = rest[:lengths[1]], rest[lengths[1]:]
	t.responseHeader, t.responseBody = rest[:lengths[2]], rest[lengths[2]:]
	return t, nil
}
