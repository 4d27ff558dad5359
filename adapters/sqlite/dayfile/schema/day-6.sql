-- Day file, schema version 6: the subject index (erasures, docs/erasure.md):
-- each keyed hash of a message's subject values (rules.SubjectHash, 32 hex
-- digits) under the message's seq; never the values. Read by hash, deleted
-- by seq with the message.
CREATE TABLE subjects (hash TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (hash, seq)) WITHOUT ROWID;
CREATE INDEX subjects_seq ON subjects(seq);
-- Whether the file's first erasure must VACUUM it: a file written before
-- this version, without secure_delete, may hold copies of a message in the
-- free space of its pages. A new file has no message yet, so 0.
CREATE TABLE erasure (vacuum_first INTEGER NOT NULL);
INSERT INTO erasure SELECT count(*) > 0 FROM (SELECT 1 FROM messages LIMIT 1);
