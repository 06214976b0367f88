"""Asynchronous jobs (`jobs:`): the job tracker's, usage ledger's and rate limiter's settings."""

from pydantic import Field

from deployments.config.base import StrictModel


class JobsConfig(StrictModel):
    """Asynchronous jobs: their limits, retention and the tracker's pace."""

    max_job_upload_bytes: int = Field(
        3 * 1024**3, gt=0, description="Largest upload to the async (jobs) endpoint (3 GB)."
    )
    max_running_jobs_per_key: int = Field(
        200, ge=1, description="Jobs one key may have running at once; the next is a 429 (a keys file may set its own)."
    )
    max_concurrent_jobs: int = Field(2, ge=1, description="Jobs the tracker feeds to the pipeline at once.")
    retention_s: float = Field(12 * 3600, gt=0, description="How long finished jobs and results are kept.")
    sweep_interval_s: float = Field(60, gt=0, description="How often the tracker deletes expired jobs.")
    keep_diarized_recordings: bool = Field(
        True,
        description="Keep a finished diarized job's recording as long as the job (`retention_s`), so that one of its"
        " speakers can be enrolled as a voice (POST /v1/voices with job_id); false: every input is deleted when its"
        " job ends.",
    )
    retry_interval_s: float = Field(
        5,
        gt=0,
        description="How often the tracker retries what its storage refused (a full disk) and checks that all"
        " its workers are alive.",
    )
    tracker_name: str = Field("JobTracker", description="The job tracker actor's name in storage.actor_namespace.")
