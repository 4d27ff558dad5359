-- Day file, schema version 7: a message's headers and bodies compressed
-- into one value (content.go: a coding byte, the length they inflate to,
-- a zstd frame). NULL for the messages already stored, and for those that
-- did not compress: their four text columns hold them as before, and a
-- compressed message's hold ''.
ALTER TABLE messages ADD COLUMN content BLOB;
