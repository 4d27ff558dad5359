// Package jsonbytes is reqlog's one place for JSON at the byte level: it
// validates documents (answering as json.Valid does, with a bound on nesting),
// walks well-formed ones without decoding them, unquotes strings and quotes
// them exactly as encoding/json does, and tests eight bytes at a time for the
// bytes a string cannot hold as they are. The domain redacts JSON bodies with
// it, the HTTP API decodes submissions and writes its replies with it, and the
// stores write their documents with it.
//
// It imports the standard library only, so that the domain can use it. It is
// written by hand rather than on encoding/json/jsontext because one pass here
// does what the callers need together (the nesting bound, the ends of long
// values, the values under chosen keys), and because the module then needs
// neither GOEXPERIMENT=jsonv2 nor a newer Go; docs/benchmarks.md ("One JSON
// package") has the measurements against jsontext.
//
// Functions that walk a document without checking it (StringEnd, ValueEnd,
// Members, Elements, Unquote, AppendUnquoted) expect well-formed JSON, as Check
// accepts it; on other input they return without reading past the end.
package jsonbytes
