-- Rollups file, schema version 1: the rollups of the day files retention
-- dropped, as their table rollups held them (schema/day-3.sql): one
-- stats.Rollup per scope, application and minute of created (Unix
-- seconds), in adapters/rollupcodec's encoding. Deleted past the rollup
-- retention.
CREATE TABLE rollups (
	account TEXT NOT NULL,
	domain TEXT NOT NULL,
	minute INTEGER NOT NULL,
	name TEXT NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (account, domain, minute, name)
) WITHOUT ROWID;
