-- Day file, schema version 3: one stats.Rollup per scope, application and
-- minute of created (Unix seconds), in adapters/rollupcodec's encoding,
-- added to in the transaction that stores the messages. The migration then
-- fills it with the rollups of the messages already stored.
CREATE TABLE rollups (
	account TEXT NOT NULL,
	domain TEXT NOT NULL,
	minute INTEGER NOT NULL,
	name TEXT NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (account, domain, minute, name)
) WITHOUT ROWID;
