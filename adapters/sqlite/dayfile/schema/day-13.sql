-- Day file, schema version 13: a message's subject hashes are terms of the
-- word index (words), beside its words, as subject tokens (subjects.go:
-- never a word's token), and its row keeps them in subject_tokens,
-- space-separated (NULL: none), for what reads them by seq and for the
-- 'delete' a contentless index needs. FTS5 writes a transaction's terms as
-- one sorted segment, where a table keyed by hash put each message's hashes
-- on pages of their own. The subjects table stays: a file written before
-- keeps its rows there, and every reader reads both; nothing writes it now.
ALTER TABLE messages ADD COLUMN subject_tokens TEXT;
