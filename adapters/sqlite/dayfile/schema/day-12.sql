-- Day file, schema version 12: whether an erasure deleted from the file
-- since the erasure job's expunge last zeroed its free pages (1: owed,
-- freepages.go). Appends free pages with secure_delete FAST, which leaves
-- their bytes in them: FTS5's automerges, a page split, a Hide's update.
-- A file written before may hold what an earlier erasure deleted in its
-- free pages: owed once when it holds messages.
ALTER TABLE erasure ADD COLUMN free_owed INTEGER NOT NULL DEFAULT 0;
UPDATE erasure SET free_owed = (SELECT count(*) > 0 FROM (SELECT 1 FROM messages LIMIT 1));
-- Where ZeroFreePages writes zeros over every free page, then deletes them
-- with secure_delete on, in one transaction: always empty between them.
CREATE TABLE free_fill (zeros BLOB NOT NULL);
