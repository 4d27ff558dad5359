// Package rules is what an account says is kept of its exchanges, and for how
// long: one versioned rule set of privacy rules (what is scrubbed), ingest rules
// (what is dropped, sampled or kept without bodies), retention rules (how long
// messages and their bodies are kept) and subject keys (which values name an
// end user, for erasure). Compile checks a RuleSet and builds its matchers
// once per version; Apply is the one pure function every write goes through,
// whatever captured the exchange (the API, the Go client and middleware, the
// proxy, the OTLP receiver), after domain validation and before the store.
//
// Apply's order, and why:
//
//  1. Ingest rules, on metadata only (application, method, path and route,
//     status, duration, a header's presence or value, source): first match
//     wins; errors (status ≥ 500 and 4xx) are kept unless a rule names them.
//     A dropped message is still counted in statistics (Outcome.Stored is
//     false, the caller writes its rollup).
//  2. Subject keys read the values that name an end user, before anything is
//     scrubbed, and keep only their keyed hashes (HMAC-SHA256 of the value
//     normalised: trimmed, lower case).
//  3. Privacy rules scrub, in order, built-ins first: a user rule acts on what
//     the ones before it left, and no rule can bring back what another masked.
//     A value is matched decoded (percent-encoded query and form values, JSON
//     held inside a JSON string) and written back encoded. A body the rules
//     cannot read within their limits is withheld, never stored unread.
//  4. Retention: the most specific matching rule (a route glob over an
//     application over the account's default) sets when the message and,
//     separately, its bodies expire.
//
// Selectors are dotted paths over the exchange (request.headers.x-token,
// query.token, request.body.user.email, body.**, **), a list of them any of
// which selects, with an except list. Sentry's Relay combines selectors with
// !, && and ||; its users write almost only "A || B" and "** && !A", which a
// list and an except list say in YAML without a grammar to learn.
package rules
