"""The service's own Prometheus metrics, recorded with Ray's metrics API.

Ray exports them on every node's metrics port (`ray start --metrics-export-port=8080`; KubeRay uses 8080
by default) with a `ray_` prefix, e.g. `ray_stt_audio_seconds_total`. Metrics recorded in Serve replicas
carry Serve's `application`, `deployment` and `replica` tags; the job tracker and the usage ledger are
plain actors and use `ray.util.metrics`. Each owner creates its metrics once, in its constructor, as Ray's examples do.
"""

from ray.serve import metrics as serve_metrics
from ray.util import metrics as ray_metrics

SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900]
BATCH_SIZE_BUCKETS: list[float] = [1, 2, 4, 8, 16, 32, 64, 128]


class HttpMetrics:
    """The Ingress: what users asked for and what they got."""

    def __init__(self) -> None:
        self.requests = serve_metrics.Counter(
            "stt_http_requests",
            description="HTTP requests answered, by route template, method and status code.",
            tag_keys=("route", "method", "status"),  # type: ignore[arg-type]  # Ray annotates it as a 1-tuple
        )


class UsageMetrics:
    """The usage ledger (a detached actor): every completed request, job and live session is charged there
    exactly once, so audio seconds are counted there."""

    def __init__(self) -> None:
        self.audio_seconds = ray_metrics.Counter(
            "stt_audio_seconds",
            description="Seconds of audio transcribed, by task (transcribe, diarize, realtime) and model.",
            tag_keys=("task", "model"),
        )


class TranscriberMetrics:
    """The Transcriber: how the batched engine is used."""

    def __init__(self) -> None:
        self.batch_size = serve_metrics.Histogram(
            "stt_batch_size", description="Chunks decoded together in one engine batch.", boundaries=BATCH_SIZE_BUCKETS
        )
        self.batch_seconds = serve_metrics.Histogram(
            "stt_batch_seconds", description="Seconds one engine batch took.", boundaries=SECONDS_BUCKETS
        )
        self.chunks_queued = serve_metrics.Gauge(
            "stt_chunks_queued", description="Chunks at this Transcriber replica waiting for a batch."
        )
        self.compute_seconds = serve_metrics.Counter(
            "stt_transcriber_compute_seconds",
            description="Engine seconds by lane (jobs, interactive, second readings) and stage (features, encoder,"
            " decoder, alignment): what each kind of reading costs.",
            tag_keys=("lane", "stage"),  # type: ignore[arg-type]  # Ray annotates it as a 1-tuple
        )


class DiarizerMetrics:
    def __init__(self) -> None:
        self.seconds = serve_metrics.Histogram(
            "stt_diarization_seconds", description="Seconds one file's diarization took.", boundaries=SECONDS_BUCKETS
        )


class LiveMetrics:
    def __init__(self) -> None:
        self.second_readings = serve_metrics.Counter(
            "stt_live_second_readings",
            description="Groups of live utterances by what became of them: read again (read), or kept their streamed"
            " words because the replica was behind (behind) or had too many waiting (queued), the client cleared"
            " audio (cleared) or live.final_pass is none (disabled).",
            tag_keys=("outcome",),
        )
        self.sessions_open = serve_metrics.Gauge(
            "stt_live_sessions_open", description="Live sessions held by this LiveTranscriber replica."
        )


class JobMetrics:
    """The job tracker (a detached actor, not a Serve replica)."""

    def __init__(self) -> None:
        self.jobs = ray_metrics.Gauge(
            "stt_jobs",
            description="Jobs known to the tracker, by state: queued, running, complete, error.",
            tag_keys=("state",),
        )
        self.queue_wait_seconds = ray_metrics.Histogram(
            "stt_job_queue_wait_seconds",
            description="Seconds from a job's submission to the start of its first run.",
            boundaries=[*SECONDS_BUCKETS, 1800, 3600, 7200],
        )
        self.retries = ray_metrics.Counter(
            "stt_job_retries",
            description="Job runs that failed for a reason not about the input and were run again (or ended the"
            " job after its last attempt), by reason: worker_lost or failure.",
            tag_keys=("reason",),
        )
