"""Jobs: asynchronous transcriptions kept durably. The detached `JobTracker` actor queues and runs them on the
files pipeline; `records` is a job as the edge sees it."""
