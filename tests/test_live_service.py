"""Live transcription through the running service (`/v1/transcribe`), with the nexara SDK's own realtime
client, unchanged but for its `streaming_url`: final timed words as the audio is sent, speakers, turns,
billing, and every error the protocol names."""

import asyncio
import itertools
import json
import warnings
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import nexara
import numpy as np
import pytest
import soxr
import websockets
from nexara import AsyncNexara
from nexara.types.realtime import RealtimeSessionEnded, RealtimeTranscript, RealtimeTurnEnd

from devkit.code_switching import espeak_ng, spoken
from devkit.media import encode, pyannote_sample
from devkit.prometheus import settled, value
from devkit.wer import stm_transcript, word_error_rate
from tests.conftest import LIVE_CONFIG, Service
from tests.test_live_session import stream_audio

pytestmark = pytest.mark.paced  # see tests/conftest.py: after the other service tests

LIVE_KEY = "test-key-live"  # conftest.KEYS_FILE: 5 RUB at 0.6 RUB a minute, id 43, used by this module only
FRAME_S = 0.1


CALL_S = 30
"""pyannote's whole call: both speakers, several exchanges, 81 words (with 20 s, 37 words, one word was 2.7 WER
points and the streamed-vs-file bound measured single words)."""


@pytest.fixture(scope="module")
def call_start(call_samples: np.ndarray) -> np.ndarray:
    return call_samples[: CALL_S * 16_000]


@pytest.fixture(scope="module")
def call_pcm(call_start: np.ndarray) -> bytes:
    return (call_start * 32767).astype("<i2").tobytes()


def live_client(service: Service, key: str = LIVE_KEY) -> AsyncNexara:
    return AsyncNexara(
        api_key=key, base_url=f"{service.base_url}/v1", streaming_url=service.base_url.replace("http", "ws")
    )


async def paced(pcm: bytes, speed: float = 1.0) -> AsyncIterator[bytes]:
    """The audio in 100 ms frames, sent `speed` times faster than it plays."""
    frame = int(16_000 * FRAME_S) * 2
    loop = asyncio.get_running_loop()
    started = loop.time()
    for index, offset in enumerate(range(0, len(pcm), frame)):
        yield pcm[offset : offset + frame]
        await asyncio.sleep(max(0.0, started + (index + 1) * FRAME_S / speed - loop.time()))


Diarized = tuple[list, RealtimeSessionEnded | None, float | None, float]
"""A session's events, its end, when its first words came and how long it took."""


async def _diarized(service: Service, call_pcm: bytes) -> Diarized:
    client = live_client(service)
    async with client.realtime.connect(diarize=True, turn_detection="smart", client_id="test") as session:
        assert session.info is not None and session.info.diarization is not None
        assert session.info.client_id == "test" and session.info.diarization.max_speakers == 4
        events, first_at = [], None
        loop = asyncio.get_running_loop()
        started = loop.time()
        async for event in session.stream(paced(call_pcm, speed=2.0)):
            if first_at is None and isinstance(event, RealtimeTranscript):
                first_at = loop.time() - started
            events.append(event)
        return events, session.ended, first_at, loop.time() - started


async def _real_time(service: Service, call_pcm: bytes) -> tuple[str, str]:
    """The call at real time: its streamed words and its final text. Not at once with the diarized session: beside
    the other worker's cluster tests the replica fell behind, and a group kept its streamed words (docs/development)."""
    async with live_client(service, "test-key-1").realtime.connect(turn_detection="smart") as session:
        streamed = [e.text async for e in session.stream(paced(call_pcm)) if isinstance(e, RealtimeTranscript)]
        assert session.ended is not None and isinstance(session.ended.text, str)
        return "".join(streamed), session.ended.text


def speaker_purity(words: list[tuple[float, int]], rttm: Path) -> tuple[float, int]:
    """How the live labels follow the reference speakers: the share of words whose label's most common reference
    speaker is theirs (a label split off for a few words costs nothing more than those words), and how many
    reference speakers are some label's most common one (two people merged into one label lose one)."""
    reference = [line.split() for line in rttm.read_text().splitlines() if line.startswith("SPEAKER")]
    turns = [(float(r[3]), float(r[3]) + float(r[4]), r[7]) for r in reference]
    pairs = []
    for middle, speaker in words:
        covering = [name for start, end, name in turns if start <= middle <= end]
        if len(covering) == 1:  # overlapped speech has no single right answer
            pairs.append((speaker, covering[0]))
    heard = {label: Counter(name for ours, name in pairs if ours == label) for label, _ in pairs}
    majority = {label: names.most_common(1)[0][0] for label, names in heard.items()}
    return sum(majority[label] == name for label, name in pairs) / len(pairs), len(set(majority.values()))


def test_sdk_streams_final_timed_words_with_speakers(service: Service, call_start: np.ndarray, call_pcm: bytes) -> None:
    """The call at twice real time (the test's budget), with speakers and turn detection."""
    events, ended, first_at, took = asyncio.run(_diarized(service, call_pcm))
    assert ended is not None and first_at is not None
    transcripts = [e for e in events if isinstance(e, RealtimeTranscript)]
    assert first_at < took / 2  # words arrive while the audio is still being sent
    words = [w for e in transcripts for w in e.words]
    assert all(w.start % 80 == 0 and w.end % 80 == 0 and w.end > w.start for w in words)
    assert all(b.start >= a.end for a, b in itertools.pairwise(words))  # monotonic, no repeats
    turn_ends = [e for e in events if isinstance(e, RealtimeTurnEnd)]
    assert isinstance(ended.text, str)  # one channel
    assert " ".join(e.text for e in turn_ends).split() == ended.text.split()  # the turns' final transcripts
    assert ended.audio_duration_ms == ended.billed_ms == CALL_S * 1000 and ended.channels_transcribed == 1

    reference = stm_transcript(pyannote_sample().with_suffix(".stm"), until=CALL_S)
    with service.client(api_key=LIVE_KEY) as http:
        filed = http.post(
            "/v1/audio/transcriptions",
            files={"file": ("call.wav", encode(call_start, "wav"))},
        )
    assert filed.status_code == 200, filed.text
    live_wer, file_wer = word_error_rate(reference, ended.text), word_error_rate(reference, filed.json()["text"])
    print(f"\nlive WER {live_wer:.3f} vs file {file_wer:.3f} (2x speed)")
    # The session's text is each utterance read again whole (issue 50): 12.3% against the file's 13.6% at 2x on
    # 2 cores (the streamed words alone lost up to 13.6 points). Real time: test_the_call_at_real_time_...
    assert live_wer <= file_wer + 0.10, (live_wer, file_wer)

    labelled = [((w.start + w.end) / 2000, w.speaker) for w in words]
    purity, speakers_found = speaker_purity(labelled, pyannote_sample().with_suffix(".rttm"))  # type: ignore[arg-type]  # diarized: every word has a speaker
    print(f"speaker labels {sorted(Counter(s for _, s in labelled).items())}: purity {purity:.3f}")
    assert speakers_found == 2 and purity >= 0.8  # both people found, never merged; a label split off is allowed
    assert turn_ends and all(e.turn is not None for e in transcripts)

    usage = nexara.Nexara(api_key=LIVE_KEY, base_url=f"{service.base_url}/v1").billing.usage(limit=5)
    live = [item for item in usage.items if item.task == "realtime"]
    assert live and live[0].seconds == pytest.approx(CALL_S) and live[0].api_key.id == 43


def test_the_call_at_real_time_reads_as_its_file_transcription(
    service: Service, call_start: np.ndarray, call_pcm: bytes
) -> None:
    """Issue 50: the session's text (each utterance read again whole when it ends) is within 8% of the words the
    same audio gets as a file; the streamed words come first, as they are spoken. 1.4% in three runs once the
    second readings ran beside the streaming; 6.9-16.7% while they held it up (its next readings came late and
    in larger steps: the streamed words were 18.1% from the file's, now 12.5%)."""
    streamed, text = asyncio.run(_real_time(service, call_pcm))
    with service.client(api_key="test-key-1") as http:
        filed = http.post("/v1/audio/transcriptions", files={"file": ("call.wav", encode(call_start, "wav"))})
    assert filed.status_code == 200, filed.text
    from_file, streamed_from_file = (
        word_error_rate(filed.json()["text"], text),
        word_error_rate(filed.json()["text"], streamed),
    )
    print(f"\nnexara at real time: final {from_file:.3f}, streamed {streamed_from_file:.3f} from the file's words")
    # 6% is the default model's bound (tests/test_live_finals.py, base); tiny.en's own readings of the call vary by
    # ~4 of its 72 words with the span read and the CPU's int8 kernels ("Neither did I" / "I needed to design",
    # five or six "Hello."), so here: within 8%, and closer to the file's words than the streamed ones
    assert from_file <= min(0.08, streamed_from_file), (from_file, text, filed.json()["text"])


def test_a_turn_ends_where_one_speaker_stops_and_the_other_starts(service: Service) -> None:
    audio, _ = stream_audio()  # one speaker, 3.5 s of silence, the other
    pcm = (audio * 32767).astype("<i2").tobytes()

    async def run() -> list:
        async with live_client(service).realtime.connect(turn_detection="smart", diarize=True) as session:
            return [event async for event in session.stream(paced(pcm, speed=2.0))]

    events = asyncio.run(run())
    first, second = [e for e in events if isinstance(e, RealtimeTurnEnd)]
    assert abs(first.end - 3_550) <= 500 and "New Jersey" in first.text and "Yankee" in second.text
    assert first.confidence is not None and second.start >= 7_000
    assert {w.speaker for w in first.words} != {w.speaker for w in second.words}


def test_refusals_before_the_upgrade_are_the_sdks_exceptions(service: Service) -> None:
    async def connect(key: str) -> None:
        async with live_client(service, key).realtime.connect():
            pass

    with pytest.raises(nexara.AuthenticationError):
        asyncio.run(connect("not-a-key"))
    with pytest.raises(nexara.InsufficientBalanceError):
        asyncio.run(connect("test-key-broke"))

    async def too_many() -> None:
        client = live_client(service, "test-key-2")
        sessions = [client.realtime.connect() for _ in range(LIVE_CONFIG["max_sessions_per_key"] + 1)]
        opened = []
        try:
            for session in sessions:
                opened.append(await session.__aenter__())
        finally:
            for session in opened:
                await session.close()

    with pytest.raises(nexara.RateLimitError):
        asyncio.run(too_many())


async def raw_session(
    service: Service, query: str, frames: list[bytes | str], key: str = "test-key-1"
) -> tuple[list[dict], int | None]:
    """What a plain websockets client gets back for these frames: the JSON frames and the close code."""
    url = service.base_url.replace("http", "ws") + "/v1/transcribe" + query
    received = []
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as socket:
        for frame in frames:
            await socket.send(frame)
        try:
            while True:
                received.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
        except websockets.ConnectionClosed:
            return received, socket.close_code


@pytest.mark.parametrize(
    ("query", "frames", "code", "reason"),
    [
        ("?sample_rate=11025", [], 4000, "invalid_config"),
        ("?delay_ms=100&bogus=1", [], 4000, "invalid_config"),
        ("", ["not json"], 4004, "invalid_message"),
        ("", ['{"type": "transcribe.please"}'], 4004, "invalid_message"),
        ("?encoding=pcm_f32le", [np.array([np.inf] * 64, "<f4").tobytes(), b""], 4002, "invalid_audio"),
        ("", [b"\0" * (2**20 + 2)], 4002, "invalid_audio"),
        ("", [b"\0" * 3200], 4008, "idle_timeout"),  # then nothing for longer than the test's 3 s timeout
    ],
)
def test_errors_are_an_error_frame_then_the_close_code(
    service: Service, query: str, frames: list, code: int, reason: str
) -> None:
    received, close_code = asyncio.run(raw_session(service, query, frames))
    assert received[-1]["type"] == "error" and received[-1]["code"] == reason and received[-1]["message"]
    assert close_code == code


def test_a_session_ends_with_4402_when_the_balance_runs_out(service: Service, call_pcm: bytes) -> None:
    """test-key-live-short holds 4 audio seconds: what was heard in them is sent, then the error."""

    async def run() -> list:
        events = []
        async with live_client(service, "test-key-live-short").realtime.connect() as session:
            with pytest.raises(nexara.InsufficientBalanceError):
                async for event in session.stream(paced(call_pcm[6 * 32_000 : 16 * 32_000], speed=4.0)):
                    events.append(event)
        return events

    events = asyncio.run(run())
    assert "hello" in "".join(e.text for e in events).lower()  # "Hello? Hello? Oh, hello." lies in those 4 s
    with service.client(api_key="test-key-live-short") as http:
        assert http.get("/v1/billing/balance").json()["balance"] <= 0


def test_two_channels_of_8_khz_mu_law_are_transcribed_each_on_its_own(service: Service, call_start: np.ndarray) -> None:
    """Telephony: one party per channel, G.711 mu-law at 8 kHz, interleaved; resampled and split here."""
    left, right = call_start[6 * 16_000 : 10 * 16_000], call_start[14 * 16_000 + 6_400 : 18 * 16_000 + 6_400]
    stereo = np.stack([soxr.resample(channel, 16_000, 8_000) for channel in (left, right)], axis=1).reshape(-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import audioop
    pcm = audioop.lin2ulaw((np.clip(stereo, -1, 1) * 32767).astype("<i2").tobytes(), 2)

    async def run() -> tuple[list, RealtimeSessionEnded | None]:
        client = live_client(service)
        async with client.realtime.connect(
            encoding="pcm_mulaw", sample_rate=8000, channels=2, multichannel=True
        ) as session:
            frame = 1600  # 100 ms of two 8 kHz 1-byte channels
            events = []

            async def frames() -> AsyncIterator[bytes]:
                for offset in range(0, len(pcm), frame):
                    yield pcm[offset : offset + frame]
                    await asyncio.sleep(FRAME_S / 4)

            async for event in session.stream(frames()):
                events.append(event)
            return events, session.ended

    events, ended = asyncio.run(run())
    assert ended is not None
    assert {e.channel for e in events if isinstance(e, RealtimeTranscript)} == {0, 1}
    assert "hello" in ended.text[0].lower() and "chicago" in ended.text[1].lower()
    assert ended.channels_transcribed == 2 and ended.audio_duration_ms == 4_000 and ended.billed_ms == 8_000


@pytest.mark.skipif(espeak_ng() is None, reason="needs espeak-ng (the README's Debian packages)")
def test_a_phrase_said_twice_is_transcribed_twice(service: Service, tmp_path: Path) -> None:
    """Repetition is ordinary speech: the same phrase again after a short pause is new words, not a re-read."""
    phrase = spoken("Thank you very much.", "en", tmp_path)
    pause = np.zeros(int(0.7 * 16_000), np.float32)
    audio = np.concatenate([phrase, pause, phrase, pause, spoken("See you tomorrow.", "en", tmp_path)])
    pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()

    async def run() -> str:
        async with live_client(service).realtime.connect() as session:
            async for _ in session.stream(paced(pcm)):
                pass
            assert session.ended is not None
            return str(session.ended.text)

    text = asyncio.run(run()).lower()
    assert text.count("thank you") == 2 and "tomorrow" in text, text


def test_every_turn_is_read_again_and_a_session_behind_says_it_kept_its_streamed_words(
    service: Service, call_start: np.ndarray, call_pcm: bytes
) -> None:
    """Issue 61: a session that keeps up has every turn read again (the call's greeting, 4 s: short turns, which
    used to keep their streamed words under 4 s); audio sent far faster than it is read puts the session behind,
    and its turns then keep their streamed words: counted (`stt_live_second_readings{outcome}`) and said in the
    log for the session, never silently."""
    metrics = service.process.metrics_url()
    greeting = np.concatenate([call_start[6 * 16_000 : 10 * 16_000], np.zeros(16_000, np.float32)]) * 32767

    async def run(pcm: bytes, speed: float) -> list[RealtimeTurnEnd]:
        async with live_client(service, "test-key-1").realtime.connect(turn_detection="smart") as session:
            return [e async for e in session.stream(paced(pcm, speed)) if isinstance(e, RealtimeTurnEnd)]

    def outcome(samples: dict, name: str) -> float:
        return value(samples, "ray_stt_live_second_readings_total", outcome=name)

    before = settled(metrics, {"outcome"}, 2.0)
    turns = asyncio.run(run(greeting.astype("<i2").tobytes(), speed=2.0))
    kept_up = settled(metrics, {"outcome"}, 2.0)
    said = [turn for turn in turns if turn.text]
    assert len(said) >= 2 and "hello" in said[0].text.lower()
    assert outcome(kept_up, "read") - outcome(before, "read") == len(said)  # each turn with words, once
    assert outcome(kept_up, "behind") == outcome(before, "behind")

    # 48 s sent at once: reading it takes longer than 2 s, so the audio read last has waited more than 2 s
    turns = asyncio.run(run(call_pcm[: 24 * 32_000] * 2, speed=100.0))
    behind = settled(metrics, {"outcome"}, 2.0)
    assert outcome(behind, "behind") > outcome(kept_up, "behind")
    assert any(turn.text for turn in turns)  # the streamed words are the final transcript: nothing is lost
    assert "kept their streamed words as the final transcript" in service.process.log_path.read_text(errors="replace")
