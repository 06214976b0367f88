"""Second readings of a live session's utterances (issue 61), without models or Ray: the decision (a table of
cases), how ended utterances gather into groups, and what a group's reading makes of its streamed words."""

import asyncio
import functools

import numpy as np
import pytest

from deployments.live._final_pass import (
    LOOKAHEAD_S,
    SHORT_GROUP_S,
    SHORT_GROUP_WINDOW_S,
    FinalPass,
    Group,
    SpokenWord,
)
from deployments.live._local_agreement import TimedWord
from deployments.live._second_readings import (
    MOST_BEHIND_S,
    MOST_WAITING,
    Outcome,
    ReplicaLoad,
    SecondReadings,
    decide,
    tail_left_to_reading,
)
from deployments.types import ChunkOptions, ChunkTranscript, Word

S = 16_000


@pytest.mark.parametrize(
    ("window", "cleared", "behind_s", "waiting", "outcome"),
    [
        ("full", False, 0.0, 0, Outcome.READ),
        ("audio", False, 0.0, 0, Outcome.READ),
        ("full", False, MOST_BEHIND_S, MOST_WAITING - 1, Outcome.READ),  # at both bounds: still keeping up
        ("none", False, 0.0, 0, Outcome.DISABLED),
        ("full", True, 0.0, 0, Outcome.CLEARED),
        ("full", False, MOST_BEHIND_S + 0.1, 0, Outcome.BEHIND),
        ("full", False, 0.0, MOST_WAITING, Outcome.QUEUED),
        ("none", True, 9.0, 9, Outcome.DISABLED),  # the configuration first, then the client, then the load
        ("full", True, 9.0, 9, Outcome.CLEARED),
        ("full", False, 9.0, 9, Outcome.BEHIND),
    ],
)
def test_a_group_is_read_again_unless_turned_off_cleared_or_the_replica_cannot_keep_up(
    window: str, cleared: bool, behind_s: float, waiting: int, outcome: Outcome
) -> None:
    assert decide(window, cleared, ReplicaLoad(behind_s, waiting)) is outcome  # type: ignore[arg-type]
    assert outcome.skipped == (outcome in (Outcome.BEHIND, Outcome.QUEUED))


@pytest.mark.parametrize(
    ("behind_s", "waiting", "left"), [(0.0, 0, True), (0.0, 1, False), (MOST_BEHIND_S + 1, 0, False)]
)
def test_at_the_end_of_input_the_tail_is_left_to_the_reading_only_while_none_waits(
    behind_s: float, waiting: int, left: bool
) -> None:
    assert tail_left_to_reading("full", False, ReplicaLoad(behind_s, waiting)) is left


def reader(reading: list[tuple[str, float, float]], calls: list[ChunkOptions] | None = None):
    """A fake Whisper writing `reading` (times from the audio's start) for every second reading."""

    async def transcribe(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        if calls is not None:
            calls.append(options)
        words = [Word(word=f" {text}", start=start, end=end) for text, start, end in reading]
        return ChunkTranscript(language="en", segments=[], words=words)

    return transcribe


def utterance(final: FinalPass, words: str, start_s: float, seconds: float = 5.0) -> None:
    """`seconds` of audio whose streamed words (`words`, 0.5 s apart from `start_s`) end an utterance."""
    final.add(np.zeros(int(seconds * S), np.float32))
    timed = [TimedWord(f" {w}", start_s + n * 0.5, start_s + n * 0.5 + 0.4) for n, w in enumerate(words.split())]
    final.add_streamed(timed, [None] * len(timed))
    final.end_utterance(final.end, final.end, "en")


def texts(spoken: list[SpokenWord]) -> list[str]:
    return [s.word.text.strip() for s in spoken]


def test_the_utterances_of_a_group_are_read_again_together_in_one_reading() -> None:
    """Two utterances of one turn are one reading, as a file's chunk is read (issue 61); a short group alone (a
    session's first words) is read in a 15 s window."""
    calls: list[ChunkOptions] = []
    final = FinalPass(reader([("one", 0.5, 0.9), ("two", 4.5, 4.9)], calls), "full", 0.3, 5.0)
    utterance(final, "one", 0.5, 4.0)
    utterance(final, "too", 4.5, 4.0)
    assert final.open_s == 8.0 and final.gap_s == 0.0
    group = final.close()
    assert group is not None and group.outcome is Outcome.READ and group.audio is not None
    assert texts(asyncio.run(final.settle(group))) == ["one", "two"] and len(calls) == 1
    assert calls[0].beam_size is None and calls[0].encoder_window == "full"  # as a file's chunk is read
    assert final.close() is None  # nothing left open
    first = FinalPass(reader([("one", 0.5, 0.9)], calls), "full", 0.3, 5.0)  # a session's first words
    utterance(first, "one", 0.5, 2.0)
    short = first.close()
    assert short is not None and short.audio is not None and len(short.audio) < SHORT_GROUP_S * S
    first.flush()  # the input ended: no audio after it
    assert texts(asyncio.run(first.settle(short))) == ["one"]
    assert calls[1].encoder_window == "audio" and calls[1].shortest_window_s == SHORT_GROUP_WINDOW_S


def test_a_short_group_is_read_with_the_audio_after_it_and_keeps_only_its_own_words() -> None:
    """A session's first words read alone lack the sentence they begin (tiny.en: "And so am I fellow Americans"):
    the reading waits for LOOKAHEAD_S of the audio after them, and the next group's words it reads there are not
    this group's."""
    read: list[int] = []

    async def transcribe(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        read.append(len(samples))
        words = [Word(word=" one", start=0.5, end=0.9), Word(word=" two", start=2.3, end=2.6)]
        return ChunkTranscript(language="en", segments=[], words=words)

    async def session() -> list[str]:
        final = FinalPass(transcribe, "full", 0.3, 5.0)
        utterance(final, "one", 0.5, 2.0)  # its voice ends with the audio, at 2.0 s
        group = final.close()
        assert group is not None and group.lookahead is not None
        settling = asyncio.create_task(final.settle(group))
        await asyncio.sleep(0.05)
        assert not read  # waiting for the audio after the group
        final.add(np.zeros(int(LOOKAHEAD_S * S), np.float32))
        return texts(await settling)

    assert asyncio.run(session()) == ["one"] and read == [int((2.0 + LOOKAHEAD_S) * S)]
    final = FinalPass(transcribe, "full", 0.3, 5.0)  # a client that stops sending: what there is, at the latest
    utterance(final, "one", 0.5, 2.0)  # after LOOKAHEAD_WAIT_S
    group = final.close()
    assert group is not None and texts(asyncio.run(final.settle(group))) == ["one"] and read[-1] == int(2.0 * S)


def _final_pass(
    behind_s: float, reading: list[tuple[str, float, float]], voiced_end_s: float = 4.0
) -> tuple[list[str], int]:
    """A group of 5 s streamed as "a b c", read again by a fake Whisper as `reading`."""
    calls: list[ChunkOptions] = []
    final = FinalPass(reader(reading, calls), "full", 0.3, 5.0, SecondReadings(lambda: ReplicaLoad(behind_s, 0)))
    final.add(np.zeros(5 * S, np.float32))
    final.add_streamed([TimedWord(f" {t}", 1.0 + n, 1.5 + n) for n, t in enumerate("abc")], [None] * 3)
    final.end_utterance(5 * S, int(voiced_end_s * S), "en")
    group = final.close()
    final.flush()
    spoken = asyncio.run(final.settle(group)) if group is not None else []
    return texts(spoken), len(calls)


def test_a_group_read_again_replaces_its_streamed_words_unless_the_replica_is_behind() -> None:
    reading = [("a", 1.0, 1.5), ("b", 2.0, 2.5), ("see", 3.0, 3.5), ("Thank", 4.3, 4.5), ("you.", 4.5, 4.7)]
    assert _final_pass(0.0, reading) == (["a", "b", "see"], 1)  # nothing after the voice's end (+0.2 s)
    assert _final_pass(MOST_BEHIND_S + 1, reading) == (["a", "b", "c"], 0)  # behind: not read again
    assert _final_pass(0.0, reading[:1]) == (["a", "b", "c"], 1)  # the reading lost most words
    assert _final_pass(0.0, reading, voiced_end_s=0.2) == ([], 0)  # every streamed word after the voice's end


def test_every_outcome_is_recorded_and_counted_per_session() -> None:
    recorded: list[Outcome] = []
    waiting = [0]
    readings = SecondReadings(lambda: ReplicaLoad(0.0, waiting[0]), recorded.append)
    final = FinalPass(reader([("a", 1.0, 1.4)]), "full", 0.3, 5.0, readings)
    utterance(final, "a", 1.0)
    assert (group := final.close()) is not None and group.outcome is Outcome.READ
    waiting[0] = MOST_WAITING
    utterance(final, "b", 6.0)
    assert (queued := final.close()) is not None and queued.outcome is Outcome.QUEUED and queued.audio is None
    assert recorded == [Outcome.READ, Outcome.QUEUED] and final.outcomes == {Outcome.READ: 1, Outcome.QUEUED: 1}
    assert final.waiting == 1  # the first, not read yet


def test_the_sessions_of_a_replica_count_their_waiting_groups_together() -> None:
    """Sessions on one replica share its Transcriber: MOST_WAITING groups of any of them waiting and the next to
    close, in whichever session, keeps its streamed words."""
    finals: list[FinalPass] = []
    readings = SecondReadings(lambda: ReplicaLoad(0.0, sum(final.waiting for final in finals)))
    finals += [FinalPass(reader([("a", 1.0, 1.4)]), "full", 0.3, 5.0, readings) for _ in range(MOST_WAITING + 1)]
    groups: list[Group | None] = []
    for final in finals:
        utterance(final, "a", 1.0)
        groups.append(final.close())
    assert [g is not None and g.audio is not None for g in groups] == [True] * MOST_WAITING + [False]


def test_at_the_end_of_input_the_last_group_is_read_with_its_tail_only_when_none_waits() -> None:
    waiting = [0]
    final = FinalPass(reader([]), "full", 0.3, 5.0, SecondReadings(lambda: ReplicaLoad(0.0, waiting[0])))
    final.add(np.zeros(5 * S, np.float32))
    final.add_streamed([TimedWord(" a", 1.0, 1.5)], [None])
    assert final.will_read(final.end, final.end)  # nothing waits
    waiting[0] = 1
    assert not final.will_read(final.end, final.end)  # another session's group waits
    final.add_streamed([], [])
    assert not FinalPass(reader([]), "full", 0.3, 5.0).will_read(S, S)  # no words: nothing to read


def test_a_long_silence_or_a_long_group_is_measured_for_the_channel_to_close_it() -> None:
    final = FinalPass(reader([]), "full", 0.3, 5.0)
    utterance(final, "a b", 1.0, 3.0)
    final.add(np.zeros(2 * S, np.float32))  # silence after it
    assert final.gap_s == 2.0 and final.open_s == 3.0
    final.add(np.zeros(30 * S, np.float32))
    assert final.too_long


def test_streamed_words_after_the_voices_end_never_reach_the_final_transcript() -> None:
    """Whisper writes "Thank you." into the silence after speech; when the replica is behind (no second reading)
    the streamed words are final, and those after the voice's end are dropped; a second reading's span ends with
    the last voiced word's, not with theirs."""
    spoken = [("a", 1.0, 1.5), ("b", 2.0, 2.5), ("c", 3.0, 3.5), ("Thank", 3.9, 4.2), ("you.", 4.2, 4.4)]
    for behind_s in (MOST_BEHIND_S + 1, 0.0):
        load = functools.partial(ReplicaLoad, behind_s, 0)
        final = FinalPass(reader(spoken), "full", 0.3, 5.0, SecondReadings(load))
        final.add(np.zeros(6 * S, np.float32))
        streamed = [TimedWord(f" {t}", 0.5 + n, 1.0 + n) for n, t in enumerate("abc")]
        streamed += [TimedWord(" Thank", 4.3, 4.6), TimedWord(" you.", 4.6, 4.9)]
        final.add_streamed(streamed, [None] * len(streamed))
        final.end_utterance(6 * S, int(3.5 * S), "en")
        group = final.close()
        assert group is not None and texts(asyncio.run(final.settle(group))) == ["a", "b", "c"], behind_s


def _second_group(first: str, second: str, reading: list[tuple[str, float, float]]) -> list[str]:
    """Two groups of 5 s each, streamed as `first` (in 0-5 s) and `second` (in 5-10 s); the first is read again
    as streamed, the second, with the first as its context, by a fake Whisper as `reading`."""
    streamed = [
        [TimedWord(f" {w}", offset + n * 0.5, offset + n * 0.5 + 0.4) for n, w in enumerate(text.split())]
        for offset, text in ((1.0, first), (6.0, second))
    ]
    readings = [[(w.text.strip(), w.start, w.end) for w in streamed[0]], reading]

    async def transcribe(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        words = [Word(word=f" {text}", start=start, end=end) for text, start, end in readings.pop(0)]
        return ChunkTranscript(language="en", segments=[], words=words)

    final = FinalPass(transcribe, "full", 0.3, 5.0)
    final.add(np.zeros(10 * S, np.float32))
    result: list[str] = []
    for timed, until in zip(streamed, (5 * S, 10 * S), strict=True):
        final.add_streamed(timed, [None] * len(timed))
        final.end_utterance(until, until, "en")
        group = final.close()
        assert group is not None
        result = texts(asyncio.run(final.settle(group)))
    return result


def test_words_a_reading_moves_across_a_short_pause_stay_with_their_group() -> None:
    """Issue 50: short pauses cut speech into short groups, and the reading of one (after its context) moves
    words across the pause both ways; their text keeps them where they were said."""
    said = [("we", 1.0, 1.4), ("have", 1.5, 1.9), ("a", 4.8, 5.1), ("group", 5.1, 5.6), ("here", 6.0, 6.4)]
    assert _second_group("we have", "a group here", said) == ["a", "group", "here"]  # "a" read before it
    moved = [("we", 1.0, 1.4), ("have", 5.0, 5.3), ("a", 6.0, 6.2), ("group", 6.3, 6.6)]
    assert _second_group("we have", "a group", moved) == ["a", "group"]  # "have" read after it
    again = [("thank", 1.0, 1.4), ("you", 4.7, 5.0), ("thank", 5.0, 5.4), ("you", 6.0, 6.4)]
    assert _second_group("thank you", "thank you", again) == ["thank", "you"]  # said twice: kept twice
