-- The accounts' rule sets (domain/rules): one row per version, each a
-- rulerecord as JSON; the compare-and-set inserts version n+1 in a
-- transaction begun IMMEDIATE.
CREATE TABLE IF NOT EXISTS rule_sets (account TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (account, version));
