-- Day file, schema version 5: the subject index (erasures, docs/erasure.md):
-- each keyed hash of a message's subject values (rules.SubjectHash, 32 hex
-- digits) under the message's seq; never the values. Read by hash, deleted
-- by seq with the message.
CREATE TABLE subjects (hash TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (hash, seq)) WITHOUT ROWID;
CREATE INDEX subjects_seq ON subjects(seq);
