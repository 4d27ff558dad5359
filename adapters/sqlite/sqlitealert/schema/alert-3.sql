-- The accounts' re-scrub jobs (domain/rules RescrubJob): one row a job,
-- numbered per account, each a rescrubrecord as JSON beside the columns
-- the compare-and-sets and the look for running jobs read.
CREATE TABLE IF NOT EXISTS rescrub_jobs (
	account TEXT NOT NULL,
	number INTEGER NOT NULL,
	state TEXT NOT NULL,
	revision INTEGER NOT NULL,
	doc TEXT NOT NULL,
	PRIMARY KEY (account, number)
);
CREATE INDEX IF NOT EXISTS rescrub_jobs_state ON rescrub_jobs(state);
