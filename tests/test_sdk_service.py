"""The official clients, unchanged but for `base_url`, against the running service: every call of the
`nexara` SDK's public API that this service implements (create in every format and granularity, diarize,
jobs with wait(), billing balance and usage paging, error mapping, refused fields; the analyses are in
test_analysis_service.py), and the `openai` SDK's
`stream=True`."""

import time

import nexara
import numpy as np
import openai
import pytest
import srt
from nexara.types.diarization import Diarization
from nexara.types.transcription import Transcription, VerboseTranscription

from devkit.media import encode
from tests.conftest import Service

PRICED_KEY = "test-key-priced"  # conftest.KEYS_FILE: 50 RUB at 0.6 RUB a minute, id 42, used by this module only


@pytest.fixture(scope="module")
def nexara_client(service: Service) -> nexara.Nexara:
    return nexara.Nexara(api_key=PRICED_KEY, base_url=f"{service.base_url}/v1", max_retries=0, timeout=300)


def test_create_in_every_format_and_granularity(nexara_client: nexara.Nexara, greeting: bytes) -> None:
    text = nexara_client.transcriptions.create(file=greeting, language="auto")
    assert isinstance(text, Transcription) and "know you were there" in text.text.lower()

    verbose = nexara_client.transcriptions.create(file=greeting, response_format="verbose_json")
    assert isinstance(verbose, VerboseTranscription) and verbose.segments and verbose.words is None

    worded = nexara_client.transcriptions.create(
        file=greeting, response_format="verbose_json", timestamp_granularities=["word"]
    )
    assert worded.words is not None
    assert [w.word for w in worded.words][-1] == "there." and all(0 <= w.prob <= 1 for w in worded.words)

    by_sentence = nexara_client.transcriptions.create(
        file=greeting, response_format="verbose_json", timestamp_granularities=["sentence"]
    )
    assert by_sentence.sentences is not None
    assert by_sentence.segments is None and len(by_sentence.sentences) >= 3  # "Hello?" "Hello?" "Oh, hello." ...
    assert by_sentence.sentences[-1].text.endswith("there.") and by_sentence.words
    assert all(s.start <= s.end for s in by_sentence.sentences)
    assert [s.start for s in by_sentence.sentences] == sorted(s.start for s in by_sentence.sentences)

    for response_format in ("text", "vtt", "srt"):
        document = nexara_client.transcriptions.create(file=greeting, response_format=response_format)
        assert isinstance(document, str) and "know you were there" in document.lower()
    assert list(srt.parse(document))

    clean = nexara_client.transcriptions.create(file=greeting, profanity_filter=True)
    assert clean.text == text.text  # nothing to mask in this clip; masking itself: tests/test_pipeline.py


def test_diarize_returns_the_sdks_diarization(nexara_client: nexara.Nexara, call_samples: np.ndarray) -> None:
    audio = encode(call_samples[: 12 * 16_000], "flac")
    result = nexara_client.transcriptions.create(
        file=audio, task="diarize", num_speakers=2, diarization_setting="telephonic"
    )
    assert isinstance(result, Diarization) and result.task == "diarize"
    assert result.segments and {segment.speaker for segment in result.segments} <= {"speaker_0", "speaker_1"}
    assert result.words and {word.speaker for word in result.words} <= {"speaker_0", "speaker_1"}
    assert "know you were there" in " ".join(segment.text for segment in result.segments).lower()


def test_a_job_waited_for_and_retrieved_by_id(nexara_client: nexara.Nexara, greeting: bytes) -> None:
    job = nexara_client.transcriptions.create_job(file=greeting, response_format="verbose_json")
    result = job.wait(timeout=120, poll_interval=0.3)
    assert isinstance(result, VerboseTranscription) and "know you were there" in result.text.lower()
    again = nexara_client.transcriptions.retrieve_job(job.job_id)
    assert again.status == "complete" and again.completed_at is not None


def test_balance_and_usage_pages_of_this_key(nexara_client: nexara.Nexara, greeting: bytes) -> None:
    before = nexara_client.billing.balance()
    assert before.currency == "RUB" and before.rate_per_min == 0.6
    for _ in range(3):
        nexara_client.transcriptions.create(file=greeting, model="whisper-base")
    after = nexara_client.billing.balance()
    assert after.balance == pytest.approx(before.balance - 3 * 4.0 / 60 * 0.6, abs=1e-3)  # 4 s each

    first = nexara_client.billing.usage(limit=2)
    assert first.has_more and first.next_cursor is not None and first.currency == "RUB"
    newest = first.items[0]
    assert newest.model == "whisper-base" and newest.task == "transcribe" and newest.language == "en"
    assert newest.seconds == pytest.approx(4.0, abs=0.01) and newest.cost == pytest.approx(0.04, abs=1e-4)
    assert newest.bytes == len(greeting) and newest.api_key.id == 42 and newest.api_key.name == "sdk"
    second = nexara_client.billing.usage(cursor=first.next_cursor, limit=2)
    assert not {item.request_id for item in first.items} & {item.request_id for item in second.items}
    every = list(nexara_client.billing.iter_usage(limit=3))
    assert [item.timestamp for item in every] == sorted((item.timestamp for item in every), reverse=True)
    assert len(every) >= 3 and {item.api_key.id for item in every} == {42}  # only this key's


def test_errors_map_to_the_sdks_exceptions(service: Service, nexara_client: nexara.Nexara, greeting: bytes) -> None:
    base_url = f"{service.base_url}/v1"
    with pytest.raises(nexara.AuthenticationError):
        nexara.Nexara(api_key="not-a-key", base_url=base_url, max_retries=0).billing.balance()
    with pytest.raises(nexara.NotFoundError):
        nexara_client.transcriptions.retrieve_job("00000000-0000-0000-0000-000000000000")
    with pytest.raises(nexara.BadRequestError, match="not a readable audio"):
        nexara_client.transcriptions.create(file=b"this is not audio at all" * 40)
    with pytest.raises(nexara.InsufficientBalanceError, match="insufficient funds"):
        nexara.Nexara(api_key="test-key-broke", base_url=base_url, max_retries=0).transcriptions.create(file=greeting)
    limited = nexara.Nexara(api_key="test-key-limited", base_url=base_url, max_retries=0)
    with pytest.raises(nexara.RateLimitError):
        for _ in range(5):
            limited.billing.balance()
    time.sleep(1.0)
    patient = nexara.Nexara(api_key="test-key-limited", base_url=base_url, max_retries=2)
    assert [patient.billing.balance().currency for _ in range(4)] == ["EUR"] * 4  # retried after Retry-After


def test_openai_stream_sends_deltas_before_the_last_chunk_is_transcribed(
    service: Service, call_samples: np.ndarray
) -> None:
    """60 s of the call (the 30 s twice, so it comes in several chunks): the first delta comes while later
    chunks are still being transcribed, and the deltas joined are the done event's text."""
    audio = encode(np.concatenate([call_samples, call_samples]), "flac")
    sdk = openai.OpenAI(base_url=f"{service.base_url}/v1", api_key=service.api_key, max_retries=0, timeout=300)
    started = time.monotonic()
    stream = sdk.audio.transcriptions.create(model="whisper-1", file=("call.flac", audio), stream=True)
    deltas, arrivals, done = [], [], None
    for event in stream:
        if event.type == "transcript.text.delta":
            deltas.append(event.delta)
            arrivals.append(time.monotonic() - started)
        elif event.type == "transcript.text.done":
            done = event
            finished = time.monotonic() - started
    assert done is not None and len(deltas) >= 2
    assert "".join(deltas).strip() == done.text and "know you were there" in done.text.lower()
    assert arrivals[0] < finished - 0.2, (arrivals, finished)  # the first text came before the rest was done
