-- The alert file, schema version 1 (docs/sqlite-format.md): each record as
-- its alertrecord struct's JSON (doc), beside the columns queries filter and
-- sort on. Times are Unix microseconds. IF NOT EXISTS: the same statements
-- take an alert file written before files of its kind had a version (0) to
-- version 1.
CREATE TABLE IF NOT EXISTS rules (id TEXT PRIMARY KEY, account TEXT NOT NULL, domain TEXT NOT NULL, created_at INTEGER NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS rules_scope ON rules(account, domain, created_at, id);
CREATE TABLE IF NOT EXISTS endpoints (id TEXT PRIMARY KEY, account TEXT NOT NULL, domain TEXT NOT NULL, created_at INTEGER NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS endpoints_scope ON endpoints(account, domain, created_at, id);
CREATE TABLE IF NOT EXISTS states (rule_id TEXT PRIMARY KEY, account TEXT NOT NULL, domain TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS transitions (rule_id TEXT NOT NULL, seq INTEGER NOT NULL, account TEXT NOT NULL, domain TEXT NOT NULL,
	at INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (rule_id, seq));
CREATE INDEX IF NOT EXISTS transitions_at ON transitions(at);
CREATE TABLE IF NOT EXISTS deliveries (id TEXT PRIMARY KEY, account TEXT NOT NULL, domain TEXT NOT NULL, status TEXT NOT NULL,
	next_attempt_at INTEGER NOT NULL, lease_owner TEXT NOT NULL, lease_until INTEGER NOT NULL, updated_at INTEGER NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries(status, next_attempt_at, id);
CREATE INDEX IF NOT EXISTS deliveries_updated ON deliveries(updated_at);
CREATE INDEX IF NOT EXISTS deliveries_account ON deliveries(account, status, next_attempt_at, id);
CREATE TABLE IF NOT EXISTS attempts (id TEXT PRIMARY KEY, account TEXT NOT NULL, domain TEXT NOT NULL, endpoint_id TEXT NOT NULL,
	at INTEGER NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS attempts_endpoint ON attempts(account, domain, endpoint_id, at, id);
CREATE INDEX IF NOT EXISTS attempts_at ON attempts(at);
CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL, until INTEGER NOT NULL);
