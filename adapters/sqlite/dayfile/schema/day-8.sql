-- Day file, schema version 8: what ingest rules drop and keep of a sample.
--
-- tallies: one row an exchange an ingest rule dropped (domain.Message.Tally),
-- its metadata alone, scrubbed: no headers, no bodies, no word index. It is
-- counted in the rollups with the messages, in the same transaction, and read
-- only by the statistics; no read of messages returns it. Clustered by what
-- the statistics walk (the scope, then created); tallies_id keeps Append
-- idempotent per id. Times and durations as in messages.
CREATE TABLE tallies (
	account TEXT NOT NULL,
	domain TEXT NOT NULL,
	created INTEGER NOT NULL,
	id TEXT NOT NULL,
	name TEXT NOT NULL,
	ip_address TEXT NOT NULL,
	method TEXT NOT NULL,
	path TEXT NOT NULL,
	route TEXT,
	status INTEGER NOT NULL,
	duration INTEGER,
	visible INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	PRIMARY KEY (account, domain, created, id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX tallies_id ON tallies(id);
-- The subject index of the tallies (a tally's path or name may hold a
-- subject's value): each keyed hash under the tally's id, as subjects holds
-- the messages'; an erasure deletes a subject's tallies by it.
CREATE TABLE tally_subjects (hash TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (hash, id)) WITHOUT ROWID;
CREATE INDEX tally_subjects_id ON tally_subjects(id);

-- The rate of a message a sample rule kept (1 in sample_rate), 0 for the
-- others.
ALTER TABLE messages ADD COLUMN sample_rate INTEGER NOT NULL DEFAULT 0;
