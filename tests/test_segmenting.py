"""Aligned words into segments: sentences, cut again at pauses and when too long; and every word or
segment fitted into its chunk with a length of its own."""

import itertools

from deployments.transcriber.segmenting import MIN_DURATION_S, fit_in_chunk, segment_groups
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


def spans(timed: list[Word]) -> list[tuple[float, float]]:
    return [(word.start, word.end) for word in timed]


def assert_fitted(timed: list[Word], chunk_s: float) -> None:
    """Every word lasts, within the chunk, in order and none overlapping the next."""
    assert all(0 <= word.start < word.end <= chunk_s for word in timed)
    assert all(a.end <= b.start for a, b in itertools.pairwise(timed))


def test_a_word_without_time_takes_what_it_lacks_from_what_follows() -> None:
    said = words(
        (" Hello.", 8.94, 8.94), (" Hello.", 8.94, 8.94), (" I", 8.98, 8.98), (" didn't", 8.98, 9.2),
        (" know.", 9.2, 9.4), (" So", 9.8, 9.8), (" I", 9.8, 10.24),
    )  # fmt: skip
    fitted = fit_in_chunk(said, 22.0)
    assert_fitted(fitted, 22.0)
    assert spans(fitted) == [
        (8.94, 8.96), (8.96, 8.98), (8.98, 9.0), (9.0, 9.2), (9.2, 9.4), (9.8, 9.82), (9.82, 10.24),
    ]  # fmt: skip
    assert [word.word for word in fitted] == [word.word for word in said]
    assert all(b - a >= MIN_DURATION_S - 1e-9 for a, b in spans(fitted))


def test_words_that_already_fit_are_left_as_they_are() -> None:
    said = words((" and", 0.0, 0.3), (" then", 0.3, 0.6), (" we", 2.0, 2.2), (" left.", 2.2, 2.6))
    assert fit_in_chunk(said, 3.0) == said


def test_at_the_chunks_end_words_without_time_move_back() -> None:
    said = words((" now,", 20.92, 21.28), (" though", 21.99, 21.99), (" yes.", 22.0, 22.4))  # past the end too
    fitted = fit_in_chunk(said, 22.0)
    assert_fitted(fitted, 22.0)
    assert spans(fitted) == [(20.92, 21.28), (21.96, 21.98), (21.98, 22.0)]


def test_words_all_at_one_instant_are_spread_within_the_chunk() -> None:
    said = words(*((f" w{i}", 0.5, 0.5) for i in range(5)), (" end", 0.0, 0.0))  # the last one out of order too
    fitted = fit_in_chunk(said, 0.6)
    assert_fitted(fitted, 0.6)


def test_more_words_than_the_minimum_length_leaves_room_for_still_get_a_length_each() -> None:
    said = words(*((f" w{i}", 0.0, 0.0) for i in range(10)))
    fitted = fit_in_chunk(said, 0.1)  # 10 ms each, not 20
    assert_fitted(fitted, 0.1)


def test_segments_made_from_fitted_words_have_a_length_each() -> None:
    said = fit_in_chunk(words((" Hello.", 8.94, 8.94), (" Hello.", 8.94, 8.94), (" Bye.", 9.0, 9.0)), 10.0)
    groups = segment_groups(said, "en", pause_s=0.8, max_duration_s=10)
    assert texts(groups) == ["Hello.", "Hello.", "Bye."]
    assert all(group[0].start < group[-1].end for group in groups)
