// Package esdoc is the stored document: a message's record
// (adapters/record, shared with the MongoDB store) as a bulk create
// writes it and as _source reads back. Times are the API's strings (UTC,
// six fractional digits), exact at the microsecond the domain keeps, and
// indexed as date_nanos; a message whose times date_nanos cannot hold is
// refused before anything is sent (CheckStorable).
package esdoc
