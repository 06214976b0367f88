"""Pydantic models of every HTTP request and response (OpenAI's audio API, plus `task` and diarization)."""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from deployments.live.events import SAMPLE_RATES, SessionSettings
from deployments.transcriber.languages import is_whisper_language
from deployments.types import (
    Analysis,
    DiarizationOptions,
    DiarizationSetting,
    DiarizedTranscript,
    DiarizedWord,
    Emotion,
    KnownSpeaker,
    RenderSpec,
    ResponseFormat,
    Segment,
    SegmentDecoding,
    SpeechDetection,
    TimestampGranularity,
    TranscriptionOptions,
    Word,
)
from serve_app.upload import SpooledFile

MODEL_ID = "whisper-1"
AUTO_LANGUAGE = frozenset({"auto", "automatic"})
"""Values of `language` (besides empty) that mean "detect it", as the nexara SDK sends them."""

UtcDatetime = Annotated[datetime, PlainSerializer(lambda moment: moment.isoformat(), return_type=str)]
"""ISO 8601 with an explicit offset (`+00:00`), which every client's parser accepts."""


class Task(StrEnum):
    transcribe = "transcribe"
    diarize = "diarize"


TEXT_ONLY_FORMATS = (ResponseFormat.json, ResponseFormat.text)
"""Formats that carry no times: their requests are decoded without Whisper's timestamp tokens."""


class ServerVadChunking(SpeechDetection):
    """OpenAI's `chunking_strategy` object: Silero VAD's settings for cutting this file into chunks. The openai
    SDK sends it as `chunking_strategy[type]`, `chunking_strategy[threshold]`, ...; a JSON string is read too."""

    type: Literal["server_vad"] = "server_vad"

    def detection(self) -> SpeechDetection:
        return SpeechDetection(**self.model_dump(exclude={"type"}))


CHUNKING_STRATEGY_DOC = (
    "`auto` (or absent): the configured chunking, Silero VAD cutting at silences. A server_vad object"
    " (`threshold` 0-1, default 0.5; `prefix_padding_ms`: audio kept around speech, default 200;"
    " `silence_duration_ms`: the pause that ends speech, default 100) sets the VAD for this file: where chunks are"
    " cut and which silence is skipped."
)


def http_url(url: str | None) -> str | None:
    """A form's `url`, stripped, if it is an http(s) address with a host (a ValueError if not)."""
    if url is None:
        return None
    scheme, _, rest = url.strip().partition("://")
    if scheme.lower() not in ("http", "https") or not rest or rest.startswith("/"):
        raise ValueError("url must be an http:// or https:// address with a host")
    return url.strip()


def language_code(language: str | None) -> str | None:
    """A form's `language` as a Whisper language code; None (detect it) for empty, `auto` or `automatic`."""
    if language is None or language == "":
        return None
    code = language.strip().lower()
    if code in AUTO_LANGUAGE or code == "":
        return None
    if not is_whisper_language(code):
        raise ValueError(f"unsupported language {language[:16]!r}: use an ISO-639-1 code such as 'en' or 'fr'")
    return code


class _AudioForm(BaseModel):
    """What every audio form shares: exactly one source (an upload or a URL), the model, and their checks. A field
    a form does not know is refused (400), so that nobody gets a 200 without a feature they asked for."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    file: Annotated[SpooledFile, WithJsonSchema({"type": "string", "format": "binary"})] | None = Field(
        None, description="The audio or video file. Give exactly one of file or url."
    )
    url: str | None = Field(None, max_length=2048, description="An http(s) URL of the audio. Give exactly one.")
    model: str = Field(MODEL_ID, max_length=128, description="One of the ids GET /v1/models lists.")

    @field_validator("url")
    @classmethod
    def http_url(cls, url: str | None) -> str | None:
        return http_url(url)

    @model_validator(mode="after")
    def one_source(self) -> Self:
        if (self.file is None) == (self.url is None):
            raise ValueError("give exactly one of 'file' (an upload) or 'url'")
        return self


class TranscriptionForm(_AudioForm):
    """The multipart form of `POST /v1/audio/transcriptions` (and of its async twin)."""

    task: Task = Task.transcribe
    language: str | None = Field(
        None, description="ISO-639-1 code of the spoken language; detected if omitted, empty, `auto` or `automatic`."
    )
    prompt: str | None = Field(
        None,
        max_length=4096,
        description="An instruction an LLM answers over the transcript: the response becomes"
        ' `{"transcription": <verbose_json>, "llm_output": ...}`. With the setting analysis.prompt_field: whisper,'
        " OpenAI's meaning instead: text to guide Whisper's style or spelling.",
    )
    json_schema: str | None = Field(
        None,
        max_length=65536,
        description="With prompt: a JSON Schema (as a JSON string); llm_output is then an object valid against it.",
    )
    roles: str | None = Field(
        None,
        max_length=16384,
        description='task=diarize: give each speaker a role, "auto" or from a JSON list of names or a JSON object'
        " of name -> description (at most 10); segments and words then carry the role as `speaker`.",
    )
    emotions: bool = Field(
        False,
        description="task=diarize with model=nexara-ru: each segment gets `emotion` {label, confidence, probs},"
        " judged from the words by the LLM.",
    )
    temperature: float = Field(0.0, ge=0.0, le=1.0, description="0 uses Whisper's fallback schedule.")
    response_format: ResponseFormat = ResponseFormat.json
    num_speakers: int | None = Field(
        None, ge=1, le=32, description="task=diarize: the exact number of speakers, when known. Ignored otherwise."
    )
    min_speakers: int | None = Field(
        None,
        ge=1,
        le=32,
        description="task=diarize: at least this many speakers (num_speakers wins). Ignored otherwise.",
    )
    max_speakers: int | None = Field(
        None,
        ge=1,
        le=32,
        description="task=diarize: at most this many speakers (num_speakers wins). Ignored otherwise.",
    )
    diarization_setting: DiarizationSetting = Field(
        DiarizationSetting.general,
        description="task=diarize: general (any number of speakers), meeting (at least two), telephonic (one or"
        " two). Ignored otherwise.",
    )
    timestamp_granularities: list[TimestampGranularity] = Field(
        default=[TimestampGranularity.segment],
        alias="timestamp_granularities[]",
        max_length=2,
        description="`word` adds words, `sentence` gives sentences instead of segments; both need"
        " response_format=verbose_json.",
    )
    profanity_filter: bool = Field(False, description="Mask profane words in the text, segments, words, subtitles.")
    stream: bool = Field(
        False,
        description="Synchronous requests only: answer text/event-stream, `transcript.text.delta` events as the"
        " audio is transcribed, then `transcript.text.done` (response_format json or text).",
    )
    chunking_strategy: Literal["auto"] | ServerVadChunking | None = Field(None, description=CHUNKING_STRATEGY_DOC)
    known_speaker_names: list[str] = Field(
        default_factory=list,
        alias="known_speaker_names[]",
        max_length=4,
        description="task=diarize (implied by diarized_json): up to 4 names, one per known_speaker_references[];"
        " a diarized speaker whose voice matches a reference takes its name, the others keep speaker_N.",
    )
    known_speaker_references: list[str] = Field(
        default_factory=list,
        alias="known_speaker_references[]",
        max_length=4,
        description="Data URLs (`data:audio/wav;base64,...`) of 1.5 to 10 s of each known speaker's voice, in any"
        " format `file` may have.",
    )
    _known_speakers: list[KnownSpeaker] = PrivateAttr(default_factory=list)
    """The known speakers, their clips spooled (serve_app/openai_fields.py reads the two fields above)."""

    @model_validator(mode="before")
    @classmethod
    def diarized_json_diarizes(cls, values: Any) -> Any:
        """OpenAI's diarized_json asks for speakers: task=diarize is implied."""
        if isinstance(values, dict) and values.get("response_format") == ResponseFormat.diarized_json:
            if values.get("task", Task.diarize) != Task.diarize:
                raise ValueError("response_format=diarized_json is task=diarize's answer: remove task")
            values = {**values, "task": Task.diarize}
        return values

    @field_validator("language")
    @classmethod
    def known_language(cls, language: str | None) -> str | None:
        return language_code(language)

    @model_validator(mode="after")
    def consistent(self) -> "TranscriptionForm":
        for granularity in (TimestampGranularity.word, TimestampGranularity.sentence):
            if granularity in self.timestamp_granularities and self.response_format != ResponseFormat.verbose_json:
                raise ValueError(f"timestamp_granularities[]={granularity} requires response_format=verbose_json")
        if self.wants_sentences and TimestampGranularity.segment in self.timestamp_granularities:
            raise ValueError("timestamp_granularities[]: sentence replaces segment; ask for one of them")
        if self.wants_sentences and self.task == Task.diarize:
            raise ValueError("timestamp_granularities[]=sentence is for task=transcribe; diarized segments"
                             " already follow the speakers")  # fmt: skip
        if self.task != Task.diarize:
            for name in ("num_speakers", "min_speakers", "max_speakers", "diarization_setting"):
                if name in self.model_fields_set:
                    raise ValueError(f"{name} requires task=diarize")
        if self.min_speakers is not None and self.max_speakers is not None and self.min_speakers > self.max_speakers:
            raise ValueError("min_speakers must not exceed max_speakers")
        if self.stream and self.response_format not in TEXT_ONLY_FORMATS:
            raise ValueError("stream=true sends text as it is transcribed: use response_format json or text")
        return self

    @property
    def wants_words(self) -> bool:
        return TimestampGranularity.word in self.timestamp_granularities

    @property
    def wants_sentences(self) -> bool:
        return TimestampGranularity.sentence in self.timestamp_granularities

    def transcription_options(self) -> TranscriptionOptions:
        return TranscriptionOptions(
            language=self.language,
            # task=diarize turns word times on in the pipeline: speakers go to words; sentences are timed by them
            word_timestamps=self.wants_words or self.wants_sentences,
            segment_timestamps=self.response_format not in TEXT_ONLY_FORMATS or self.task == Task.diarize,
            prompt=self.prompt,
            temperature=self.temperature,
            profanity_filter=self.profanity_filter,
            speech_detection=self.chunking_strategy.detection()
            if isinstance(self.chunking_strategy, ServerVadChunking)
            else None,
        )

    def diarization_options(self) -> DiarizationOptions | None:
        if self.task != Task.diarize:
            return None
        return DiarizationOptions(
            num_speakers=self.num_speakers,
            min_speakers=self.min_speakers,
            max_speakers=self.max_speakers,
            setting=self.diarization_setting,
            known_speakers=self._known_speakers,
        )

    def with_known_speakers(self, speakers: list[KnownSpeaker]) -> "TranscriptionForm":
        if speakers and self.task != Task.diarize:
            raise ValueError("known_speaker_names[] requires task=diarize or response_format=diarized_json")
        self._known_speakers = speakers
        return self

    def render_spec(self) -> RenderSpec:
        return RenderSpec(response_format=self.response_format, timestamp_granularities=self.timestamp_granularities)


class TranscriptionJson(BaseModel):
    text: str


class Sentence(BaseModel):
    start: float
    end: float
    text: str


class TranscriptionVerboseJson(BaseModel):
    task: Literal["transcribe"] = "transcribe"
    language: str = Field(description="The language's name in lower case, as OpenAI gives it: `english`.")
    duration: float
    text: str
    segments: list[Segment] | None = Field(None, description="Absent when timestamp_granularities[] is sentence.")
    sentences: list[Sentence] | None = Field(None, description="Present when timestamp_granularities[] is sentence.")
    words: list[Word] | None = Field(
        None,
        description="Present when timestamp_granularities[] has word or sentence; without Whisper's leading space.",
    )


TRANSLATION_FORMATS = (
    ResponseFormat.json,
    ResponseFormat.text,
    ResponseFormat.srt,
    ResponseFormat.verbose_json,
    ResponseFormat.vtt,
)


class TranslationForm(_AudioForm):
    """The multipart form of `POST /v1/audio/translations` (OpenAI's): speech in any language, English text out.
    Only OpenAI's fields (and `url`, `language`): diarization, analysis and the transcription-only fields are
    refused by name (400), as any field this form does not know."""

    language: str | None = Field(
        None,
        description="ISO-639-1 code of the spoken language (not OpenAI's: its translations detect it); detected"
        " if omitted, empty, `auto` or `automatic`.",
    )
    prompt: str | None = Field(
        None,
        max_length=4096,
        description="OpenAI's meaning: English text to guide Whisper's style or spelling (never an LLM instruction"
        " here).",
    )
    temperature: float = Field(0.0, ge=0.0, le=1.0, description="0 uses Whisper's fallback schedule.")
    response_format: ResponseFormat = Field(
        ResponseFormat.json, description="json, text, srt, verbose_json or vtt (diarized_json has no translation)."
    )

    @field_validator("language")
    @classmethod
    def known_language(cls, language: str | None) -> str | None:
        return language_code(language)

    @model_validator(mode="after")
    def consistent(self) -> "TranslationForm":
        if self.response_format not in TRANSLATION_FORMATS:
            raise ValueError(
                f"response_format={self.response_format} is not a translation's: use json, text, srt, verbose_json"
                " or vtt"
            )
        return self

    def transcription_options(self) -> TranscriptionOptions:
        return TranscriptionOptions(
            language=self.language,
            task="translate",
            segment_timestamps=self.response_format not in TEXT_ONLY_FORMATS,
            prompt=self.prompt,
            temperature=self.temperature,
        )


class TranslationVerboseJson(BaseModel):
    """OpenAI's verbose_json of a translation: `language` is the output's, always english; each segment's
    `language` (this service's addition) is the one spoken in it."""

    task: Literal["translate"] = "translate"
    language: Literal["english"] = "english"
    duration: float
    text: str
    segments: list[Segment]


class DiarizedJsonSegment(BaseModel):
    """One speaker's stretch of speech (OpenAI's diarized_json segment fields, and nexara's `emotion`)."""

    type: Literal["transcript.text.segment"] = "transcript.text.segment"
    id: int
    start: float
    end: float
    text: str
    speaker: str = Field(description="speaker_N, or with `roles` the speaker's role.")
    emotion: Emotion | None = Field(None, description="With emotions=true, on the segments that were judged.")
    decoding: SegmentDecoding | None = Field(None, exclude=True)  # sent only inside an LLMResult: see `body`


class DiarizedTranscription(DiarizedTranscript):
    """The result of task=diarize: always this JSON object, whatever response_format says. The domain
    transcript's fields, with OpenAI's diarized_json segments (a `type`, no words: those are top-level)."""

    segments: list[DiarizedJsonSegment]  # type: ignore[assignment]  # the wire's segment, not the domain's
    roles: dict[str, str] | None = Field(
        None, description="With `roles`: speaker_N -> role (segments and words carry the role as `speaker`)."
    )
    analysis: Analysis | None = Field(None, exclude=True)  # rendered as roles and emotions, not as itself

    @classmethod
    def of(cls, transcript: DiarizedTranscript, words: list[DiarizedWord]) -> "DiarizedTranscription":
        """`transcript` as clients get it, with `words` (the transcript's, as the edge renders words), and its
        analysis's roles and emotions where it has them."""
        roles = transcript.analysis.roles if transcript.analysis is not None else {}
        emotions = transcript.analysis.emotions if transcript.analysis is not None else []
        segments = [
            DiarizedJsonSegment(
                **segment.model_dump(exclude={"words", "speaker"}),
                speaker=roles.get(segment.speaker, segment.speaker),
                emotion=emotions[index] if index < len(emotions) else None,
            )
            for index, segment in enumerate(transcript.segments)
        ]
        if roles:
            words = [word.model_copy(update={"speaker": roles.get(word.speaker, word.speaker)}) for word in words]
        fields = {name: getattr(transcript, name) for name in DiarizedTranscript.model_fields if name != "analysis"}
        return cls(**{**fields, "segments": segments, "words": words, "roles": roles or None})

    def body(self, verbose: bool = False) -> dict[str, Any]:
        """The JSON object sent: `roles` and a segment's `emotion` only where there are some. `verbose`: each
        segment also has verbose_json's segment fields, as the transcription inside an LLMResult must (the
        nexara SDK reads that as verbose_json): `seek`, `temperature`, `avg_logprob`, `compression_ratio` and
        `no_speech_prob` of the Whisper segment it overlaps most, and `tokens` empty (a speaker's stretch is
        cut from words, not tokens)."""
        body = self.model_dump()
        if body["roles"] is None:
            del body["roles"]
        for segment, source in zip(body["segments"], self.segments, strict=True):
            if segment["emotion"] is None:
                del segment["emotion"]
            if verbose:
                decoding = source.decoding or SegmentDecoding(
                    seek=round(source.start * 100), temperature=0.0, avg_logprob=0.0, compression_ratio=0.0,
                    no_speech_prob=0.0,
                )  # fmt: skip
                segment.update(decoding.model_dump(), tokens=[])
        return body


class DiarizedJsonUsage(BaseModel):
    """OpenAI's usage block for models billed by audio duration."""

    type: Literal["duration"] = "duration"
    seconds: float = Field(description="The audio's duration, which is what is billed.")


class OpenAIDiarizedSegment(BaseModel):
    type: Literal["transcript.text.segment"] = "transcript.text.segment"
    id: str = Field(description="seg_0, seg_1, ... in time order.")
    start: float
    end: float
    text: str
    speaker: str = Field(description="A known speaker's name, speaker_N, or with `roles` the speaker's role.")
    emotion: Emotion | None = Field(None, description="With emotions=true, on the segments that were judged.")


class OpenAIDiarizedTranscription(BaseModel):
    """response_format=diarized_json: OpenAI's TranscriptionDiarized, as the openai SDK parses it."""

    task: Literal["transcribe"] = "transcribe"
    duration: float
    text: str
    segments: list[OpenAIDiarizedSegment]
    usage: DiarizedJsonUsage

    @classmethod
    def of(cls, transcription: DiarizedTranscription) -> "OpenAIDiarizedTranscription":
        segments = [
            OpenAIDiarizedSegment(
                id=f"seg_{segment.id}", start=segment.start, end=segment.end, text=segment.text,
                speaker=segment.speaker, emotion=segment.emotion,
            )
            for segment in transcription.segments
        ]  # fmt: skip
        duration = round(transcription.duration, 3)
        return cls(
            duration=duration, text=transcription.text, segments=segments, usage=DiarizedJsonUsage(seconds=duration)
        )

    def body(self) -> dict[str, Any]:
        """The JSON object sent: a segment's `emotion` only where there is one."""
        body = self.model_dump()
        for segment in body["segments"]:
            if segment["emotion"] is None:
                del segment["emotion"]
        return body


class LLMResult(BaseModel):
    """The result when `prompt` is an LLM instruction: the transcription and the LLM's answer."""

    transcription: dict[str, Any] = Field(
        description="The verbose_json transcription (a DiarizedTranscription with task=diarize)."
    )
    llm_output: str | dict[str, Any] = Field(
        description="The answer: text, or with json_schema an object valid against it."
    )


class Balance(BaseModel):
    """`GET /v1/billing/balance`."""

    balance: float = Field(
        description="What is left to spend. An unlimited key starts at 0 and goes below it by what it used;"
        " any key's last request may take it below zero."
    )
    rate_per_min: float = Field(description="Price of one minute of audio for this key.")
    currency: str
    unlimited: bool = Field(description="True for a key without a balance: it is never refused for funds.")


class UsageApiKey(BaseModel):
    id: int
    name: str = Field(description="`Key #<id>` for a key without a name.")
    deleted: bool = Field(description="Always false here: a key only ever sees its own usage.")


class UsageItem(BaseModel):
    """One charged request or job."""

    timestamp: UtcDatetime
    seconds: float = Field(description="Audio duration charged.")
    bytes: int = Field(description="Size of the input as received.")
    task: str
    model: str | None
    language: str | None
    cost: float | None = Field(description="What it cost, in the page's currency; null for charges made before"
                               " costs were recorded.")  # fmt: skip
    profanity_filter: bool
    role_tagging: bool = Field(False, description="Speakers were given roles (`roles`).")
    emotions: bool = Field(False, description="Emotions were returned (asked for and none returned: false).")
    llm_input_tokens: int | None = Field(None, description="Tokens the LLM read, when an analysis ran.")
    llm_output_tokens: int | None = Field(None, description="Tokens the LLM wrote; both are in `cost`.")
    request_id: str = Field(description="The job id, or the synchronous request's id.")
    api_key: UsageApiKey


class UsagePage(BaseModel):
    """`GET /v1/billing/usage`: newest first; pass `next_cursor` as `cursor` for the next (older) page."""

    items: list[UsageItem]
    next_cursor: int | None = Field(description="Set only when has_more.")
    has_more: bool
    currency: str


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class JobCreated(BaseModel):
    job_id: str = Field(description="A UUID; poll GET /v1/audio/transcriptions/async/{job_id}.")
    status: Literal["in_progress"] = "in_progress"
    created_at: UtcDatetime


class JobObject(BaseModel):
    """An asynchronous job as clients poll it."""

    job_id: str
    status: Literal["in_progress", "complete", "error"]
    created_at: UtcDatetime
    completed_at: UtcDatetime | None
    progress: float = Field(description="Share of the audio processed, 0.0 to 1.0.")
    result: dict[str, Any] | str | None = Field(
        description="The transcription in the submitted response_format: an object for json and verbose_json,"
        " a string for text, srt and vtt; for task=diarize always a DiarizedTranscription object; with an LLM"
        " `prompt`, an LLMResult object."
    )
    error: str | None = Field(description="Why the job failed, when status is error.")


class ErrorResponse(BaseModel):
    detail: str


class ValidationIssue(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorResponse(BaseModel):
    detail: list[ValidationIssue]


def multipart_request_body(form: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI `requestBody` of a route that parses its multipart form itself (see serve_app.upload)."""
    schema = form.model_json_schema()
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(definitions[node["$ref"].rsplit("/", 1)[-1]])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    schema = inline(schema)
    return {"required": True, "content": {"multipart/form-data": {"schema": schema}}}


class TranscriptTextDelta(BaseModel):
    """`stream=true`: the next piece of the text, final, in timeline order."""

    type: Literal["transcript.text.delta"] = "transcript.text.delta"
    delta: str


class TranscriptTextSegment(BaseModel):
    """`stream=true` with task=diarize: one speaker's segment, sent once the speakers are known."""

    type: Literal["transcript.text.segment"] = "transcript.text.segment"
    id: str
    start: float
    end: float
    text: str
    speaker: str


class TranscriptTextDone(BaseModel):
    """`stream=true`: the last event; `text` is the whole transcript, the deltas joined."""

    type: Literal["transcript.text.done"] = "transcript.text.done"
    text: str


class StreamErrorDetail(BaseModel):
    message: str
    type: Literal["invalid_request_error", "server_error"]


class StreamError(BaseModel):
    """`stream=true`: the request failed after the stream began (OpenAI's error event shape)."""

    type: Literal["error"] = "error"
    error: StreamErrorDetail


DELAYS_MS = (*range(80, 1201, 80), 2400)
"""The emission delays a live session may ask for (the nexara protocol's set)."""


class LiveSessionQuery(BaseModel):
    """The query string of `GET /v1/transcribe` (a WebSocket upgrade): the session's parameters. A value out
    of range ends the session with `invalid_config` (close 4000) right after the upgrade."""

    model_config = ConfigDict(extra="forbid")

    encoding: Literal["pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw"] = "pcm_s16le"
    sample_rate: int = Field(16000, description="8000, 16000, 24000, 44100 or 48000 Hz; resampled here.")
    channels: int = Field(1, ge=1, le=2, description="Interleaved L R L R when 2.")
    multichannel: bool = Field(False, description="With channels=2: each channel transcribed on its own.")
    diarize: bool = Field(False, description="Speaker labels 0-3 on every word.")
    delay_ms: int = Field(480, description="How often the buffer is read: a multiple of 80 up to 1200, or 2400.")
    turn_detection: Literal["none", "smart"] = "none"
    client_id: str | None = Field(None, max_length=128, description="Echoed in session.created.")

    @field_validator("sample_rate")
    @classmethod
    def supported_rate(cls, rate: int) -> int:
        if rate not in SAMPLE_RATES:
            raise ValueError(f"sample_rate must be one of {', '.join(map(str, SAMPLE_RATES))}")
        return rate

    @field_validator("delay_ms")
    @classmethod
    def supported_delay(cls, delay: int) -> int:
        if delay not in DELAYS_MS:
            raise ValueError("delay_ms must be a multiple of 80 from 80 to 1200, or 2400")
        return delay

    @model_validator(mode="after")
    def two_channels_to_split(self) -> "LiveSessionQuery":
        if self.multichannel and self.channels != 2:
            raise ValueError("multichannel needs channels=2")
        return self

    def settings(self) -> SessionSettings:
        return SessionSettings(**self.model_dump(exclude={"client_id"}))


class RealtimeAudioInfo(BaseModel):
    encoding: str
    sample_rate: int
    channels: int
    multichannel: bool


class RealtimeDiarizationInfo(BaseModel):
    max_speakers: int
    latency_ms: int = Field(description="How long a word waits for its speaker label, about.")


class RealtimeSessionCreated(BaseModel):
    """The first frame of every live session: the negotiated parameters."""

    type: Literal["session.created"] = "session.created"
    session_id: str
    model: str
    delay_ms: int
    audio: RealtimeAudioInfo
    diarization: RealtimeDiarizationInfo | None = None
    turn_detection: str
    client_id: str | None = None
