package domain

import "time"

// The decoder of POST bodies lives at the edge (adapters/httpapi), which
// imports this package, so the external test package hands it in
// (decode_edge_test.go): the tests written in the contract's JSON run the
// service's own decoding before the validator.
var (
	// DecodeBody decodes a POST body into drafts that point into the body and
	// into memory of their own.
	DecodeBody func(body []byte, maxItems int) (Drafts, error)
	// ParseBody decodes a POST body into drafts and validates them, as POST
	// /v1/messages does, reusing the decoder's buffers from one call to the next.
	ParseBody func(v Validator, body []byte, now time.Time) (Batch, error)
)

// parse decodes body as the HTTP API does and validates it under p.
func (p Policy) parse(body []byte, now time.Time) (Batch, error) {
	return p.Validator().parse(body, now)
}

// parse decodes body as the HTTP API does and validates it.
func (vs Validator) parse(body []byte, now time.Time) (Batch, error) {
	return ParseBody(vs, body, now)
}
