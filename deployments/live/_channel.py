"""One channel of a live session: PCM in, final words out as `transcript` events, on the audio clock.

Audio goes into a buffer that starts at the last pause or cut, less `context_s` of what came before
(`_buffer.py`). Silero VAD marks speech; while someone speaks, Whisper reads the whole buffer again every
`delay_ms` of new audio (at most every `live.min_reading_interval_ms`; an utterance's first reading that long
after its speech starts), or less often while readings come back slowly (`_pace.py`), and LocalAgreement-2
makes final the words two readings agree on, or that ended `delay_ms` before the end of the audio read. When
speech ends (~280 ms of silence) everything heard before the pause is final at once, and the buffer restarts
there (less the context). A buffer longer than `max_buffer_s` is cut at its last final sentence end (or last
final word).

Those streamed words are sent at once and never revised. The final transcript (a turn's text and words, the
session's text) is a second reading of the utterances of each group (a turn's, `_final_pass.py`) once it ends,
which runs beside the streaming of the next ones.

Speech and pauses also drive the channel's turns (`_turns.py`); with `diarize`, each final word's voice is
labelled by `WordSpeakers` (`_speakers.py`).
"""

import asyncio
import math
import time
from dataclasses import dataclass

import numpy as np

from deployments.config import LiveConfig
from deployments.live._buffer import AudioBuffer, RecentAudio
from deployments.live._final_pass import GROUP_GAP_S, FinalPass, Group, SpokenWord, with_speakers, words_after
from deployments.live._local_agreement import LocalAgreement, TimedWord
from deployments.live._models import Emit, FinalWords, LiveModels
from deployments.live._pace import ReadingPace
from deployments.live._second_readings import SecondReadings
from deployments.live._speakers import SPEAKER_WINDOW_S, WordSpeakers
from deployments.live._speech_activity import SpeechDetector
from deployments.live._turns import TurnTracker
from deployments.live.events import FRAME_MS, LiveWord, SessionSettings, TranscriptEvent
from deployments.types import SAMPLE_RATE, ChunkOptions
from deployments.vocabulary.applied import AppliedVocabulary

LANGUAGE_AFTER_S = 3.0
"""The language detected on a reading of at least this much audio is kept for the rest of the session."""
LANGUAGE_SURE = 0.6
"""Until then, a reading whose detection is less sure than this (as a file's chunk keeps its language only from 0.6)
is read again in Whisper's 30 s window, where the language is detected as Whisper was trained to, and a detection
that sure there is kept at once. In a window as short as a first second of speech, base took 8 of 27 short English
clips for another language, at 0.16-0.57 ("Hello?" streamed as "안녕하세요?"); in 30 s, 2, at 0.17 and 0.22."""
LARGEST_STEP_S = 4.0
"""Audio that arrived at once (a client ahead of real time) is read in steps of at most this much, so the
buffer never outgrows what Whisper sees at once."""


@dataclass(frozen=True)
class _Unread:
    """A buffer's audio and the agreement on its words, as they were when its tail was left to a reading."""

    agreement: LocalAgreement
    samples: np.ndarray
    start: int


class ChannelTranscriber:
    def __init__(
        self,
        settings: SessionSettings,
        config: LiveConfig,
        models: LiveModels,
        emit: Emit,
        channel: int | None,
        readings: SecondReadings | None = None,
    ) -> None:
        self.settings = settings
        self.models = models
        self.emit = emit
        self.channel = channel
        self.detector = SpeechDetector(settings.vad_threshold, settings.silence_ms)
        self.agreement = LocalAgreement()
        self.encoder_window = config.encoder_window
        self.buffer = AudioBuffer(config.max_buffer_s, settings.preroll_ms / 1000, config.context_s)
        self.recent = RecentAudio(config.max_buffer_s + LARGEST_STEP_S + SPEAKER_WINDOW_S)
        self.final = FinalPass(
            models.reread or models.transcribe,
            config.final_pass if settings.read_again else "none",
            settings.preroll_ms / 1000,
            config.final_context_s,
            readings,
            config.final_group_s,
        )
        self.pace = ReadingPace(settings.delay_ms, config.max_reading_interval_ms, config.min_reading_interval_ms)
        self.turns = TurnTracker(settings.turn_detection, models.turn_probability, self.recent, emit, channel)
        self.turns.before_end = self._close_group  # a turn's end is its group's: read it again now
        self.speakers = (
            WordSpeakers(
                config.speaker_threshold, models.embed_voices, self.recent, settings.voices, config.voice_threshold
            )
            if settings.diarize
            else None
        )
        self.language = settings.language  # else detected on the first long enough reading, then kept
        self.vocabulary = AppliedVocabulary.of(settings.vocabulary, models.vocabulary, None)  # prompt, correction
        self.last_reading = 0  # samples received when Whisper last read the buffer
        self.last_word_end_ms = 0  # of the streamed words
        self.last_final_end_ms = 0  # of the utterances' final words
        self.texts: list[str] = []  # the groups' final transcripts
        self.settling: asyncio.Task[FinalWords] | None = None  # the last group's final transcript

    @property
    def received(self) -> int:
        """Samples taken in so far (the session's clock)."""
        return self.buffer.end

    @property
    def text(self) -> str:
        return "".join(self.texts).strip()

    async def feed(self, samples: np.ndarray) -> None:
        step = int(LARGEST_STEP_S * SAMPLE_RATE)
        for offset in range(0, len(samples), step):
            await self._feed_step(samples[offset : offset + step])

    async def _feed_step(self, samples: np.ndarray) -> None:
        self.buffer.add(samples)
        self.recent.add(samples)
        self.final.add(samples)
        for boundary in self.detector.feed(samples):
            if boundary.kind == "start":
                self.turns.speech_started(boundary.sample)
                self.last_reading = max(self.last_reading, boundary.sample)  # silence is no audio to read
            else:
                await self._speech_ended(boundary.sample)
        self.turns.heard_until(self.buffer.end)
        if self.detector.speaking or self.agreement.previous:
            if self.buffer.end - self.last_reading >= self.pace.interval_samples:
                await self._read()
        else:
            self.buffer.cut_before_speech(self.buffer.end)
            self.final.idle()
            if self.final.gap_s >= GROUP_GAP_S:
                self._close_group()
        if self.final.too_long:
            self._end_utterance(self.final.last_streamed_end(), self.detector.last_voiced_end)
            self._close_group()

    async def finish(self) -> None:
        """End of input: everything heard is final, and an open turn ends without a verdict. When the last group
        is to be read again, that reading also writes its words not streamed yet (`_end_with_tail`): one reading
        after the last frame rather than a streaming reading and then the second."""
        unread = self.detector.speaking or bool(self.agreement.previous)
        end, voiced_end = self.buffer.end, self.detector.last_voiced_end
        if unread and self.final.will_read(end, voiced_end):
            self._end_with_tail(end, voiced_end)
        else:
            if unread:
                await self._publish(await self._commit(math.inf))
            self._end_utterance(end, voiced_end)
            self._close_group()
        self.final.flush()  # no audio after the last groups: they read what there is
        self.turns.input_ended(self.detector.speaking, self.detector.last_voiced_end)
        if self.settling is not None:
            await self.settling  # the session's text is every utterance's final transcript

    def close(self) -> None:
        """The session is gone: second readings still running are not wanted."""
        if self.settling is not None:
            self.settling.cancel()

    async def commit(self) -> None:
        """The client committed what it sent (OpenAI's `input_audio_buffer.commit`): everything heard is final,
        the buffer restarts at its end (less the context), and the open turn ends there. The next turn opens
        when voice is heard after the commit (within ~100 ms when the speaker goes on)."""
        unread = self.detector.speaking or bool(self.agreement.previous)
        end, voiced_end = self.buffer.end, self.detector.last_voiced_end
        if unread and self.final.will_read(end, voiced_end):  # one reading after the commit, as at the end
            self._end_with_tail(end, voiced_end)
            self.agreement = LocalAgreement()  # the tail's words are not final here yet: the next turn's
            self.buffer.cut(end)  # readings start after them, without them as context (else read twice)
        else:
            if unread:
                await self._publish(await self._commit(math.inf))
            self._end_utterance(end, voiced_end)
            self._close_group()
            self.agreement.previous = []
            self.buffer.cut_before_speech(end)  # what was committed stays as context, as at a pause
        self.final.flush()  # a client that commits may send nothing more until it has the transcript
        self.detector.restart()
        self.turns.committed(self.buffer.end)

    def clear(self) -> None:
        """The client dropped what it sent since its last commit (OpenAI's `input_audio_buffer.clear`): the
        audio and the words not yet final are forgotten; words already final stay."""
        self._forget_unfinal()
        self.final.clear()

    def _forget_unfinal(self) -> None:
        self.buffer.cut(self.buffer.end)
        self.agreement.previous = []

    async def _speech_ended(self, sample: int) -> None:
        self.turns.speech_ended(sample)
        await self._publish(await self._commit(sample / SAMPLE_RATE))
        self._end_utterance(sample, sample)
        self.buffer.cut_before_speech(sample)
        await self.turns.judge(sample)

    async def _read(self) -> None:
        self.last_reading = self.buffer.end
        settled_before = (self.buffer.end - self.settings.delay_ms * SAMPLE_RATE // 1000) / SAMPLE_RATE
        await self._publish(await self._agree(settled_before))
        if self.buffer.too_long:
            await self._trim()

    async def _trim(self) -> None:
        """Cut a long buffer; with nothing final to cut at (Whisper keeps changing its mind), all but the last
        5 s becomes final first."""
        cut = self.buffer.final_cut(self.agreement.final_until)
        if cut is None:
            until = (self.buffer.end - 5 * SAMPLE_RATE) / SAMPLE_RATE
            await self._publish(await self._commit(until))
            cut = max(self.agreement.final_until, until)
        self.buffer.cut(int(cut * SAMPLE_RATE))

    async def _agree(self, settled_before: float) -> list[TimedWord]:
        """The words a reading of the buffer makes final (`LocalAgreement.update`)."""
        read_from = self.buffer.start / SAMPLE_RATE
        return self.agreement.update(await self._hypothesis(), settled_before, read_from)

    async def _commit(self, until: float, unread: _Unread | None = None) -> list[TimedWord]:
        """The words of a reading of the buffer (or of `unread`, the buffer as it was) that start before
        `until`, all final (`commit_through`)."""
        unread = unread or _Unread(self.agreement, self.buffer.samples, self.buffer.start)
        hypothesis = await self._hypothesis(unread.samples, unread.start)
        return unread.agreement.commit_through(hypothesis, until, unread.start / SAMPLE_RATE)

    async def _hypothesis(self, samples: np.ndarray | None = None, start: int | None = None) -> list[TimedWord]:
        samples = self.buffer.samples if samples is None else samples
        start = self.buffer.start if start is None else start
        if len(samples) < SAMPLE_RATE // 10:
            return []
        options = ChunkOptions(
            language=self.language,
            word_timestamps=True,
            segment_timestamps=False,
            beam_size=1,
            encoder_window=self.encoder_window,
            prompt=self._prompt(),
        )
        asked = time.perf_counter()
        transcript = await self.models.transcribe(samples, options)
        unsure = transcript.language_probability is not None and transcript.language_probability < LANGUAGE_SURE
        if self.language is None and unsure and options.encoder_window != "full":
            transcript = await self.models.transcribe(samples, options.model_copy(update={"encoder_window": "full"}))
            if (transcript.language_probability or 0.0) >= LANGUAGE_SURE:
                self.language = transcript.language
        self.pace.took(time.perf_counter() - asked)
        if self.language is None and len(samples) >= LANGUAGE_AFTER_S * SAMPLE_RATE:
            self.language = transcript.language
        offset = start / SAMPLE_RATE
        return [TimedWord(w.word, w.start + offset, w.end + offset) for w in transcript.words if w.word.strip()]

    def _prompt(self) -> str | None:
        """A reading's prompt: the session's vocabulary (the terms like its recent words, when not all fit)."""
        return self.vocabulary.prompt_for(self.language, self.text[-500:]) if self.vocabulary else None

    def _end_utterance(self, until: int, voiced_end: int) -> None:
        """The words before `until` (a sample) end an utterance, which joins the open group; a group that holds
        `live.final_group_s` of audio is read now, else when its turn ends."""
        self.final.end_utterance(until, voiced_end, self.language, self._prompt())
        if self.final.open_s >= self.final.group_s:
            self._close_group()

    def _close_group(self) -> None:
        """Read the open group again, beside the streaming: its final transcript, in the order groups close."""
        group = self.final.close()
        if group is not None:
            self.settling = asyncio.create_task(self._settle(group, self.settling))
            self.turns.add(self.settling)

    async def _settle(self, group: Group, previous: asyncio.Task[FinalWords] | None) -> FinalWords:
        return self._final_words(self._corrected(await self.final.settle(group, previous)))

    def _final_words(self, spoken: list[SpokenWord]) -> FinalWords:
        """A group's final words, in the order groups close: the session's text and the turn's words."""
        text = "".join(s.word.text for s in spoken)
        self.texts.append(text)
        return text, [self._final_word(s) for s in spoken]

    def _end_with_tail(self, until: int, voiced_end: int) -> None:
        """End the last group (at the end of input, or a commit) with the words not streamed yet unread: its
        second reading writes them, and they go out as `transcript` events (before the turn's end) once it is
        done. The buffer as it is now goes with it, for a streaming reading should that one stop early."""
        self.final.end_utterance(until, voiced_end, self.language, self._prompt(), unread_tail=True)
        group = self.final.close()
        assert group is not None, "will_read: the group has words"
        unread = _Unread(self.agreement, self.buffer.samples, self.buffer.start)
        reading = asyncio.create_task(self._read_tail(group, self.settling, self.turns.current, unread))
        self.emit(asyncio.create_task(_tail_events(reading)))
        self.settling = asyncio.create_task(_tail_final_words(reading))
        self.turns.add(self.settling)

    async def _read_tail(
        self, group: Group, previous: asyncio.Task[FinalWords] | None, turn: int | None, unread: _Unread
    ) -> tuple[list[TranscriptEvent], FinalWords]:
        """The last group's words after its streamed ones, from its second reading (from a streaming reading if
        that stopped early), and its final words."""
        read = await self.final.read_again(group, previous)
        streamed = group.streamed
        if read is None:
            tail = await self._heard(await self._commit(math.inf, unread))
            spoken = streamed + tail
        else:
            tail = await self._heard(words_after(read, streamed[-1].word))
            spoken = self._corrected(with_speakers(read, streamed + tail))
        self.final.settled(spoken)
        return self._transcript_events(tail, turn), self._final_words(spoken)

    async def _publish(self, words: list[TimedWord]) -> None:
        """Final words out, as `transcript` events of one speaker each."""
        spoken = await self._heard(words)
        if not spoken:
            return
        self.turns.words_final(int(spoken[0].word.start * SAMPLE_RATE))
        self.buffer.add_final([s.word for s in spoken])
        self.final.add_streamed([s.word for s in spoken], [s.speaker for s in spoken])
        for event in self._transcript_events(spoken, self.turns.current):
            self.emit(event)

    async def _heard(self, words: list[TimedWord]) -> list[SpokenWord]:
        """Final words, corrected, each with its speaker."""
        words = [spoken.word for spoken in self._corrected([SpokenWord(word, None) for word in words])]
        if not words:
            return []
        speakers = await self.speakers.label(words) if self.speakers is not None else [None] * len(words)
        return [SpokenWord(word, speaker) for word, speaker in zip(words, speakers, strict=True)]

    def _transcript_events(self, spoken: list[SpokenWord], turn: int | None) -> list[TranscriptEvent]:
        """Final words as `transcript` events, one per run of a speaker's words."""
        groups: list[tuple[int | None, list[TimedWord], list[LiveWord]]] = []
        for word, speaker in ((s.word, s.speaker) for s in spoken):
            live = self._live_word(word, speaker)
            if groups and groups[-1][0] == speaker:
                groups[-1][1].append(word)
                groups[-1][2].append(live)
            else:
                groups.append((speaker, [word], [live]))
        return [
            TranscriptEvent(
                text="".join(word.text for word in timed),
                words=live,
                speaker=speaker,
                speaker_name=self._name(speaker),
                channel=self.channel,
                turn=turn,
            )
            for speaker, timed, live in groups
        ]

    def _corrected(self, words: list[SpokenWord]) -> list[SpokenWord]:
        """Final words, streamed or read again, with the session's vocabulary corrected (issue 48): both go through
        one merge, so a term reads the same in the `transcript` events and in the final transcript."""
        if self.vocabulary is None:
            return words
        return self.vocabulary.correct_items(words, [s.word.text for s in words], _merged, self.language)

    def _name(self, speaker: int | None) -> str | None:
        return self.speakers.name_of(speaker) if self.speakers is not None else None

    def _live_word(self, word: TimedWord, speaker: int | None) -> LiveWord:
        live = _on_grid(word, speaker, self.last_word_end_ms, self._name(speaker))
        self.last_word_end_ms = live.end
        return live

    def _final_word(self, spoken: SpokenWord) -> LiveWord:
        live = _on_grid(spoken.word, spoken.speaker, self.last_final_end_ms, self._name(spoken.speaker))
        self.last_final_end_ms = live.end
        return live


async def _tail_events(reading: asyncio.Task[tuple[list[TranscriptEvent], FinalWords]]) -> list[TranscriptEvent]:
    events, _ = await reading
    return events


async def _tail_final_words(reading: asyncio.Task[tuple[list[TranscriptEvent], FinalWords]]) -> FinalWords:
    _, final = await reading
    return final


def _on_grid(word: TimedWord, speaker: int | None, after_ms: int, speaker_name: str | None = None) -> LiveWord:
    """Times on the 80 ms grid, never before the previous word's end (`after_ms`)."""
    start = max(round(word.start * 1000 / FRAME_MS) * FRAME_MS, after_ms)
    end = max(round(word.end * 1000 / FRAME_MS) * FRAME_MS, start + FRAME_MS)
    return LiveWord(text=word.text.strip(), start=start, end=end, speaker=speaker, speaker_name=speaker_name)


def _merged(first: SpokenWord, last: SpokenWord, text: str) -> SpokenWord:
    """A run of final words corrected into one term: one word over the run's time, the first word's speaker."""
    return SpokenWord(TimedWord(text, first.word.start, last.word.end), first.speaker)
