-- Day file, schema version 1: a new day file runs this and every later
-- migration in order (day-2.sql, ...); docs/sqlite-format.md shows the
-- result.
--
-- messages: times are Unix microseconds; duration is microseconds, NULL
-- without one; headers are JSON objects of name -> values. seq is the rowid
-- the word index refers to.
CREATE TABLE messages (
	seq INTEGER PRIMARY KEY,
	id TEXT NOT NULL,
	reference TEXT NOT NULL,
	account TEXT NOT NULL,
	domain TEXT NOT NULL,
	name TEXT NOT NULL,
	ip_address TEXT NOT NULL,
	method TEXT NOT NULL,
	path TEXT NOT NULL,
	status INTEGER NOT NULL,
	duration INTEGER,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	visible INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	request_header TEXT NOT NULL,
	request_body TEXT NOT NULL,
	request_type TEXT NOT NULL,
	request_size INTEGER NOT NULL,
	response_header TEXT NOT NULL,
	response_body TEXT NOT NULL,
	response_type TEXT NOT NULL,
	response_size INTEGER NOT NULL
);
CREATE UNIQUE INDEX messages_id ON messages(id);
CREATE INDEX messages_reference ON messages(reference);
CREATE INDEX messages_scope ON messages(account, domain, created, id);
CREATE INDEX messages_name ON messages(account, domain, name, created, id);

-- The word index: each distinct word of a message's searched texts once, as
-- an eight-letter token of its hash, under the message's seq; contentless,
-- without positions.
CREATE VIRTUAL TABLE words USING fts5(w, content='', columnsize=0, detail=none, tokenize='ascii');

-- One row: how many messages the file holds and the latest expires among
-- them, so that retention decides to drop the file without reading it.
CREATE TABLE day (messages INTEGER NOT NULL, max_expires INTEGER NOT NULL);
INSERT INTO day VALUES (0, 0);
