-- The journal of erasures (domain/erasure): one row per erasure, its
-- record as JSON (who asked, when, its state and counts, the subjects'
-- keyed hashes; never their values), replaced as the erasure goes on.
CREATE TABLE IF NOT EXISTS erasures (account TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (account, id));
