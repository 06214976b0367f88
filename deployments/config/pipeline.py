"""The pipeline's settings (`PipelineConfig`, assembled by the application builder): chunking, request limits,
fetching a client's `url`, and the domain vocabulary."""

from pydantic import Field

from deployments.config.base import Networks, StrictModel
from deployments.config.redaction import RedactionConfig


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
    redaction: RedactionConfig = RedactionConfig()
