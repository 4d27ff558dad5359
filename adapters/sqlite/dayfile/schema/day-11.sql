-- Day file, schema version 11: the file's compression dictionary
-- (dictionary.go): a raw zstd dictionary of the skeletons of its first
-- messages' headers and bodies (names and punctuation, no value), made
-- once the file holds enough of them; the rows written after it name its
-- id (content.go's coding 2). An empty content: the file has none, and
-- its rows stay in coding 1. The rows stored before read as they are.
CREATE TABLE dictionaries (id INTEGER PRIMARY KEY, content BLOB NOT NULL);
