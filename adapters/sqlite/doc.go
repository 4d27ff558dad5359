// Package sqlite is the embedded message and alert store: SQLite through
// modernc.org/sqlite (pure Go, no cgo; chosen over ncruces/go-sqlite3 by
// measurement, docs/benchmarks.md "SQLite store"), one database file per UTC
// day in a data directory. It keeps the ports.MessageStore contract as the
// memory store does; the shared conformance suites (store, HTTP, faults) are
// the proof. It wires the pieces below into Store (ports.MessageStore and
// ports.HealthChecker: Append, List, Get, Lookup and the calls into the
// pieces), the alert store on its directory (NewAlertStore), Config, and
// Deferred for sqlitefx's modules; the pieces import one way, each only
// those above it:
//
//	sqlitedb  opening a file the one way: driver, writer and readers,
//	          private modes, marks, versions and their one ordered list of
//	          migrations, the classifier of errors, rows through the driver
//	dayfile   the data directory (lock, version, retention, free space) and
//	          its day files: schema/day-N.sql, what a file holds, Append's
//	          transaction, the word index, the query builder
//	daystats  the statistics, through the statistics engine
//	          (adapters/statsengine) it feeds: rollups and their hours'
//	          versions, narrow rows, the plan of a q of one word (its costs
//	          and probe in Config.Stats)
//	sqlitealert  the alert store: the alert file and its schema/alert-N.sql
//
// docs/sqlite-format.md describes the files by schema version.
//
// # Files
//
// The data directory (Config.Dir) holds messages-yyyy-mm-dd.db for each UTC
// day of the messages' CreatedAt (with SQLite's -wal and -shm beside it
// while it is open), reqlog-store.json (the schema version of the
// directory), reqlog.lock and the alert file, reqlog-alerts.sqlite.
// The lock file is flock'd while a store has the directory open, so a second
// process refuses to start with a message naming the directory; the kernel
// drops the lock of a process that dies, even by kill -9. A directory of a
// newer schema version is refused; an older one is migrated at start-up, file
// by file (PRAGMA user_version), before its version is written. Start-up
// opens and checks each day file in turn and closes it again. A file is
// marked with PRAGMA application_id, so a foreign SQLite file is refused;
// one too corrupt to open fails the start-up with an error naming it
// (other damage: "Damage" below). Nothing is ever reset.
//
// # Durability and locking
//
// Each day file has one writer connection, whose transactions are BEGIN
// IMMEDIATE, in WAL mode with synchronous=FULL: Append returns nil only after
// the commit of every day file its batch touches (a transaction each; a
// batch is mostly of one day, and of the classes of its retention rules).
// The service's group committer batches concurrent submissions in front of
// it, and the Appends that wait for a file's writer share its next
// transaction (dayfile.File.Append). Readers have a pool of their own
// connections with query_only set: in WAL mode a read never waits for the
// writer nor takes a lock the writer holds, and no read runs a statement
// that would need the write lock (journal_mode is set by the writer only).
// Every List, Get, Lookup and Stats is its own read transaction, so an export
// (a List per page) never pins the WAL: SQLite's automatic checkpoints keep
// it bounded, and journal_size_limit (Config.WALBytes) truncates it after.
//
// Writes are refused with ports.ErrUnavailable while the file system has
// less than Config.MinFreeBytes free (as Elasticsearch's flood-stage
// watermark): SQLite keeps room for its WAL and checkpoints, and the service
// answers 503 with Retry-After rather than fail halfway. A disk that fills
// anyway (SQLITE_FULL), an I/O error, a lock (never expected) are
// ports.ErrUnavailable too (sqlitedb.Error).
//
// # Damage
//
// A day file deleted, renamed or replaced under the store, or found corrupt
// by SQLite, is a fault of its day (dayfile/faults.go): an open file keeps
// the inode it was opened on, and Append compares the path's with it before
// and after each commit, so nothing is acknowledged into a file that is no
// longer the day's. The day's writes are then refused with
// ports.ErrUnavailable carrying a ports.Fault that names the file (the API's
// 503), Ping names it (/readyz), and it stays so until a restart; no
// connection ever creates a day file (mode=rw), so a deleted one is not
// made again empty. After start-up the newest Config.CheckDays files are
// read whole (PRAGMA quick_check) in the background, Ping failing until they
// are.
//
// # Retention
//
// PurgeExpired drops a whole day file once every message in it has expired
// (the file's one-row table day keeps its count and latest ExpiresAt,
// updated in each Append's transaction, and the directory keeps them in
// memory, so the purge decides without opening a file): connections closed,
// the file and its -wal and -shm deleted, so the disk space returns to the
// operating system at once. No row is ever deleted, nothing is vacuumed.
// The service refuses a retention longer than Config.MaxRetention, which
// bounds the days on disk.
//
// # Backup
//
// Backup copies a data directory, beside a store running on it or not, and
// Restore copies the backup into an empty one (backup.go): each SQLite file
// through SQLite (VACUUM INTO, its own read transaction, so writes go on),
// the others as they are, a day file unchanged since the last backup (its
// count of messages, last message and schema version) not again.
//
// # Reads
//
// List reads the days of the range newest first, each through its
// (account, domain, created, id) or (account, domain, name, created, id)
// index, keyset-paged on (created, id), and stops once the page is full and
// one more message is known. Get and Lookup probe each day's unique id index
// (or its reference index), newest first: an id derived from an
// Idempotency-Key does not tell its day. Ids are UUIDs, time-ordered
// (version 7) or derived from an Idempotency-Key, and unique in each day
// file by its index. References are unique by randomness alone: twelve
// characters of 62 (62^12, about 2^71) drawn for each message, so among a
// million stored the chance that any two share one is below 10^-9; no index
// spans the day files (MongoDB's unique index has no equivalent across
// files), and a file's reference index is not a unique one.
//
// # Search
//
// The contract's words are UAX #29 words (github.com/clipperhouse/uax29),
// which SQLite's tokenizers do not split alike (unicode61 splits ord_8f7d
// and example.com, keeps runs of ideographs together and folds accents). So
// each distinct word of the path, of the first domain.SearchedBodyBytes of
// each body and of each header value is indexed once per message as an
// eight-letter token of its hash, in lower case, in a contentless FTS5 table
// without positions (dayfile/words.go), and a q finds the messages holding
// all of its words' tokens. Every one of them is checked with domain.Search, the
// reference, which decides the phrase and rules out a hash collision. A day
// whose candidates are few (maxWordCandidates) is read by seq and sorted;
// past that, List walks the day's index newest first and checks each
// message, which fills a page of a frequent q sooner.
//
// # Statistics
//
// Each day file keeps a stats.Rollup per scope, application and minute of
// created_at (table rollups), added to in the transaction that stores the
// messages (a retry adds nothing: only messages newly stored count). Stats
// answers through the statistics engine (adapters/statsengine), which counts
// a query the rollups can answer (a scope or one application over a
// range) from them with stats.RollupBuilder, and streams only the
// minutes a rollup cannot stand for (an edge of the range, messages not
// visible yet or expired). It reads them hour by hour, ranking paths and
// routes from each hour's merge rather than from every minute of every
// application, and keeps a whole hour of the view (its buckets' parts, its
// applications, its rankings: at most 64 MiB of hours, least recently used
// out first, in the engine's cache) until a transaction writes a message
// created in that hour (the hour's version, daystats/hours.go): the
// portal's 24 h view then reads only
// the hour still filling. At start the service (app.Core) counts the
// default view of the eight busiest scopes in the background (WarmStats),
// so that the first chart after a restart is answered from kept hours too.
// Any other filter streams six columns (created, status, duration, name,
// path, route) of the matching messages of each day into stats.Builder from
// the messages_stats index, which holds every column the query reads, row
// by row through the driver (sqlitedb.EachRow). A q of one word is answered
// from the word index, with no message read whole, by a named plan
// (daystats/word.go) that picks whichever of three reads costs least in
// each day file: the messages holding the word read by seq (when they are
// few, or under a third of the scope's); the rollups less the messages
// lacking the word, read by seq (a word nearly every message holds, such as
// a content type; the day's rollups counted by the engine,
// statsengine.Engine.CountRollups, less the rest with
// stats.RollupBuilder.Subtract); or the statistics index
// walked, each entry's seq tested against the word's (a bit set). Reads by
// seq are taken only while the probe (by default a timing of 256 random
// seqs, the median of eight reads of 32) finds their pages in memory, since
// on disk a lookup costs a hundred times a walked row; its costs and the
// probe are Config.Stats. Any other q reads the messages holding its words
// whole and checks them. A call tells a daystats.Trace in its context what
// it read.
//
// # Schema versions
//
// A day file and the alert file record their schema version (PRAGMA
// user_version). Each kind has one ordered list of migrations
// (dayfile/schema/day-N.sql, sqlitealert/schema/alert-N.sql), which a new
// file runs from the first and an older one from its version, in one
// transaction, at start-up; the directory's reqlog-store.json is written
// once every day file is migrated.
//
// # Memory
//
// The directory keeps a handle of each day file (its day and totals, a few
// hundred bytes) and opens a file only when a call uses it (dayfile's
// cache): each open one holds one writer connection, whose page cache is
// Config.WriterCacheBytes (32 MiB: a batch's pages are written once, at
// commit, and the indexes' inner pages stay cached), and up to
// Config.Readers read connections with SQLite's default cache (2 MiB each),
// with their file descriptors. A file unused for Config.IdleTime (a minute)
// closes, as do the least recently used past Config.MaxOpenDays (8); a file
// in use is never closed under its user, and a statistics range is read one
// day at a time. The store's memory and open files are so bounded by
// MaxOpenDays times about 40 MiB, plus the 64 MiB of kept hours, whatever
// the days on disk and the messages stored (docs/benchmarks.md, "Many
// days").
package sqlite
