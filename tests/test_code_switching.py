"""Speech whose language changes (issue 37): English, a pause, then German, spoken by espeak-ng and run through
the pipeline's chunking and assembly with the real Whisper base engine (in-process, no Ray). Each part keeps
its own language's words instead of being translated into the file's main language."""

from pathlib import Path

import pytest

from deployments.types import Segment, Transcript
from devkit.code_switching import base_engine, code_switched, espeak_ng, text_between, transcribe
from serve_app.rendering.response_formats import TimestampGranularity, verbose_json

needs_espeak = pytest.mark.skipif(
    espeak_ng() is None, reason="espeak-ng is not installed: it speaks the code-switched recording"
)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    return code_switched(tmp_path_factory.mktemp("code_switching"))


def _words(text: str) -> set[str]:
    return {word.strip(".,!?").lower() for word in text.split()}


@needs_espeak
def test_each_language_keeps_its_words_and_the_segments_carry_both_languages(recording: tuple[Path, float]) -> None:
    path, switch = recording
    transcript = transcribe(base_engine(), path, language_per_chunk=True)
    english, german = _words(text_between(transcript, 0, switch)), _words(text_between(transcript, switch, 1e9))
    assert {"weather", "mountains", "afternoon", "lake"} <= english
    assert {"abend", "stadt", "essen", "geschichte", "morgen"} <= german
    assert {segment.language for segment in transcript.segments} == {"en", "de"}
    assert transcript.language == "en"  # the language of most speech
    for segment in transcript.segments:
        assert segment.language == ("en" if (segment.start + segment.end) / 2 < switch else "de")


@needs_espeak
def test_one_language_per_file_keeps_the_old_behaviour(recording: tuple[Path, float]) -> None:
    path, _ = recording
    transcript = transcribe(base_engine(), path, language_per_chunk=False)
    assert transcript.language == "en"
    assert {segment.language for segment in transcript.segments} == {"en"}


def test_verbose_json_segments_carry_their_language_and_both_sdks_still_read_them() -> None:
    from nexara.types.transcription import VerboseTranscription
    from openai.types.audio import TranscriptionVerbose

    segments = [
        Segment(
            id=index, seek=0, start=index, end=index + 1.0, text=text, tokens=[], temperature=0.0,
            avg_logprob=-0.1, compression_ratio=1.0, no_speech_prob=0.0, language=language,
        )
        for index, (text, language) in enumerate([(" Good evening.", "en"), (" Guten Abend.", "de")])
    ]  # fmt: skip
    transcript = Transcript(language="en", duration=2.0, segments=segments)
    body = verbose_json(transcript, [TimestampGranularity.segment]).model_dump(exclude_none=True)
    assert [segment["language"] for segment in body["segments"]] == ["en", "de"]
    assert body["language"] == "english"
    nexara_segments = VerboseTranscription.model_validate(body).segments
    assert nexara_segments is not None and nexara_segments[1].text == " Guten Abend."  # extra fields ignored
    openai_segments = TranscriptionVerbose.model_validate(body).segments
    assert openai_segments is not None and openai_segments[1].text == " Guten Abend."  # kept as extras
