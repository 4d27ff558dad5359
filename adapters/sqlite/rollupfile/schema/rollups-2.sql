-- Rollups file, schema version 2: a day's rollups kept per part, the
-- retention class of the day file they came from ('' the policy's;
-- dayfile.ClassName), in the primary key: a day's class files are dropped
-- at different times, and each keeps its own rollup of a minute and
-- application beside the others' instead of replacing them. The readers
-- merge a minute's rollups across parts. The rows of version 1 came from
-- the policy's files, the only ones then.
CREATE TABLE rollups_by_part (
	account TEXT NOT NULL,
	domain TEXT NOT NULL,
	minute INTEGER NOT NULL,
	name TEXT NOT NULL,
	part TEXT NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (account, domain, minute, name, part)
) WITHOUT ROWID;
INSERT INTO rollups_by_part(account, domain, minute, name, part, data)
	SELECT account, domain, minute, name, '', data FROM rollups;
DROP TABLE rollups;
ALTER TABLE rollups_by_part RENAME TO rollups;
