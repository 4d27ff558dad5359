// Package dayfile is the SQLite store's data directory and its day files:
// one SQLite file per UTC day of the messages' CreatedAt, each opened,
// created and migrated the one way (sqlitedb) from its ordered list of
// migrations (schema/day-N.sql), what a day file holds and how it is
// written (the messages, their words, the rollups, the day's totals, in one
// transaction per batch: File.Append), and the directory that holds them
// (Dir: its lock, its schema version, a handle of each day file and the
// few open ones (cache.go), the free-space check, retention by whole files
// decided from the days' totals in memory: Dir.PurgeExpired). Readers build their
// queries with Where over a File's read connections.
//
// docs/sqlite-format.md describes the files by schema version.
package dayfile
