"""Aligned words into segments: sentences, cut again at pauses and when too long."""

from deployments.transcriber.segmenting import segment_groups
from deployments.types import Word


def words(*timed: tuple[str, float, float]) -> list[Word]:
    return [Word(word=text, start=start, end=end) for text, start, end in timed]


def texts(groups: list[list[Word]]) -> list[str]:
    return ["".join(word.word for word in group).strip() for group in groups]


def test_a_segment_is_a_sentence() -> None:
    said = words(
        (" Hello", 0.0, 0.4), (" there.", 0.4, 0.8), (" How", 0.9, 1.1), (" are", 1.1, 1.3), (" you?", 1.3, 1.6)
    )
    assert texts(segment_groups(said, "en", pause_s=0.8, max_duration_s=10)) == ["Hello there.", "How are you?"]


def test_a_pause_starts_a_segment_inside_a_sentence() -> None:
    said = words((" and", 0.0, 0.3), (" then", 0.3, 0.6), (" we", 2.0, 2.2), (" left.", 2.2, 2.6))
    assert texts(segment_groups(said, "en", pause_s=0.8, max_duration_s=10)) == ["and then", "we left."]


def test_a_long_sentence_is_cut_after_its_last_comma() -> None:
    said = words(
        (" First", 0.0, 1.0), (" we", 1.0, 2.0), (" came,", 2.0, 3.0), (" then", 3.0, 4.0), (" we", 4.0, 5.0),
        (" saw", 5.0, 6.0), (" and", 6.0, 7.0), (" won.", 7.0, 8.0),
    )  # fmt: skip
    assert texts(segment_groups(said, "en", pause_s=0.8, max_duration_s=6.5)) == [
        "First we came,",
        "then we saw and won.",
    ]


def test_a_long_sentence_without_a_comma_is_cut_where_it_gets_too_long() -> None:
    said = words(*((f" w{i}", float(i), i + 1.0) for i in range(5)))
    assert texts(segment_groups(said, "en", pause_s=0.8, max_duration_s=3)) == ["w0 w1 w2", "w3 w4"]


def test_no_words_no_segments() -> None:
    assert segment_groups([], "en", pause_s=0.8, max_duration_s=10) == []


def test_no_segment_runs_longer_than_the_limit_after_a_cut_at_a_comma() -> None:
    said = words((" one,", 0.0, 1.0), (" two", 1.0, 5.0), (" three", 5.0, 6.8), (" four.", 6.8, 8.0))
    groups = segment_groups(said, "en", pause_s=0.8, max_duration_s=5.5)
    assert texts(groups) == ["one,", "two", "three four."]  # "two three" would last 5.8 s
    assert all(group[-1].end - group[0].start <= 5.5 for group in groups)
