"""`POST /v1/audio/translations` (OpenAI's translation endpoint, Whisper's task=translate).

With the real Whisper base engine (multilingual), in-process and without Ray: German speech spoken by espeak-ng
comes out as English words, through the engine alone and through the pipeline's chunking and assembly. Over
HTTP in-process (fake pipeline): what reaches the pipeline, the OpenAI shapes the openai SDK parses, the fields
refused by name, billing, and the 400 for an English-only model."""

import asyncio
from pathlib import Path

import numpy as np
import pytest
from openai.types.audio import Translation, TranslationVerbose

from deployments.config import PipelineConfig
from deployments.errors import InputRejectedError
from deployments.files.pipeline import TranscriptionPipeline
from deployments.jobs.records import owner_of
from deployments.types import ChunkOptions, PipelineRequest, Transcript, TranscriptionOptions
from devkit.code_switching import GERMAN, EngineTranscriber, base_engine, espeak_ng, spoken
from devkit.media import encode
from serve_app.rendering.response_formats import ResponseFormat, render_translation
from tests.fakes import Remote, replica_class
from tests.inprocess import KEY, call

needs_espeak = pytest.mark.skipif(espeak_ng() is None, reason="espeak-ng is not installed: it speaks the German")

ENGLISH_WORDS = {"evening", "city", "small", "restaurant", "food", "good", "train", "weather"}
"""Words of the German's translation (Abend, Stadt, klein, Restaurant, Essen, gut, Zug, Wetter)."""
GERMAN_WORDS = {"abend", "stadt", "gefahren", "kleinen", "gegessen", "essen", "geschichte", "morgen", "wetter"}


def translated(text: str) -> bool:
    """Most of the English words are there, and none of the German ones."""
    words = _words(text)
    return len(ENGLISH_WORDS & words) >= 5 and not GERMAN_WORDS & words


PATH = "/v1/audio/translations"
AUDIO = {"file": ("speech.wav", b"RIFF....WAVEfmt audio")}


def _words(text: str) -> set[str]:
    return {word.strip(".,!?").lower() for word in text.split()}


@pytest.fixture(scope="module")
def german(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    return spoken(GERMAN, "de", tmp_path_factory.mktemp("translations"))


@needs_espeak
def test_the_engine_translates_german_speech_into_english(german: np.ndarray) -> None:
    engine = base_engine()
    assert engine.multilingual
    for timed in (False, True):  # text only, and timed by alignment
        [translation] = engine.transcribe_batch([german], ChunkOptions(task="translate", segment_timestamps=timed))
        [transcribed] = engine.transcribe_batch([german], ChunkOptions(segment_timestamps=timed))
        text = "".join(segment.text for segment in translation.segments)
        assert translated(text), text
        assert translation.language == transcribed.language == "de"  # detected as for a transcription
        assert len(GERMAN_WORDS & _words("".join(s.text for s in transcribed.segments))) >= 3  # no translation


@needs_espeak
def test_the_transformers_engine_translates_too(german: np.ndarray) -> None:
    from deployments.config import WhisperModelConfig
    from deployments.transcriber.engines.transformers_engine import TransformersEngine

    engine = TransformersEngine(WhisperModelConfig(engine="transformers", model="embedded:base", cpu_threads=2))
    assert engine.multilingual
    [translation] = engine.transcribe_batch([german], ChunkOptions(task="translate", segment_timestamps=False))
    assert translated("".join(segment.text for segment in translation.segments)), translation
    assert translation.language == "de"


def translate(transcriber: object, path: Path, **options: object) -> Transcript:
    pipeline = replica_class(TranscriptionPipeline)(transcriber, None, PipelineConfig())  # type: ignore[arg-type]  # a fake transcriber; no diarizer is called
    request = PipelineRequest(
        source_path=str(path), max_bytes=1 << 31, options=TranscriptionOptions(task="translate", **options)
    )
    result = asyncio.run(pipeline.transcribe(request))
    assert isinstance(result, Transcript)
    return result


class MultilingualEngineTranscriber(EngineTranscriber):
    """The Transcriber's calls a translation makes: whether its model can translate, then the chunks."""

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.multilingual = Remote(lambda: engine.multilingual)


@needs_espeak
def test_the_pipeline_translates_and_the_openai_sdk_reads_the_result(german: np.ndarray, tmp_path: Path) -> None:
    path = tmp_path / "german.wav"
    path.write_bytes(encode(german, "wav"))
    result = translate(MultilingualEngineTranscriber(base_engine()), path)
    assert translated(result.text), result.text
    assert result.language == "de"  # what billing records: the language spoken
    assert {segment.language for segment in result.segments} == {"de"}
    body = render_translation(result, ResponseFormat.verbose_json).body
    verbose = TranslationVerbose.model_validate_json(bytes(body))
    assert verbose.language == "english" and verbose.text == result.text and verbose.segments
    assert verbose.duration == pytest.approx(len(german) / 16_000, abs=0.01)
    assert (
        Translation.model_validate_json(bytes(render_translation(result, ResponseFormat.json).body)).text == result.text
    )


class EnglishOnlyTranscriber:
    """A Transcriber whose model is English-only (tiny.en): any chunk sent to it is a failure of the check."""

    def __init__(self) -> None:
        self.multilingual = Remote(lambda: False)
        self.transcribe_chunk = Remote(self._refuse)

    def _refuse(self, *args: object) -> None:
        raise AssertionError("a chunk reached an English-only model's Transcriber")


def test_the_pipeline_refuses_a_translation_on_an_english_only_model(tmp_path: Path) -> None:
    path = tmp_path / "tone.wav"
    path.write_bytes(encode(np.zeros(16_000 * 2, np.float32), "wav"))
    with pytest.raises(InputRejectedError, match="English-only: it cannot translate") as refused:
        translate(EnglishOnlyTranscriber(), path)
    assert refused.value.status == 400


# Over HTTP, in-process: the fake pipeline answers TRANSCRIPT (" Hello there.", 2.5 s) for any file.


def test_a_translation_reaches_the_pipeline_as_task_translate(inprocess) -> None:
    form = {"model": "whisper-1", "prompt": "Names: Anna, Bernd.", "temperature": "0.2"}
    response = call(inprocess, "POST", PATH, files=AUDIO, data=form)
    assert response.status_code == 200, response.text
    assert Translation.model_validate(response.json()).text == "Hello there."
    request = inprocess.pipeline.requests[-1]
    assert request.options.task == "translate"
    assert request.options.prompt == "Names: Anna, Bernd."  # OpenAI's meaning: Whisper's prompt, not an LLM's
    assert request.options.temperature == 0.2 and request.options.language is None
    assert request.diarization is None and request.analysis is None
    assert not request.options.segment_timestamps  # json carries no times
    assert inprocess.spooled() == []
    [row] = inprocess.ledger.usage_page(owner_of(KEY), None, 10)
    assert row.task == "translate" and row.model == "whisper-1" and row.audio_seconds == 2.5


def test_every_openai_format_of_a_translation(inprocess) -> None:
    verbose = call(inprocess, "POST", PATH, files=AUDIO, data={"response_format": "verbose_json"})
    assert verbose.status_code == 200, verbose.text
    parsed = TranslationVerbose.model_validate(verbose.json())
    assert verbose.json()["task"] == "translate" and parsed.language == "english"
    assert parsed.text == "Hello there." and parsed.segments and parsed.segments[0].end == 2.5
    assert inprocess.pipeline.requests[-1].options.segment_timestamps
    text = call(inprocess, "POST", PATH, files=AUDIO, data={"response_format": "text"})
    assert text.headers["content-type"].startswith("text/plain") and text.text == "Hello there."
    srt = call(inprocess, "POST", PATH, files=AUDIO, data={"response_format": "srt"})
    assert "00:00:00,000 --> 00:00:02,500" in srt.text
    vtt = call(inprocess, "POST", PATH, files=AUDIO, data={"response_format": "vtt"})
    assert vtt.headers["content-type"].startswith("text/vtt") and vtt.text.startswith("WEBVTT")


def test_the_spoken_language_may_be_given(inprocess) -> None:
    response = call(inprocess, "POST", PATH, files=AUDIO, data={"language": "de"})
    assert response.status_code == 200, response.text
    assert inprocess.pipeline.requests[-1].options.language == "de"


@pytest.mark.parametrize(
    "field, value",
    [
        ("task", "diarize"),
        ("num_speakers", "2"),
        ("known_speaker_names[]", "agent"),
        ("roles", "auto"),
        ("json_schema", "{}"),
        ("emotions", "true"),
        ("stream", "true"),
        ("timestamp_granularities[]", "word"),
        ("chunking_strategy", "auto"),
        ("profanity_filter", "true"),
    ],
)
def test_transcription_fields_are_refused_by_name(inprocess, field: str, value: str) -> None:
    response = call(inprocess, "POST", PATH, files=AUDIO, data={field: value})
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith(f"not supported by /v1/audio/translations: '{field}'")
    assert inprocess.pipeline.requests == [] and inprocess.spooled() == []


def test_bad_translation_forms(inprocess) -> None:
    diarized = call(inprocess, "POST", PATH, files=AUDIO, data={"response_format": "diarized_json"})
    assert diarized.status_code == 422 and "not a translation's" in diarized.text
    unknown = call(inprocess, "POST", PATH, files=AUDIO, data={"model": "whisper-9"})
    assert unknown.status_code == 400 and "unknown model" in unknown.json()["detail"]
    neither = call(inprocess, "POST", PATH, data={"model": "whisper-1"})
    assert neither.status_code == 422
    assert call(inprocess, "POST", PATH, key=None, files=AUDIO).status_code == 401
    assert inprocess.pipeline.requests == [] and inprocess.spooled() == []


def test_an_english_only_model_is_a_clear_400(inprocess) -> None:
    async def english_only(request: PipelineRequest) -> None:
        raise InputRejectedError("this service's Whisper model is English-only: it cannot translate.")

    inprocess.pipeline.transcribe = Remote(english_only)
    response = call(inprocess, "POST", PATH, files=AUDIO)
    assert response.status_code == 400
    assert "English-only" in response.json()["detail"]
    assert inprocess.ledger.usage_page(owner_of(KEY), None, 10) == []  # nothing billed
    assert inprocess.spooled() == []


def test_the_api_reference_documents_the_endpoint(inprocess) -> None:
    schema = call(inprocess, "GET", "/openapi.json").json()
    operation = schema["paths"][PATH]["post"]
    fields = operation["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]
    assert {"file", "model", "prompt", "response_format", "temperature"} <= set(fields)
    assert "task" not in fields and "num_speakers" not in fields
