-- Day file, schema version 10: whether an erasure left tombstones in the word
-- index that the erasure job's expunge has not merged away yet (1: its FTS5
-- 'optimize' is owed). Kept in the file, in the deletion's transaction, so
-- that a process killed between the two still merges them at its next run.
ALTER TABLE erasure ADD COLUMN words_owed INTEGER NOT NULL DEFAULT 0;
