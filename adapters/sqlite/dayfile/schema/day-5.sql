-- Day file, schema version 5: each message's rules record (domain.RulesRecord
-- as JSON: the rule set version that wrote it, its source, the version a
-- re-scrub applied, which rules changed which fields); NULL for the messages
-- stored before, which read as written under no rule set.
ALTER TABLE messages ADD COLUMN rules TEXT;
