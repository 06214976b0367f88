"""LocalAgreement over simulated sessions: every word spoken is emitted exactly once, also when a phrase is
said again right after itself, 0.1 to 2 s later (a repetition is new speech however similar its text), and
when readings move words' times (a reading of a different length does): each reading by up to 0.75 s either
way, so that two readings of a word differ by up to 1.5 s."""

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from deployments.live._local_agreement import LocalAgreement, TimedWord

WORD_S = 0.3
GAP_S = 0.05
READ_EVERY_S = 0.5
DELAY_S = 1.0
PAUSE_S = 0.6
"""A gap this long is a pause: what is before it becomes final and the buffer restarts there."""
INTO_PAUSE_S = 0.25
"""How far a reading may move a word into a pause: less than half the shortest pause, where the speech detector
ends the speech before it."""
MAX_BUFFER_S = 8.0
VOCABULARY = ["can", "do", "for", "you", "no", "thank", "ask", "not", "what", "your", "country"]


def spoken(phrase: list[str], gap_s: float, before: list[str], after: list[str]) -> list[TimedWord]:
    """`before`, the phrase, a gap, the phrase again, `after`: words of 0.3 s, 50 ms apart."""
    words, at = [], 0.0
    for text in [*before, *phrase, None, *phrase, *after]:
        if text is None:
            at += gap_s - GAP_S
            continue
        words.append(TimedWord(f" {text}", at, at + WORD_S))
        at += WORD_S + GAP_S
    return words


def reading(words: list[TimedWord], start: float, end: float, offset: float) -> list[TimedWord]:
    """What Whisper writes for the audio from `start` to `end`: the words said whole within it, their times
    moved by `offset`, kept within the audio read and within their stretch of speech (Whisper does not place
    words far into a pause the speech detector heard)."""
    heard = [w for w in words if w.start >= start - 0.05 and w.end <= end]
    moved = []
    for w in heard:
        low = max([start] + [b.start - INTO_PAUSE_S for a, b in _pauses(words) if b.start <= w.start])
        high = min([end] + [a.end + INTO_PAUSE_S for a, b in _pauses(words) if a.end >= w.end])
        moved.append(TimedWord(w.text, min(max(w.start + offset, low), high), min(max(w.end + offset, low), high)))
    return moved


def _pauses(words: list[TimedWord]) -> list[tuple[TimedWord, TimedWord]]:
    return [(a, b) for a, b in itertools.pairwise(words) if b.start - a.end >= PAUSE_S]


def stream(words: list[TimedWord], offsets: list[float]) -> list[str]:
    """The session's final words, read as the live channel reads: every 0.5 s over a buffer that restarts at
    each pause and is cut at its last final word when it grows past 8 s."""
    agreement = LocalAgreement()
    emitted: list[TimedWord] = []
    buffer_start, now, n = 0.0, 0.0, 0
    total = words[-1].end + 1.0
    pauses = [(a.end, b.start) for a, b in _pauses(words)]
    while now < total:
        now = min(now + READ_EVERY_S, total)
        offset = offsets[n % len(offsets)]
        n += 1
        pause = next((p for p in pauses if buffer_start < p[0] and p[1] - 0.1 <= now), None)
        if pause is not None:  # the speech detector saw the pause end: what came before it is final
            hypothesis = reading(words, buffer_start, pause[1], offset)
            emitted += agreement.commit_through(hypothesis, (pause[0] + pause[1]) / 2, read_from=buffer_start)
            buffer_start = pause[1] - 0.1
            continue
        hypothesis = reading(words, buffer_start, now, offset)
        emitted += agreement.update(hypothesis, now - DELAY_S, read_from=buffer_start)
        if now - buffer_start > MAX_BUFFER_S and agreement.final_until > buffer_start + 1:
            buffer_start = agreement.final_until
    emitted += agreement.commit_through(reading(words, buffer_start, math.inf, 0.0), math.inf, read_from=buffer_start)
    return [w.key for w in emitted]


@settings(max_examples=300, deadline=None)
@given(
    phrase=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4),
    gap_s=st.floats(0.1, 2.0),
    before=st.lists(st.sampled_from(VOCABULARY), max_size=6),
    after=st.lists(st.sampled_from(VOCABULARY), max_size=4),
    offsets=st.lists(st.floats(-0.75, 0.75), min_size=1, max_size=4),
)
def test_a_phrase_said_twice_is_emitted_twice(
    phrase: list[str], gap_s: float, before: list[str], after: list[str], offsets: list[float]
) -> None:
    words = spoken(phrase, gap_s, before, after)
    assert stream(words, offsets) == [w.key for w in words]


def test_no_no_right_after_a_pause_keeps_both() -> None:
    words = spoken(["no"], 0.8, ["i", "said"], ["stop"])
    for offsets in ([0.0], [0.4], [-0.4], [0.0, 1.0]):
        assert stream(words, offsets) == ["i", "said", "no", "no", "stop"]


def test_a_loop_of_whispers_is_not_taken_for_speech() -> None:
    """Whisper sometimes writes what it wrote again, squeezed into a fraction of a second, then goes on: the
    squeezed copy is not said again (13 words in 0.3 s on an AMI meeting; 11 here), the words after it are new."""
    said = ["i'm", "not", "sure", "but", "i'm", "not", "having", "crashes", "at", "the", "moment"]
    agreement = LocalAgreement()
    final = agreement.commit_through([TimedWord(f" {w}", 0.3 * n, 0.3 * n + 0.25) for n, w in enumerate(said)], 3.2)
    assert [w.key for w in final] == said
    end = final[-1].end
    looped = [TimedWord(f" {w}", end + 0.02 * n, end + 0.02 * (n + 1)) for n, w in enumerate(said)]
    reading = [*final, *looped, TimedWord(" so", 3.6, 3.8), TimedWord(" what", 3.8, 4.1)]
    assert [w.key for w in agreement.update(reading, settled_before=5.0)] == ["so", "what"]


def test_words_squeezed_into_a_fraction_of_a_second_wait_for_a_second_reading() -> None:
    """tiny.en wrote the context "I didn't know you were" again into 0.16 s over "Neither did I" (the call): long
    ago by time, yet final only once a next reading agrees; the next reading's words replace them."""
    agreement = LocalAgreement()
    said = [TimedWord(f" {w}", 9.0 + 0.15 * n, 9.1 + 0.15 * n) for n, w in enumerate(["you", "were", "there"])]
    agreement.commit_through(said, 9.5)
    guess = [TimedWord(f" {w}", 10.18 + 0.04 * n, 10.2 + 0.04 * n) for n, w in enumerate(["i", "didn't", "know"])]
    assert agreement.update([*said, *guess], settled_before=11.0) == []
    read = [TimedWord(" neither", 10.2, 10.5), TimedWord(" did", 10.5, 10.7), TimedWord(" i", 10.7, 10.9)]
    assert [w.key for w in agreement.update([*said, *read], settled_before=11.5)] == ["neither", "did", "i"]


def test_quick_short_words_are_final_on_one_reading_like_any_other() -> None:
    """Whisper's alignment gives quick short words little time ("I heard a" in 0.28 s on the call, about 10 words a
    second): they are speech, not a squeeze, so a reading with the delay's audio after them makes them final, and
    the words after them with them (at 8 words a second they waited, with every word after them, for the pause)."""
    agreement = LocalAgreement()
    timed = [("you", 11.66, 11.86), ("know", 11.86, 12.08), ("i", 12.08, 12.10), ("heard", 12.10, 12.20)]
    timed += [("a", 12.20, 12.36), ("beat", 12.36, 12.52), ("this", 12.70, 12.76), ("is", 12.76, 13.02)]
    reading = [TimedWord(f" {text}", start, end) for text, start, end in timed]
    final = agreement.update(reading, settled_before=12.92)
    assert [w.key for w in final] == ["you", "know", "i", "heard", "a", "beat", "this"]
