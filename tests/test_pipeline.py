"""The pipeline's language choice and chunk joining, with fake deployments in place of handles."""

import asyncio
from collections.abc import Callable

import numpy as np

from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript, DecodedAudio, Segment, TranscriptionOptions
from serve_app.config import ChunkingConfig, LimitsConfig
from serve_app.pipeline import TranscriptionPipeline, main_language


class _Method:
    def __init__(self, function: Callable[..., object]) -> None:
        self.function = function

    async def remote(self, *args: object) -> object:
        return self.function(*args)


class _Decoder:
    def __init__(self, audio: DecodedAudio) -> None:
        self.decode = _Method(lambda source: audio)


class _Transcriber:
    """Detects the language a chunk was 'spoken' in from its first sample (0: en, 1: de)."""

    def __init__(self) -> None:
        self.calls: list[ChunkOptions] = []
        self.transcribe_chunk = _Method(self._transcribe)

    def _transcribe(self, chunk: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        self.calls.append(options)
        language = options.language or ("de" if chunk[0] == 1 else "en")
        segment = Segment(
            id=0, seek=0, start=0.0, end=1.0, text=f" [{language}]", tokens=[], temperature=0.0,
            avg_logprob=0.0, compression_ratio=1.0, no_speech_prob=0.0,
        )  # fmt: skip
        return ChunkTranscript(language=language, segments=[segment])


def _audio(chunk_languages: list[int], chunk_s: list[float]) -> DecodedAudio:
    pieces, chunks, at = [], [], 0
    for language, seconds in zip(chunk_languages, chunk_s, strict=True):
        length = int(seconds * SAMPLE_RATE)
        pieces.append(np.full(length, language, dtype=np.float32))
        chunks.append((at, at + length))
        at += length
    return DecodedAudio(np.concatenate(pieces), tuple(chunks))


def _run(audio: DecodedAudio, language: str | None = None) -> tuple[object, _Transcriber]:
    transcriber = _Transcriber()
    pipeline = TranscriptionPipeline(_Decoder(audio), transcriber, None, LimitsConfig(), ChunkingConfig())
    transcript = asyncio.run(pipeline.transcribe(b"", TranscriptionOptions(language=language)))
    return transcript, transcriber


def test_the_language_of_most_speech_wins_and_other_chunks_are_decoded_again_in_it() -> None:
    transcript, transcriber = _run(_audio([1, 0, 0], [5.0, 20.0, 20.0]))  # 5 s detected as German, 40 s English
    assert transcript.language == "en"
    assert [segment.text for segment in transcript.segments] == [" [en]", " [en]", " [en]"]
    assert [call.language for call in transcriber.calls] == [None, None, None, "en"]  # one chunk decoded again
    assert [segment.start for segment in transcript.segments] == [0.0, 5.0, 25.0]  # on the file's timeline


def test_a_given_language_is_used_for_every_chunk_without_detection() -> None:
    transcript, transcriber = _run(_audio([1, 0], [5.0, 5.0]), language="fr")
    assert transcript.language == "fr"
    assert [call.language for call in transcriber.calls] == ["fr", "fr"]


def test_main_language_ties_go_to_the_earliest_chunk() -> None:
    transcripts = [ChunkTranscript(language=code, segments=[]) for code in ("de", "en")]
    assert main_language(transcripts, ((0, 100), (100, 200))) == "de"
