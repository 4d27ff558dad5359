// Package domain is reqlog's pure core: it turns submitted bodies into validated,
// normalised messages (required fields, timestamp units, canonical headers, masking,
// content types, identities) and holds the rules every store shares (visibility,
// retention, ordering, filters, cursors).
//
// It does no I/O and imports no framework or driver: time comes in as an argument,
// so the same rules run in the HTTP use cases, the store adapters and the
// conformance suite. The API contract these rules implement is
// shared/spec/CONTRACT.md; docs/contract.md maps each rule to its code.
package domain
