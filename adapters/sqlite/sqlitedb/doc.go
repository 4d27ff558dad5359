// Package sqlitedb opens reqlog's SQLite files the one way the SQLite store
// keeps them: modernc.org/sqlite's driver (pure Go), one writer connection
// whose transactions are BEGIN IMMEDIATE, in WAL mode with
// synchronous=FULL, beside a pool of query_only readers (DB); files their
// owner's only; each kind of file marked (PRAGMA application_id) and
// versioned (PRAGMA user_version), with one ordered list of migrations
// (Schema); one classifier of SQLite's and the file system's errors into
// the ports' sentinels (Error); and rows read through the driver without
// database/sql's copies (EachRow).
//
// The day files (adapters/sqlite/dayfile) and the alert file are its
// users; it knows neither.
package sqlitedb
