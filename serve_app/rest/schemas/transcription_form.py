"""The multipart form of `POST /v1/audio/transcriptions` and `POST /v1/audio/transcriptions/async`."""

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from deployments.types import (
    AnalysisOptions,
    DiarizationOptions,
    DiarizationSetting,
    KnownSpeaker,
    KnownVoice,
    SpeechDetection,
    TranscriptionOptions,
)
from deployments.vocabulary import MAX_TERM_CHARS, MAX_TERM_WORDS, MAX_TERMS, Vocabulary
from serve_app.common.vocabulary import dictionary_name
from serve_app.rendering.response_formats import SUBTITLE_FORMATS, RenderSpec, ResponseFormat, TimestampGranularity
from serve_app.rendering.subtitles import SubtitleRules
from serve_app.rest.schemas.audio_form import TEXT_ONLY_FORMATS, AudioForm, language_code

HOTWORDS_FIELD_DOC = (
    f"Words or short phrases the audio contains (names, products, terms), as they should be written: at most"
    f" {MAX_TERMS}, each at most {MAX_TERM_WORDS} words and {MAX_TERM_CHARS} characters. Repeated `hotwords` (or"
    " `hotwords[]`) fields, or one comma-separated value. They bias Whisper's decoding and correct the words that"
    " sound like them (docs: Vocabulary)."
)
DICTIONARY_FIELD_DOC = (
    "A named vocabulary, used as hotwords are: `medical` (English and Russian terms) ships with the service;"
    " operators add theirs (setting vocabulary.dictionaries). An unknown name is a 400."
)

RULE_FIELDS = ("max_line_width", "max_line_count", "max_cue_duration_s", "max_chars_per_second")
"""The fields named as `SubtitleRules`' own."""
SUBTITLE_FIELDS = frozenset({*RULE_FIELDS, "subtitle_speakers", "subtitle_word_highlights"})
"""The fields that shape srt and vtt cues: refused with the other formats, which have no cues."""


class Task(StrEnum):
    transcribe = "transcribe"
    diarize = "diarize"


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


class TranscriptionForm(AudioForm):
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
    max_line_width: int = Field(
        42, ge=10, le=200, description="srt and vtt: at most this many characters a subtitle line."
    )
    max_line_count: int = Field(2, ge=1, le=10, description="srt and vtt: at most this many lines a cue.")
    max_cue_duration_s: float = Field(7.0, ge=1.0, le=60.0, description="srt and vtt: at most this many seconds a cue.")
    max_chars_per_second: float = Field(
        20.0,
        ge=5.0,
        le=100.0,
        description="srt and vtt: reading speed; a cue stays up for its characters / this, into the free time after"
        " it.",
    )
    subtitle_speakers: bool = Field(
        False,
        description="srt and vtt with task=diarize: a cue per speaker's turn, the speaker shown (`<v speaker_0>` in"
        " VTT, `[speaker_0]` in SRT; the role with roles). Without it task=diarize answers its JSON object.",
    )
    subtitle_word_highlights: bool = Field(
        False, description="vtt: each word timed inside its cue (`<00:00:01.200><c>word</c>`), for karaoke-style"
        " highlighting.",
    )  # fmt: skip
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
    hotwords: list[str] = Field(default_factory=list, alias="hotwords[]", description=HOTWORDS_FIELD_DOC)
    dictionary: str | None = Field(None, max_length=64, description=DICTIONARY_FIELD_DOC)
    multichannel: bool = Field(
        False,
        description="Transcribe each channel of the audio on its own (a call with one party per channel): segments"
        " and words carry `channel`; with task=diarize each channel is a speaker, channel_0, channel_1, ... Each"
        " channel is charged. A mono file is a 400.",
    )
    diarize_within_channels: bool = Field(
        False,
        description="multichannel with task=diarize: tell speakers apart within each channel (labels name their"
        " channel: channel_1_speaker_0) instead of one speaker per channel.",
    )
    voices: list[str] = Field(
        default_factory=list,
        alias="voices[]",
        description="task=diarize (implied by diarized_json): ids of voices enrolled with this key (POST /v1/voices)."
        " A speaker whose voice matches one is named by it; others keep speaker_N. Repeated `voices` (or `voices[]`)"
        " fields, or one comma-separated value.",
    )
    callback_url: str | None = Field(
        None,
        description="Jobs only (POST /v1/audio/transcriptions/async): an http(s) address to which the job object is"
        " POSTed, signed, when the job ends (docs: Callbacks). Needs a callback secret configured.",
    )
    _known_speakers: list[KnownSpeaker] = PrivateAttr(default_factory=list)
    """The known speakers, their clips spooled (serve_app/rest/openai_fields.py reads the two fields above)."""
    _known_voices: list[KnownVoice] = PrivateAttr(default_factory=list)
    """The enrolled voices `voices` names, read from the voice store (serve_app/common/voices.py)."""
    _vocabulary: Vocabulary | None = PrivateAttr(None)
    """The hotwords and dictionary, checked (serve_app/rest/vocabulary_fields.py)."""
    _analysis: AnalysisOptions | None = PrivateAttr(None)
    """What the Analyzer is asked, if anything (serve_app/rest/analysis_fields.py reads prompt, json_schema, roles
    and emotions)."""

    @model_validator(mode="before")
    @classmethod
    def diarized_json_diarizes(cls, values: Any) -> Any:
        """OpenAI's diarized_json asks for speakers: task=diarize is implied."""
        if isinstance(values, dict) and values.get("response_format") == ResponseFormat.diarized_json:
            if values.get("task", Task.diarize) != Task.diarize:
                raise ValueError("response_format=diarized_json is task=diarize's answer: remove task")
            values = {**values, "task": Task.diarize}
        return values

    @field_validator("dictionary")
    @classmethod
    def no_dictionary(cls, dictionary: str | None) -> str | None:
        return dictionary_name(dictionary)

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
            for name in ("num_speakers", "min_speakers", "max_speakers", "diarization_setting", "voices"):
                if name in self.model_fields_set:
                    raise ValueError(f"{name} requires task=diarize")
        if self.min_speakers is not None and self.max_speakers is not None and self.min_speakers > self.max_speakers:
            raise ValueError("min_speakers must not exceed max_speakers")
        if self.response_format not in SUBTITLE_FORMATS:
            for name in sorted(SUBTITLE_FIELDS):
                if getattr(self, name) != type(self).model_fields[name].default:
                    raise ValueError(f"{name} requires response_format srt or vtt")
        if self.subtitle_word_highlights and self.response_format != ResponseFormat.vtt:
            raise ValueError("subtitle_word_highlights requires response_format=vtt")
        if self.subtitle_speakers and self.task != Task.diarize:
            raise ValueError("subtitle_speakers requires task=diarize: speakers are known only then")
        if self.diarize_within_channels and not (self.multichannel and self.task == Task.diarize):
            raise ValueError("diarize_within_channels requires multichannel=true and task=diarize")
        if self.stream and self.multichannel:
            raise ValueError("stream=true sends one text in time order: leave multichannel out, or stream=false")
        if self.stream and self.response_format not in TEXT_ONLY_FORMATS:
            raise ValueError("stream=true sends text as it is transcribed: use response_format json or text")
        return self

    @property
    def wants_words(self) -> bool:
        return TimestampGranularity.word in self.timestamp_granularities

    @property
    def wants_sentences(self) -> bool:
        return TimestampGranularity.sentence in self.timestamp_granularities

    def complete(
        self,
        known_speakers: list[KnownSpeaker],
        analysis: AnalysisOptions | None,
        vocabulary: Vocabulary | None = None,
        known_voices: list[KnownVoice] | None = None,
    ) -> None:
        """What the intake read besides the fields (`serve_app/rest/form_intake.py`), set once, before the form is
        used: the known speakers (checked against `task` already), the analysis options, the vocabulary and the
        enrolled voices `voices` names."""
        self._known_speakers = known_speakers
        self._known_voices = known_voices or []
        self._analysis = analysis
        self._vocabulary = vocabulary

    @property
    def asks_llm(self) -> bool:
        """Whether `prompt` is an instruction the LLM answers (not Whisper's initial prompt)."""
        return self._analysis is not None and self._analysis.prompt is not None

    def render_spec(self) -> RenderSpec:
        """How the result is rendered: as asked; with an LLM prompt, verbose_json by segment (the transcription
        beside the LLM's answer)."""
        if self.asks_llm:
            return RenderSpec(
                response_format=ResponseFormat.verbose_json, timestamp_granularities=[TimestampGranularity.segment]
            )
        rules = {name: getattr(self, name) for name in RULE_FIELDS}
        shown = {"show_speakers": self.subtitle_speakers, "word_highlights": self.subtitle_word_highlights}
        subtitles = SubtitleRules.model_validate(rules | shown)
        return RenderSpec(
            response_format=self.response_format,
            timestamp_granularities=self.timestamp_granularities,
            subtitles=subtitles,
        )

    def transcription_options(self) -> TranscriptionOptions:
        render = self.render_spec()
        return TranscriptionOptions(
            language=self.language,
            # task=diarize turns word times on in the pipeline: speakers go to words; sentences are timed by them
            # srt and vtt cues are cut from the words (which json bodies still show only when asked)
            word_timestamps=render.response_format in SUBTITLE_FORMATS
            or any(
                granularity in render.timestamp_granularities
                for granularity in (TimestampGranularity.word, TimestampGranularity.sentence)
            ),
            segment_timestamps=render.response_format not in TEXT_ONLY_FORMATS or self.task == Task.diarize,
            prompt=None if self.asks_llm else self.prompt,  # the LLM's instruction is not Whisper's prompt
            temperature=self.temperature,
            profanity_filter=self.profanity_filter,
            speech_detection=self.chunking_strategy.detection()
            if isinstance(self.chunking_strategy, ServerVadChunking)
            else None,
            vocabulary=self._vocabulary,
            multichannel=self.multichannel,
            redaction=self._redaction,
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
            known_voices=self._known_voices,
            within_channels=self.diarize_within_channels,
        )

    def analysis_options(self) -> AnalysisOptions | None:
        return self._analysis
