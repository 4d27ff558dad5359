-- Day file, schema version 4: the route template column, NULL for the
-- messages already stored (sent before routes were kept) and for those
-- without one, and the statistics index rebuilt with it. The rollups need
-- nothing: those written before read as minutes without routes (encoding
-- version 1), which they are.
ALTER TABLE messages ADD COLUMN route TEXT;
DROP INDEX messages_stats;
CREATE INDEX messages_stats ON messages(account, domain, created, visible, expires, status, duration, name, path, route);
