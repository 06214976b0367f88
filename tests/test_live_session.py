"""A live session's logic with the real Silero VAD on real speech, and fakes for Whisper, the speaker
encoder and Smart Turn: which events come out, in which order, with which times."""

import asyncio
import itertools
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np
import pytest
import soundfile as sf

from deployments.config import LiveConfig
from deployments.live._final_pass import Group
from deployments.live._models import LiveModels
from deployments.live._session import LiveSession
from deployments.live.events import (
    LiveEvent,
    SessionEnded,
    SessionFailed,
    SessionSettings,
    SpeechEnded,
    SpeechStarted,
    TranscriptEvent,
    TurnEnded,
)
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript, Word
from devkit.media import pyannote_sample
from tests.fakes import replica_class

SPEECH = [(10.9, 14.45), (21.7, 27.7)]
"""Two stretches of pyannote's call, one per speaker; the test stream puts silence after each."""
SILENCE_AFTER_S = (3.5, 1.0)


def stream_audio(copies: int = 1) -> tuple[np.ndarray, list[tuple[str, float, float]]]:
    """The stream, and the script a fake Whisper reads from it: a word every 0.4 s of speech."""
    call, _ = sf.read(str(pyannote_sample()), dtype="float32")
    parts, script, offset = [], [], 0.0
    stretches = list(zip(SPEECH, SILENCE_AFTER_S, strict=True)) * copies
    for index, ((start, end), gap) in enumerate(stretches):
        parts += [
            call[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)],
            np.zeros(int(gap * SAMPLE_RATE), np.float32),
        ]
        script += [
            (f"w{index}_{n}", offset + t, offset + t + 0.3)
            for n, t in enumerate(np.arange(0.2, end - start - 0.3, 0.4))
        ]
        offset += end - start + gap
    return np.concatenate(parts), script


class FakeModels:
    def __init__(
        self, script: list[tuple[str, float, float]], turn_probability: float, second: str = "same", wait: bool = False
    ) -> None:
        self.script = script
        self.second = second  # what an utterance's second reading writes: the same, in capitals, or nothing
        self.wait = wait  # a second reading returns only once a streaming reading came after it started
        self.probability = turn_probability
        self.session: LiveSession | None = None
        self.readings = 0
        self.reading_ends: list[float] = []  # where each streaming reading's audio ends (seconds)
        self.speech_starts: list[float] = []  # where the first channel's detector heard speech start (seconds)
        self.final_readings = 0
        self.read_from: list[float] = []  # where each second reading's audio starts, in the order they were taken
        self.streaming = asyncio.Event()
        self.streamed_beside: list[bool] = []
        self.heard = np.zeros(0, dtype=np.float32)  # all the audio the first channel's buffer took

    def watch(self, session: LiveSession) -> None:
        """Know where each second reading's audio starts: the session has moved on by the time it runs (the
        channels of a session in these tests hear the same audio)."""
        self.session = session
        for channel in session.channels:

            def closed(close: Any = channel.final.close) -> Group | None:
                group = close()
                if group is not None and group.audio is not None:
                    self.read_from.append(group.start_s)
                return group

            channel.final.close = closed  # type: ignore[method-assign]
        first = session.channels[0]

        def heard(samples: np.ndarray, add: Any = first.buffer.add) -> None:
            self.heard = np.concatenate([self.heard, samples])
            add(samples)

        first.buffer.add = heard  # type: ignore[method-assign]

        def speech_started(sample: int, started: Any = first.turns.speech_started) -> None:
            self.speech_starts.append(sample / SAMPLE_RATE)
            started(sample)

        first.turns.speech_started = speech_started  # type: ignore[method-assign]

    def start_of(self, samples: np.ndarray) -> float:
        """Where a streaming reading's audio starts (seconds): the buffer's, or a buffer's as it was."""
        voiced = int(np.argmax(samples != 0))  # silence is everywhere: find the first sound
        for at in np.flatnonzero(self.heard == samples[voiced]) - voiced:
            if at >= 0 and np.array_equal(self.heard[at : at + len(samples)], samples):
                return float(at) / SAMPLE_RATE
        raise AssertionError("a reading of audio the session never heard")

    async def transcribe(self, samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        assert options.word_timestamps and self.session is not None
        if options.beam_size is None:  # a group's second reading (`_final_pass.py`): the file's beam
            self.final_readings += 1
            start = self.read_from.pop(0)
            if self.wait:
                self.streaming.clear()
                try:
                    await asyncio.wait_for(self.streaming.wait(), 5.0)
                    self.streamed_beside.append(True)
                except TimeoutError:
                    self.streamed_beside.append(False)
        else:
            self.readings += 1
            self.streaming.set()
            assert options.beam_size == 1
            start = self.start_of(samples)
        end = start + len(samples) / SAMPLE_RATE
        if options.beam_size == 1:
            self.reading_ends.append(end)
        words = [
            Word(word=f" {t}", start=s - start, end=e - start) for t, s, e in self.script if s >= start and e <= end
        ]
        if options.beam_size is None and self.second != "same":
            words = [w.model_copy(update={"word": w.word.upper()}) for w in words if self.second == "capitals"]
        return ChunkTranscript(language="en", segments=[], words=words)

    async def embed(self, windows: list[np.ndarray]) -> np.ndarray:
        return np.stack([np.ones(4) for _ in windows])

    async def turn(self, speech: np.ndarray) -> float:
        return self.probability

    def live(self) -> LiveModels:
        return LiveModels(transcribe=self.transcribe, embed_voices=self.embed, turn_probability=self.turn)


async def run_session(
    settings: SessionSettings,
    turn_probability: float = 0.9,
    frame_bytes: int = 6400,
    second: str = "same",
    input_s: float | None = None,
    models_class: type[FakeModels] = FakeModels,
) -> tuple[list[LiveEvent], FakeModels]:
    audio, script = stream_audio()
    audio = audio[: int(input_s * SAMPLE_RATE)] if input_s is not None else audio
    models = models_class(script, turn_probability, second)
    session = LiveSession(settings, LiveConfig(), models.live())
    models.watch(session)
    pcm = (audio * 32767).astype("<i2").tobytes()
    for offset in range(0, len(pcm), frame_bytes):  # 200 ms frames, as fast as the session takes them
        assert session.push(pcm[offset : offset + frame_bytes]) is None
        await asyncio.sleep(0)
    session.end_input()
    events = [event async for event in session.events()]
    await session.close()
    return events, models


def test_every_word_once_in_order_on_the_80_ms_grid() -> None:
    events, models = asyncio.run(run_session(SessionSettings()))
    transcripts = [e for e in events if isinstance(e, TranscriptEvent)]
    words = [w for e in transcripts for w in e.words]
    assert [w.text for w in words] == [text for text, _, _ in models.script]
    assert all(w.start % 80 == 0 and w.end % 80 == 0 and w.end > w.start for w in words)
    assert all(b.start >= a.end for a, b in itertools.pairwise(words))
    assert all(e.speaker is None and e.turn is None and e.channel is None for e in transcripts)
    assert isinstance(events[-1], SessionEnded)
    assert "".join(e.text for e in transcripts).strip() == events[-1].text
    assert not any(isinstance(e, SpeechStarted | TurnEnded) for e in events)  # no turn detection asked
    ended = events[-1]
    assert isinstance(ended, SessionEnded) and ended.billed_ms == ended.audio_duration_ms == 14_050
    assert models.readings > 6  # read while it streams: every live.min_reading_interval_ms (960) of speech


def test_a_language_detected_unsurely_in_a_short_window_is_detected_again_in_whispers_window() -> None:
    """Without a language, a multilingual Whisper detects it on each reading; in a window as short as a first
    second of speech it often guesses wrong, unsurely ("Hello?" streamed as "안녕하세요?"). Such a reading is read
    again in the 30 s window, whose sure detection the session keeps: its later readings are short again."""

    asked: list[tuple[str | None, str]] = []  # each streaming reading's language and window

    class Multilingual(FakeModels):
        async def transcribe(self, samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
            transcript = await super().transcribe(samples, options)
            if options.beam_size is None:  # second readings are not what this is about
                return transcript
            asked.append((options.language, options.encoder_window))
            if options.language is None and options.encoder_window == "audio":  # unsure, and wrong
                words = [w.model_copy(update={"word": " 안녕"}) for w in transcript.words]
                return transcript.model_copy(update={"language": "ko", "language_probability": 0.3, "words": words})
            if options.language is None:
                return transcript.model_copy(update={"language_probability": 0.9})
            return transcript

    events, models = asyncio.run(run_session(SessionSettings(), models_class=Multilingual))
    words = [w.text for e in events if isinstance(e, TranscriptEvent) for w in e.words]
    assert words == [text for text, _, _ in models.script]
    assert asked[:2] == [(None, "audio"), (None, "full")]
    assert set(asked[2:]) == {("en", "audio")}


def test_smart_turns_end_where_the_model_says_so() -> None:
    events, models = asyncio.run(run_session(SessionSettings(turn_detection="smart", diarize=True), 0.9))
    turn_ends = [e for e in events if isinstance(e, TurnEnded)]
    assert [t.turn for t in turn_ends] == [0, 1]
    assert turn_ends[0].confidence == 0.9 and abs(turn_ends[0].end - 3550) < 400
    for turn in turn_ends:
        expected = [t for t, _, _ in models.script if t.startswith(f"w{turn.turn}_")]
        assert [w.text for w in turn.words] == expected and turn.text == " ".join(expected)
    # per turn: speech.started first, turn.end last; its words are final at the pause, after speech.ended
    for number in (0, 1):
        kinds = [type(e).__name__ for e in events if getattr(e, "turn", None) == number]
        assert kinds[0] == "SpeechStarted" and kinds[-1] == "TurnEnded" and "SpeechEnded" in kinds
    assert all(w.speaker == 0 for e in events if isinstance(e, TranscriptEvent) for w in e.words)


@pytest.mark.parametrize("second", ["capitals", "nothing"])
def test_each_turn_read_again_whole_is_its_final_transcript(second: str) -> None:
    """The streamed words go out as they are final; at each turn's end its second reading (the file's beam) is
    the turn's and the session's text, unless it lost most of the words (then the streamed ones). Every turn is
    read again, a short one too (the first, 3.55 s: issue 61)."""
    events, models = asyncio.run(run_session(SessionSettings(turn_detection="vad"), second=second))
    streamed = [w.text for e in events if isinstance(e, TranscriptEvent) for w in e.words]
    assert streamed == [text for text, _, _ in models.script]
    assert models.final_readings == 2  # one per turn, the second with the first as context
    turn_words = [w.text for e in events if isinstance(e, TurnEnded) for w in e.words]
    final = [w.upper() if second == "capitals" else w for w in streamed]
    assert turn_words == final
    ended = events[-1]
    assert isinstance(ended, SessionEnded) and isinstance(ended.text, str) and ended.text.split() == final


@pytest.mark.parametrize("second", ["capitals", "nothing"])
def test_input_ending_in_speech_leaves_the_words_not_streamed_yet_to_the_second_reading(second: str) -> None:
    """Input that ends while someone speaks: the last group is read again once, and that reading writes its
    words not streamed yet too (one reading after the last frame, not a streaming reading and then the second).
    They go out as `transcript` events before the turn's end; a reading that wrote nothing leaves them to a
    streaming reading, so no word is lost."""
    events, models = asyncio.run(run_session(SessionSettings(turn_detection="vad"), second=second, input_s=12.0))
    said = [text for text, _, end in models.script if end <= 12.0]
    streamed = [w.text for e in events if isinstance(e, TranscriptEvent) for w in e.words]
    assert [w.lower() for w in streamed] == said  # every word once, in order
    tail = [w for w in streamed if w.isupper()]
    assert models.final_readings == 2 and bool(tail) == (second == "capitals")  # the first turn's, and the last
    assert tail == [w.upper() for w in said[len(said) - len(tail) :]]  # the last words, from the reading
    last_end = max(i for i, e in enumerate(events) if isinstance(e, TurnEnded))
    assert all(i < last_end for i, e in enumerate(events) if isinstance(e, TranscriptEvent))
    turn_words = [w.text for w in events[last_end].words]  # type: ignore[union-attr]
    assert turn_words == [w.upper() if second == "capitals" else w for w in said if w.startswith("w1_")]
    ended = events[-1]
    assert (
        isinstance(ended, SessionEnded)
        and isinstance(ended.text, str)
        and ended.text.split()[-len(turn_words) :] == turn_words
    )
    assert not any(isinstance(e, SpeechStarted) for e in events[last_end:])  # the tail opens no turn


async def vad_session(models: FakeModels, live: LiveModels, audio: np.ndarray, pause_s: float) -> list[LiveEvent]:
    """A session with `vad` turns fed `audio` in 200 ms frames, `pause_s` apart: all its events."""
    session = LiveSession(SessionSettings(turn_detection="vad"), LiveConfig(), live)
    models.watch(session)
    pcm = (audio * 32767).astype("<i2").tobytes()
    for offset in range(0, len(pcm), 6400):
        session.push(pcm[offset : offset + 6400])
        await asyncio.sleep(pause_s)
    session.end_input()
    events = [event async for event in session.events()]
    await session.close()
    return events


def test_the_next_utterance_streams_while_the_last_one_is_read_again() -> None:
    """A second reading runs beside the streaming (issue 50: it held the session's readings up, and four tiny.en
    sessions fell behind); the turn's end waits for it, and every event stays in order."""
    audio, script = stream_audio(copies=2)
    models = FakeModels(script, 0.9, wait=True)

    events = asyncio.run(vad_session(models, models.live(), audio, pause_s=0.01))
    assert models.streamed_beside[0]  # the second utterance's reading waited for the third one's streaming
    turn_ends = [e for e in events if isinstance(e, TurnEnded)]
    assert [t.turn for t in turn_ends] == [0, 1, 2, 3]
    assert [w.text for t in turn_ends for w in t.words] == [text for text, _, _ in script]
    turns = [e.turn or 0 for e in events if isinstance(e, TranscriptEvent | TurnEnded)]
    assert turns == sorted(turns)  # a turn's words, then its end, then the next turn's
    ended = events[-1]
    assert isinstance(ended, SessionEnded) and ended.text == " ".join(text for text, _, _ in script)


def test_an_utterances_first_reading_waits_for_a_reading_interval_of_its_speech() -> None:
    """Issue 61: after a pause the buffer holds no new speech until someone speaks again; a reading at the first
    sound would read the context and a syllable (a fifth of all readings over the meetings, at a full reading's
    cost, without a word made final), so the reading interval counts from the speech's start."""
    events, models = asyncio.run(run_session(SessionSettings()))
    interval_s = LiveConfig().min_reading_interval_ms / 1000
    assert len(models.speech_starts) == len(SPEECH)
    for start in models.speech_starts:  # each reading of an utterance reads at least an interval of its speech
        early = [end for end in models.reading_ends if start <= end < start + interval_s]
        assert not early, (start, models.reading_ends)
    words = [w.text for e in events if isinstance(e, TranscriptEvent) for w in e.words]
    assert words == [text for text, _, _ in models.script]  # no word lost for it


@pytest.mark.parametrize("frame_bytes", [6400, 10**9], ids=["paced", "all-at-once"])
def test_an_unfinished_turn_ends_after_3_s_of_silence_or_at_the_end_of_input(frame_bytes: int) -> None:
    """Also when the silence and the next speech arrive together (a client ahead of the session)."""
    events, _ = asyncio.run(run_session(SessionSettings(turn_detection="smart"), 0.2, frame_bytes))
    first, second = [e for e in events if isinstance(e, TurnEnded)]
    assert first.confidence == 0.2  # closed by the silence limit, not the model
    assert second.confidence is None  # input ended within 3 s of its speech
    assert [e.turn for e in events if isinstance(e, SpeechEnded)] == [0, 1]


def test_each_channel_is_transcribed_on_its_own() -> None:
    audio, script = stream_audio()
    models = FakeModels(script, 0.9)

    async def run() -> list[LiveEvent]:
        session = LiveSession(SessionSettings(channels=2, multichannel=True), LiveConfig(), models.live())
        models.watch(session)
        stereo = np.stack([audio, audio], axis=1).reshape(-1)
        pcm = (stereo * 32767).astype("<i2").tobytes()
        for offset in range(0, len(pcm), 12800):
            session.push(pcm[offset : offset + 12800])
            await asyncio.sleep(0)
        session.end_input()
        return [event async for event in session.events()]

    events = asyncio.run(run())
    assert {e.channel for e in events if isinstance(e, TranscriptEvent)} == {0, 1}
    ended = events[-1]
    assert isinstance(ended, SessionEnded)
    assert isinstance(ended.text, list) and len(ended.text) == 2 and ended.billed_ms == 2 * ended.audio_duration_ms


@pytest.mark.parametrize("limit_s", [1.0])
def test_audio_far_ahead_of_transcription_ends_the_session(limit_s: float) -> None:
    async def run() -> SessionFailed | None:
        never = asyncio.Event()

        async def stuck(*_: object) -> NoReturn:  # stands in for all three models
            await never.wait()
            raise AssertionError

        models = LiveModels(transcribe=stuck, embed_voices=stuck, turn_probability=stuck)
        session = LiveSession(SessionSettings(), LiveConfig(max_backlog_s=limit_s), models)
        second = np.zeros(SAMPLE_RATE, dtype="<i2").tobytes()
        failure = None
        for _ in range(4):
            failure = failure or session.push(second)
        await session.close()
        return failure

    failure = asyncio.run(run())
    assert failure is not None and failure.code == "audio_backlog"


def _session_whose_readings_never_answer() -> tuple[LiveSession, np.ndarray, asyncio.Event]:
    """A session whose first reading never comes back, the stream's speech as 16-bit PCM, and an event set once a
    model is called (in a running loop)."""
    never, called = asyncio.Event(), asyncio.Event()

    async def stuck(*_: object) -> NoReturn:
        called.set()
        await never.wait()
        raise AssertionError

    speech, _ = stream_audio()
    session = LiveSession(SessionSettings(), LiveConfig(), LiveModels(stuck, stuck, stuck))
    return session, (speech * 32767).astype("<i2"), called


def test_behind_is_how_long_the_oldest_unread_audio_has_waited_not_how_much_there_is() -> None:
    """A client sending 10 s at once is not 10 s behind: its words are late by the time the audio waits."""

    async def run() -> tuple[float, float, float]:
        session, pcm, _ = _session_whose_readings_never_answer()
        idle = session.behind_s
        for second in range(10):
            session.push(pcm[second * SAMPLE_RATE : (second + 1) * SAMPLE_RATE].tobytes())
        at_once = session.behind_s
        await asyncio.sleep(0.3)
        later = session.behind_s
        await session.close()
        return idle, at_once, later

    idle, at_once, later = asyncio.run(run())
    assert idle == 0.0 and at_once < 0.1 and 0.3 <= later < 1.0


def test_behind_counts_from_the_audio_not_taken_in_not_from_audio_being_read() -> None:
    """Audio a channel took in and is reading (a pause's last reading, a turn's verdict) is not waiting: a base
    session on two cores counted its pause's reading and verdict as 2 s behind, and kept a turn's streamed words."""

    async def run() -> tuple[float, bool]:
        session, pcm, reading = _session_whose_readings_never_answer()
        session.push(pcm[: 2 * SAMPLE_RATE].tobytes())  # taken in, and its reading never comes back
        await asyncio.sleep(1.0)
        session.push(pcm[2 * SAMPLE_RATE : 3 * SAMPLE_RATE].tobytes())  # waits behind that reading
        await asyncio.sleep(0.3)
        behind = session.behind_s
        await session.close()
        return behind, reading.is_set()

    behind, reading = asyncio.run(run())
    assert reading and 0.3 <= behind < 1.0  # not the 1.3 s since the audio being read came


def test_a_full_replica_refuses_new_sessions() -> None:
    """4003 session_full: the replica holds `max_sessions` already (the rest of `open` needs Serve)."""
    from deployments.live.deployment import LiveTranscriber

    replica = object.__new__(replica_class(LiveTranscriber))
    replica.config, replica.sessions = LiveConfig(max_sessions=1), {"sess_a_b": None}  # type: ignore[dict-item]  # only their number counts
    refused = asyncio.run(replica.open(SessionSettings()))
    assert isinstance(refused, SessionFailed) and refused.code == "session_full" and "retry later" in refused.message


def test_a_failed_second_reading_ends_the_session_with_an_error() -> None:
    """The turn's end waits for its second reading; when that fails the client gets `error`, not a lost turn."""
    audio, script = stream_audio(copies=2)
    models = FakeModels(script, 0.9)
    streaming = models.transcribe

    async def failing(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        if options.beam_size is None:
            raise RuntimeError("the Transcriber is gone")
        return await streaming(samples, options)

    live = LiveModels(transcribe=failing, embed_voices=models.embed, turn_probability=models.turn)
    events = asyncio.run(vad_session(models, live, audio, pause_s=0))
    assert isinstance(events[-1], SessionFailed) and events[-1].code == "internal"
    assert "the Transcriber is gone" in events[-1].message
    assert not any(isinstance(e, TurnEnded) for e in events)  # the first turn's reading failed: no turn is lost


class HeardVoices(FakeModels):
    """Fakes that keep how much audio each word's voice was embedded from (`voice_windows`)."""

    def __init__(self, script: list[tuple[str, float, float]]) -> None:
        super().__init__(script, 0.9)
        self.voice_windows: list[int] = []

    async def embed(self, windows: list[np.ndarray]) -> np.ndarray:
        self.voice_windows.extend(len(window) for window in windows)
        return await super().embed(windows)


def diarized_words(
    models_of: Callable[[list[tuple[str, float, float]]], HeardVoices], repeats: int, config: LiveConfig, paced: bool
) -> tuple[list, list[int], int]:
    """A stretch of one voice said `repeats` times without a pause through a diarized session: its final words,
    the audio each word's voice was embedded from, and the script's words. `paced`: the session reads each frame
    before the next comes, else every frame is there before it reads one."""
    call, _ = sf.read(str(pyannote_sample()), dtype="float32")
    speech = np.concatenate([call[int(10.9 * SAMPLE_RATE) : int(14.3 * SAMPLE_RATE)]] * repeats)  # 3.4 s each
    script = [(f"w{n}", t, t + 0.3) for n, t in enumerate(np.arange(0.2, len(speech) / SAMPLE_RATE - 0.4, 0.4))]
    models = models_of(script)

    async def run() -> list[LiveEvent]:
        session = LiveSession(SessionSettings(diarize=True), config, models.live())
        models.watch(session)
        pcm = (speech * 32767).astype("<i2").tobytes()
        for offset in range(0, len(pcm), 6400):
            assert session.push(pcm[offset : offset + 6400]) is None
            if paced:
                await asyncio.sleep(0)
        session.end_input()
        events = [event async for event in session.events()]
        await session.close()
        return events

    words = [w for e in asyncio.run(run()) if isinstance(e, TranscriptEvent) for w in e.words]
    return words, models.voice_windows, len(script)


def test_words_made_final_late_still_have_their_voice_heard() -> None:
    """Whisper changing its mind on every reading, read seldom (a busy replica's pace) over long speech without
    a pause: each final word's voice is still heard whole by the speaker encoder (`RecentAudio` keeps 8 s or more;
    words are final `delay_ms` plus a reading interval after they were heard), so a voice is named from all its
    words."""

    class Undecided(HeardVoices):
        async def transcribe(self, samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
            transcript = await super().transcribe(samples, options)
            words = [w.model_copy(update={"word": f"{w.word}_{self.readings}"}) for w in transcript.words]
            return transcript.model_copy(update={"words": words})  # no two readings agree

    words, heard, _ = diarized_words(Undecided, 4, LiveConfig(min_reading_interval_ms=1200), paced=True)
    assert len(words) > 25
    assert len(heard) == len(words) and min(heard) >= SAMPLE_RATE  # each word's voice, a second or more of it


def test_words_final_long_after_they_were_heard_have_their_voice_heard() -> None:
    """Audio that arrives at once (a client ahead of real time, a session catching up) is read in 4 s steps, and
    the end of input leaves the words not streamed yet to the last group's second reading: a word may be final
    13 s after it was heard. Its voice is still heard whole (`RecentAudio` keeps what the buffer may hold; with
    8 s, a fifth of such words took the label of the word before)."""

    class LateWords(HeardVoices):
        async def transcribe(self, samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
            transcript = await super().transcribe(samples, options)
            if options.beam_size is None:  # the second reading writes every word
                return transcript
            start = self.start_of(samples)  # a streaming reading writes only the first word
            return transcript.model_copy(update={"words": [w for w in transcript.words if w.start + start < 0.6]})

    words, heard, said = diarized_words(LateWords, 3, LiveConfig(), paced=False)
    assert len(words) == said and words[-1].end - words[1].start > 8_000  # all but w0 from the last reading
    assert len(heard) == len(words) and min(heard) >= SAMPLE_RATE  # each word's voice, a second or more of it


@pytest.mark.parametrize("second", ["capitals", "nothing"])
def test_a_commit_in_speech_leaves_the_words_not_streamed_yet_to_the_second_reading(second: str) -> None:
    """A client's commit while someone speaks (OpenAI's `input_audio_buffer.commit`) ends the turn as the end of
    input does: one reading after the commit writes the words not streamed yet (a reading that wrote nothing
    leaves them to a streaming reading of the audio as it was). The speech after the commit streams on: every
    word once, in order, none read twice."""

    async def run() -> tuple[list[LiveEvent], FakeModels]:
        audio, script = stream_audio()
        models = FakeModels(script, 0.9, second)
        session = LiveSession(SessionSettings(turn_detection="vad"), LiveConfig(), models.live())
        models.watch(session)
        pcm = (audio * 32767).astype("<i2").tobytes()
        commit_at = int(12.0 * SAMPLE_RATE) * 2  # in the second speaker's turn
        for offset in range(0, len(pcm), 6400):
            if offset == commit_at:
                session.mark("commit")
            assert session.push(pcm[offset : offset + 6400]) is None
            await asyncio.sleep(0)
        session.end_input()
        events = [event async for event in session.events()]
        await session.close()
        return events, models

    events, models = asyncio.run(run())
    streamed = [w.text for e in events if isinstance(e, TranscriptEvent) for w in e.words]
    said = [text for text, _, _ in models.script]
    assert [w.lower() for w in streamed] == said  # every word once, in order
    turns = [e for e in events if isinstance(e, TurnEnded)]
    committed = turns[1]  # the second turn, ended by the commit
    tail = [w for w in streamed if w.isupper()]
    assert bool(tail) == (second == "capitals")
    if second == "capitals":  # the reading's words are the last before the commit, and the turn's end after them
        before_commit = [text for text, _, end in models.script if end <= 12.0]
        assert [w.lower() for w in tail] == before_commit[len(before_commit) - len(tail) :]
        assert all(w.text.isupper() for w in committed.words) and committed.end <= 12_100
    assert committed.end <= 12_100 and turns[-1].start >= committed.end
