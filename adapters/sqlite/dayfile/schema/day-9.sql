-- Day file, schema version 9: retention classes (docs/rules.md).
--
-- class: one row in the file of a retention rule's messages (its name has the
-- class, file.go), none in a file of the policy's class: the rule's account
-- and id, which the purge asks the rule's current retention of; the last seq
-- whose bodies the purge took out (0: none), so that it takes out those of
-- messages appended since, and no others again; and the last seq whose bodies
-- have left the file's bytes (VACUUM), which a kill between the two leaves
-- behind, for the next purge.
CREATE TABLE class (account TEXT NOT NULL, rule TEXT NOT NULL, bodies_cleared INTEGER NOT NULL DEFAULT 0,
	bodies_expunged INTEGER NOT NULL DEFAULT 0);

-- When a message's bodies expire (domain.Message.BodiesExpireAt, Unix
-- microseconds), 0 when they go with the message: reads leave them out from
-- then on, before the purge takes them out.
ALTER TABLE messages ADD COLUMN bodies_expires INTEGER NOT NULL DEFAULT 0;
