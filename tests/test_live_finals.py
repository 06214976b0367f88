"""The default model's live final transcripts, read offline (issue 61): one channel of a live session driven in
this process by Whisper base, as OpenAI's realtime sessions open it (a turn at every 500 ms pause), each turn read
again as a file's chunk is. Through the service the same path is tested with tiny.en
(`tests/test_openai_realtime_service.py`); base is the model users get by default."""

import asyncio
from pathlib import Path

import numpy as np
import pytest

from deployments.config import LiveConfig, WhisperModelConfig
from deployments.files.decoding import decode_audio
from deployments.live._second_readings import Outcome
from deployments.live.events import SessionSettings
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import ChunkOptions
from devkit.live_offline import stream
from devkit.media import JFK_REFERENCE
from devkit.wer import word_error_rate

REALTIME = SessionSettings(language="en", turn_detection="vad", silence_ms=500)
"""OpenAI's server VAD, as `/v1/realtime` opens a session by default."""


@pytest.fixture(scope="module")
def base() -> CTranslate2Engine:
    return CTranslate2Engine(WhisperModelConfig(model="embedded:base", cpu_threads=2))


def test_every_turn_of_the_call_is_read_again_and_reads_as_the_file(
    base: CTranslate2Engine, call_samples: np.ndarray
) -> None:
    run = asyncio.run(stream(base, call_samples, LiveConfig(), REALTIME))
    (filed,) = base.transcribe_batch([call_samples], ChunkOptions(language="en"))
    file_text = "".join(segment.text for segment in filed.segments)
    distance = word_error_rate(file_text, run.final)
    print(f"\nbase live finals {distance:.3f} from the file's words; {dict(run.outcomes)}")
    assert set(run.outcomes) == {Outcome.READ} and run.outcomes[Outcome.READ] >= 2  # every turn, short ones too
    assert distance <= 0.06, (run.final, file_text)


def test_jfk_live_is_within_one_word_of_the_reference(base: CTranslate2Engine, jfk_flac: Path) -> None:
    run = asyncio.run(stream(base, decode_audio(jfk_flac).samples, LiveConfig(), REALTIME))
    assert set(run.outcomes) == {Outcome.READ}
    assert word_error_rate(JFK_REFERENCE, run.final) <= 0.05, run.final
