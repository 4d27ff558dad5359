// Package domain is reqlog's pure core: it turns submissions, as typed drafts
// (Drafts: what the HTTP API decodes a body into, or DraftsOf exchanges), into
// validated, normalised messages (required fields, timestamp units, canonical
// headers, masking, redaction, content types, identities) and holds the rules
// every store shares (visibility, retention, ordering, filters, cursors). Its
// validation errors name fields by their JSON paths ("[3].method"), the
// contract's language. Its sub-packages hold the statistics (stats) and
// alerting's rules, state machine and events (alerting), which build on its
// messages and filters.
// Bytes of JSON are read and written by its package jsonbytes only: the
// domain itself uses it to redact JSON bodies.
//
// It does no I/O and imports no framework or driver: time comes in as an argument,
// so the same rules run in the HTTP use cases, the store adapters and the
// conformance suite. The API contract these rules implement is
// shared/spec/CONTRACT.md; docs/contract.md maps each rule to its code.
package domain
