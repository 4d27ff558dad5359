-- Day file, schema version 2: the statistics index, holding every column
-- the statistics read of a message, so that they walk an index rather than
-- the rows.
CREATE INDEX messages_stats ON messages(account, domain, created, visible, expires, status, duration, name, path);
