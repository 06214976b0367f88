"""The JSON objects a transcription or translation is answered with, one per `response_format` (OpenAI's shapes,
plus diarization and an LLM's answer): wherever a result is answered (a request, a job's poll or callback, a batch's
outputs), the same models write it."""

from typing import Any, Literal

from pydantic import BaseModel, Field

from deployments.types import Analysis, DiarizedTranscript, DiarizedWord, Emotion, Segment, SegmentDecoding, Word


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
