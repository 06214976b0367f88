"""Redaction through the running service (Whisper tiny.en), on a call espeak-ng speaks (a name, a city, a phone
number, an e-mail address): the `openai` SDK's transcription in every format (text, segments, words, sentences,
srt, vtt, diarized_json) and streamed (`stream=true`: no delta holds part of an entity), a job whose stored record
and the service's log hold none of the entities, the `deepgram-sdk`'s `redact`, the `assemblyai` SDK's `redact_pii`
with its redacted audio (a tone over the redacted words), and live sessions (nexara's socket: its SDK has no field
for it; the OpenAI realtime session with the `openai` SDK) that never send part of an entity."""

import asyncio
import io
import json
import re
import sqlite3
import tempfile
from pathlib import Path

import assemblyai as aai
import av
import numpy as np
import pytest

from devkit.jobs import JobClient
from devkit.media import encode
from devkit.realtime import SESSION, pcm24k, transcription_session
from devkit.vocabulary_set import espeak_ng, voiced
from tests.conftest import Service
from tests.sdk_settings import assemblyai_pointed_at
from tests.test_deepgram_service import deepgram_client
from tests.test_live_service import raw_session

pytestmark = pytest.mark.skipif(espeak_ng() is None, reason="espeak-ng is not installed: it speaks the call")
SAID = (
    "Hello, my name is Sarah Johnson and I live in Chicago. You can reach me at 4 1 5, 5 5 5, 2 6 7 1, or write to"
    " sarah dot johnson at gmail dot com."
)
SECRETS = ("Sarah", "Johnson", "Chicago", "415", "2671", "gmail")
"""What must never be sent or kept: tiny.en writes `Sarah Johnson`, `Chicago`, `415-555-2671`, `...atgmail.com`."""
KEPT_SECRETS = ("Sarah", "Johnson", "Chicago", "555-2671", "atgmail")
"""The same, as looked for in the whole service log (where other tests' numbers are: `415` in a duration)."""
CLASSES = ["person_name", "location", "phone_number", "email_address"]
TOKENS = ("[PERSON_NAME]", "[LOCATION]", "[PHONE_NUMBER]", "[EMAIL_ADDRESS]")


@pytest.fixture(scope="module")
def said() -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        return voiced(SAID, "en", Path(folder), 145)


HASH_TOKEN = r"\[[A-Z_]+_[0-9a-f]+\]"
"""`hash` mode's token, whose hex digits may hold `415` or `2671` by chance: `[PERSON_NAME_2a378415]` is no leak."""


def leaked(text: str) -> list[str]:
    text = re.sub(HASH_TOKEN, " ", text).lower()
    return [secret for secret in SECRETS if secret.lower() in text]


def test_every_format_is_redacted_and_words_keep_their_times(openai_client, said: np.ndarray) -> None:
    wav = ("call.wav", encode(said, "wav"))
    redact = {"redact": ",".join(CLASSES)}
    verbose = openai_client.audio.transcriptions.create(
        model="whisper-1", file=wav, response_format="verbose_json", timestamp_granularities=["word", "segment"],
        extra_body=redact,
    )  # fmt: skip
    assert not leaked(verbose.text) and all(token in verbose.text for token in TOKENS), verbose.text
    assert not leaked(" ".join(s.text for s in verbose.segments or []))
    words = verbose.words or []
    assert not leaked(" ".join(w.word for w in words)) and any(w.word.startswith("[PERSON_NAME]") for w in words)
    assert all(w.end > w.start for w in words)
    sentences = openai_client.audio.transcriptions.create(
        model="whisper-1", file=wav, response_format="verbose_json",
        extra_body={**redact, "timestamp_granularities[]": "sentence"},
    )  # fmt: skip
    said_sentences = sentences.model_dump().get("sentences") or []
    assert said_sentences and not leaked(json.dumps(said_sentences)) and "[PERSON_NAME]" in json.dumps(said_sentences)
    for response_format in ("srt", "vtt", "text"):
        body = openai_client.audio.transcriptions.create(
            model="whisper-1", file=wav, response_format=response_format, extra_body=redact
        )
        assert not leaked(str(body)) and "[PERSON_NAME]" in str(body), body
    masked = openai_client.audio.transcriptions.create(
        model="whisper-1", file=wav, extra_body={**redact, "redact_mode": "mask"}
    )
    assert not leaked(masked.text) and "*****" in masked.text
    diarized = openai_client.audio.transcriptions.create(
        model="gpt-4o-transcribe-diarize", file=wav, response_format="diarized_json", extra_body=redact
    )
    assert not leaked(json.dumps(diarized.model_dump())) and "[PERSON_NAME]" in diarized.text


def test_a_stream_never_holds_part_of_an_entity(openai_client, said: np.ndarray) -> None:
    stream = openai_client.audio.transcriptions.create(
        model="whisper-1", file=("call.wav", encode(said, "wav")), stream=True, extra_body={"redact": CLASSES}
    )
    deltas, done = [], None
    for event in stream:
        if event.type == "transcript.text.delta":
            deltas.append(event.delta)
        elif event.type == "transcript.text.done":
            done = event.text
    assert deltas and not any(leaked(delta) for delta in deltas) and done is not None and not leaked(done)


def test_a_jobs_stored_record_and_the_log_keep_no_entity(service: Service, said: np.ndarray) -> None:
    form = {"response_format": "verbose_json", "redact": ",".join(CLASSES), "redact_mode": "hash"}
    with JobClient(service.base_url, service.api_key, timeout_s=300) as jobs:
        ids = [jobs.submit(encode(said, kind), f"call.{kind}", **form)["job_id"] for kind in ("flac", "wav")]
        first, second = (jobs.wait(job_id)["result"] for job_id in ids)
    assert not leaked(first["text"]) and "[PERSON_NAME_" in first["text"]
    token = next(word for word in first["text"].split() if word.startswith("[PERSON_NAME_"))
    assert token in second["text"] and not leaked(second["text"])  # the same name, the same token, within the key
    with sqlite3.connect(f"file:{service.state_dir / 'jobs.sqlite3'}?mode=ro", uri=True) as database:
        marks = ",".join("?" * len(ids))
        records = [row[0] for row in database.execute(f"SELECT record FROM jobs WHERE job_id IN ({marks})", ids)]
    assert len(records) == 2 and all("[PERSON_NAME_" in record and not leaked(_words(record)) for record in records)
    log = service.process.log_path.read_text(errors="replace")
    assert not [secret for secret in KEPT_SECRETS if secret in log]


_NOT_WORDS = re.compile(
    HASH_TOKEN  # a hash token
    + r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # an id
    r"|\b(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b"  # the owner's hash
    r"|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?"  # a time
)


def _words(record: str) -> str:
    """The record's strings, without the ids, hashes and times whose digits may hold `415` or `2671` by chance
    (numbers are JSON numbers, not strings: a word's time of 3.2671 s is no leak)."""

    def strings(value: object) -> list[str]:
        if isinstance(value, str):
            return [_NOT_WORDS.sub(" ", value)]
        if isinstance(value, dict):
            return [text for item in value.values() for text in strings(item)]
        if isinstance(value, list):
            return [text for item in value for text in strings(item)]
        return []

    return " ".join(strings(json.loads(record)))


def test_deepgram_redact_hides_the_entities(service: Service, said: np.ndarray) -> None:
    response = deepgram_client(service).listen.v1.media.transcribe_file(
        request=encode(said, "wav"), model="nova-3", punctuate=True, redact=["pii"]
    )
    (alternative,) = response.results.channels[0].alternatives or []
    assert not leaked(alternative.transcript or "") and "[PERSON_NAME]" in (alternative.transcript or "")
    assert not leaked(" ".join(w.word or "" for w in alternative.words or []))


def test_assemblyai_redacts_the_text_and_beeps_the_audio(service: Service, said: np.ndarray) -> None:
    policies = [aai.PIIRedactionPolicy.person_name, aai.PIIRedactionPolicy.location]
    config = aai.TranscriptionConfig().set_redact_pii(
        policies=[*policies, aai.PIIRedactionPolicy.phone_number, aai.PIIRedactionPolicy.email_address],
        substitution=aai.PIISubstitutionPolicy.entity_name,
        redact_audio=True,
        redact_audio_quality=aai.PIIRedactedAudioQuality.wav,
    )
    with assemblyai_pointed_at(service.base_url, service.api_key):
        transcript = aai.Transcriber(config=config).transcribe(encode(said, "wav"))
        assert transcript.status == aai.TranscriptStatus.completed, transcript.error
        text = transcript.text or ""
        assert "[PERSON_NAME]" in text and "[LOCATION]" in text and not leaked(text)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "redacted.wav"
            transcript.save_redacted_audio(str(path))
            beeped = _samples(path.read_bytes())
    redacted = [(w.start / 1000, w.end / 1000) for w in transcript.words or [] if w.text.startswith("[")]
    clear = [(w.start / 1000, w.end / 1000) for w in transcript.words or [] if not w.text.startswith("[")]
    assert redacted and abs(len(beeped) / 16_000 - len(said) / 16_000) < 0.2
    assert all(_tone_share(beeped, span) > 0.9 for span in redacted)  # the tone, and nothing else, over each
    assert all(_tone_share(beeped, span) < 0.5 for span in clear[:5])


def _samples(audio: bytes) -> np.ndarray:
    with av.open(io.BytesIO(audio), "r") as container:
        return np.concatenate([frame.to_ndarray().reshape(-1) for frame in container.decode(audio=0)]).astype(float)


def _tone_share(samples: np.ndarray, span: tuple[float, float]) -> float:
    """The share of the span's energy at 1 kHz."""
    start, end = int((span[0] + 0.06) * 16_000), int((span[1] - 0.02) * 16_000)
    part = samples[start : max(end, start + 160)]
    spectrum = np.abs(np.fft.rfft(part)) ** 2
    tone = (np.fft.rfftfreq(len(part), 1 / 16_000) > 950) & (np.fft.rfftfreq(len(part), 1 / 16_000) < 1050)
    return float(spectrum[tone].sum() / max(spectrum.sum(), 1e-12))


def test_live_sessions_never_send_part_of_an_entity(service: Service, said: np.ndarray) -> None:
    pcm = (said * 32767).astype("<i2").tobytes()
    frames: list[bytes | str] = [pcm[offset : offset + 3200] for offset in range(0, len(pcm), 3200)]
    frames.append(b"")
    received, _ = asyncio.run(raw_session(service, "?redact=" + ",".join(CLASSES), frames))
    sent = [event for event in received if event["type"] in ("transcript", "session.ended")]
    assert sent and not [event for event in sent if leaked(json.dumps(event))], [event.get("text") for event in sent]
    assert "[PERSON_NAME]" in json.dumps(sent)

    session = json.loads(json.dumps(SESSION))
    session["audio"]["input"]["transcription"]["redact"] = CLASSES
    events, _ = asyncio.run(transcription_session(service.base_url, service.api_key, pcm24k(said), 3.0, session, 4.0))
    texts = [getattr(e, "delta", None) or getattr(e, "transcript", None) or "" for _, e in events]
    assert any("[PERSON_NAME]" in text for text in texts) and not [t for t in texts if leaked(t)], texts
