"""Subtitle cues (serve_app/rendering/subtitles/) as properties over generated words, and the srt/vtt answers of the
REST routes in-process: the rules held, the fields validated, old stored jobs rendered with the defaults."""

import asyncio
import itertools
import re
from unittest import mock

import pytest
import srt
from hypothesis import given, settings
from hypothesis import strategies as st

from deployments.types import Segment, Transcript, Word
from serve_app.rendering.response_formats import RenderSpec, ResponseFormat, TimestampGranularity, render_body
from serve_app.rendering.subtitles import (
    MIN_CUE_DURATION_S,
    Cue,
    CueWord,
    SubtitleRules,
    build_cues,
    srt_document,
    vtt_document,
    words_of_segments,
)
from tests.inprocess import InProcessService, call

SYNC, ASYNC = "/v1/audio/transcriptions", "/v1/audio/transcriptions/async"
AUDIO = {"file": ("a.wav", b"RIFF....WAVEfmt audio")}
TEXTS = ["the", "a", "and", "country", "ask,", "not.", "what", "you", "extraordinarily", "can", "do?", "for", "I"]


@st.composite
def word_lists(draw: st.DrawFn) -> list[CueWord]:
    count = draw(st.integers(0, 120))
    casts: list[list[str | None]] = [[None], ["speaker_0", "speaker_1"], ["host", "a_much_longer_guest_name"]]
    speakers = draw(st.sampled_from(casts))
    at, words = 0.0, list[CueWord]()
    for _ in range(count):
        text = draw(st.sampled_from(TEXTS) | st.text("abcdefghij,.", min_size=1, max_size=60))
        at += draw(st.sampled_from([0.0, 0.0, 0.05, 0.3, 2.0]))
        length = draw(st.sampled_from([0.0, 0.1, 0.3, 0.8, 9.0]))
        words.append(CueWord(text, round(at, 3), round(at + length, 3), draw(st.sampled_from(speakers))))
        at += length
    return words


RULES = st.builds(
    SubtitleRules,
    max_line_width=st.integers(1, 60),
    max_line_count=st.integers(1, 3),
    max_cue_duration_s=st.sampled_from([1.0, 3.0, 7.0]),
    max_chars_per_second=st.sampled_from([5.0, 20.0]),
    show_speakers=st.booleans(),
)


@pytest.mark.unit
@settings(max_examples=150, deadline=None)
@given(words=word_lists(), rules=RULES)
def test_cues_hold_the_rules_for_any_words(words: list[CueWord], rules: SubtitleRules) -> None:
    cues = build_cues(words, rules)
    document = srt_document(cues, rules)
    for cue in cues:
        labelled = rules.show_speakers and cue.speaker and rules.max_line_width >= 10  # no label on narrower lines
        shown = f"[{cue.speaker[: max(1, rules.max_line_width // 3 - 3)]}] " if labelled and cue.speaker else ""
        lines = (shown + cue.text).split("\n")
        assert len(lines) <= rules.max_line_count
        assert all(len(line) <= rules.max_line_width for line in lines), lines
        assert cue.start <= cue.end <= cue.start + rules.max_cue_duration_s + 1e-9
        assert len({word.speaker for word in cue.words}) == 1  # a cue never spans a change of speaker
    for before, after in itertools.pairwise(cues):
        assert before.end <= after.start  # in order, never overlapping
    # every word in exactly one cue, in order (a word wider than a line is cut into pieces, joined back here)
    assert "".join(w.text for cue in cues for w in cue.words) == "".join(w.text for w in words)
    assert len(list(srt.parse(document))) == len(cues)
    with mock.patch("serve_app.rendering.subtitles.cues.resplit", lambda groups, rules: groups):
        greedy = build_cues(words, rules)  # cut as full as they go, never cut again
    assert _read_too_fast(cues, rules) <= _read_too_fast(greedy, rules)


def _read_too_fast(cues: list[Cue], rules: SubtitleRules) -> int:
    return sum(cue.end - cue.start < cue.characters / rules.max_chars_per_second - 1e-6 for cue in cues)


_SPEECH_TEXT = (
    "And so, my fellow Americans: ask not what your country can do for you, ask what you can do for your country."
    " My fellow citizens of the world: ask not what America will do for you, but what together we can do for the"
    " freedom of man."
)
SPEECH = _SPEECH_TEXT.split()


@st.composite
def a_fast_stretch(draw: st.DrawFn) -> list[CueWord]:
    """Speech slow enough to read (8-13 characters a second) around a stretch of up to a cue's characters said at
    25-40 a second, too fast to read where it is said."""
    slow, fast = draw(st.floats(8, 13)), draw(st.floats(25, 40))
    plan = [(draw(st.integers(120, 300)), slow), (draw(st.integers(30, 84)), fast), (draw(st.integers(120, 300)), slow)]
    at, said, words = draw(st.floats(0, 5)), draw(st.integers(0, len(SPEECH))), list[CueWord]()
    for characters, pace in plan:
        end = len(words)
        while sum(len(word.text) + 1 for word in words[end:]) < characters:
            text = SPEECH[(said := said + 1) % len(SPEECH)]
            words.append(CueWord(text, round(at, 3), round(at + 0.9 * (len(text) + 1) / pace, 3)))
            at += (len(text) + 1) / pace
    return words


@pytest.mark.unit
@settings(max_examples=100, deadline=None)
@given(words=a_fast_stretch())
def test_a_fast_stretch_gets_its_reading_time_from_slower_neighbours(words: list[CueWord]) -> None:
    rules = SubtitleRules()
    cues = build_cues(words, rules)
    assert _read_too_fast(cues, rules) == 0, [(cue.text, cue.start, cue.end) for cue in cues]
    assert [w for cue in cues for w in cue.words] == words
    assert all(before.end <= after.start for before, after in itertools.pairwise(cues))
    assert all(len(cue.lines) <= 2 and all(len(" ".join(w.text for w in line)) <= 42 for line in cue.lines)
               for cue in cues)  # fmt: skip


@pytest.mark.unit
def test_lines_break_at_natural_places_and_cues_get_reading_time() -> None:
    text = "And so, my fellow Americans: ask not what your country can do for you, ask what you can do for the country."
    words, at = [], 0.0
    for token in text.split():
        words.append(CueWord(token, at, at + 0.25))
        at += 0.27
    cues = build_cues(words, SubtitleRules())
    assert all(line[-1].text.lower() not in {"a", "the", "my", "your"} for cue in cues for line in cue.lines)
    assert cues[0].text.split("\n")[0].endswith(("so,", "Americans:"))
    last = cues[-1]
    assert last.end - last.start >= max(last.characters / 20, MIN_CUE_DURATION_S) - 1e-9  # free time after it


@pytest.mark.unit
def test_segments_without_words_are_split_by_characters() -> None:
    segment = Segment(id=0, seek=0, start=1.0, end=3.0, text=" Hi there", tokens=[], temperature=0.0,
                      avg_logprob=0.0, compression_ratio=0.0, no_speech_prob=0.0)  # fmt: skip
    hi, there = words_of_segments([segment])
    assert (hi.text, hi.start, there.text, there.end) == ("Hi", 1.0, "there", 3.0)
    assert there.start == pytest.approx(1.0 + 2.0 * 3 / 9)


@pytest.mark.unit
def test_vtt_shows_speakers_and_times_words_when_asked() -> None:
    words = [CueWord("Hello", 0.0, 0.5, "speaker_0"), CueWord("there.", 0.6, 1.0, "speaker_0"),
             CueWord("Hi.", 1.2, 1.5, "speaker_1")]  # fmt: skip
    rules = SubtitleRules(show_speakers=True, word_highlights=True)
    document = vtt_document(build_cues(words, rules), rules)
    assert "<v speaker_0><c>Hello</c> <00:00:00.600><c>there.</c>" in document
    assert "<v speaker_1><c>Hi.</c>" in document
    assert "[speaker_1] Hi." in srt_document(build_cues(words, rules), rules)


LONG = Transcript(
    language="en",
    duration=40.0,
    segments=[
        Segment(
            id=0,
            seek=0,
            start=0.0,
            end=40.0,
            text=" x" * 80,
            tokens=[],
            temperature=0.0,
            avg_logprob=0.0,
            compression_ratio=0.0,
            no_speech_prob=0.0,
        )
    ],
    words=[Word(word=f" word{i}{',' if i % 7 == 6 else ''}", start=i * 0.5, end=i * 0.5 + 0.4) for i in range(80)],
)


def _cue_lines(document: str) -> list[list[str]]:
    blocks = [block for block in document.strip().split("\n\n") if "-->" in block]
    return [block.split("-->", 1)[1].split("\n")[1:] for block in blocks]


@pytest.mark.unit
@pytest.mark.parametrize("response_format", ["srt", "vtt"])
def test_srt_and_vtt_answers_hold_the_asked_rules(inprocess: InProcessService, monkeypatch, response_format) -> None:
    monkeypatch.setattr("tests.inprocess.TRANSCRIPT", LONG)
    form = {"response_format": response_format, "max_line_width": "20", "max_line_count": "1"}
    answer = call(inprocess, "POST", SYNC, files=AUDIO, data=form)
    assert answer.status_code == 200, answer.text
    lines = _cue_lines(answer.text)
    assert len(lines) > 10 and all(len(cue) == 1 and len(cue[0]) <= 20 for cue in lines)
    options = inprocess.pipeline.requests[-1].options
    assert options.word_timestamps  # the cues are cut from the words, asked for although the client did not
    json_answer = call(inprocess, "POST", SYNC, files=AUDIO, data={"response_format": "verbose_json"}).json()
    assert "words" not in json_answer  # json bodies show words only when asked


@pytest.mark.unit
@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"response_format": "srt", "max_line_width": "3"}, "max_line_width"),
        ({"response_format": "vtt", "max_line_count": "zero"}, "max_line_count"),
        ({"response_format": "srt", "max_cue_duration_s": "-1"}, "max_cue_duration_s"),
        ({"response_format": "vtt", "max_chars_per_second": "1000"}, "max_chars_per_second"),
        ({"response_format": "json", "max_line_width": "30"}, "max_line_width requires response_format srt or vtt"),
        ({"response_format": "srt", "subtitle_word_highlights": "true"}, "subtitle_word_highlights requires"),
        ({"response_format": "vtt", "subtitle_speakers": "true"}, "subtitle_speakers requires task=diarize"),
    ],
)
@pytest.mark.parametrize("path", [SYNC, ASYNC])
def test_bad_subtitle_fields_are_4xx_naming_them(inprocess: InProcessService, form, field, path) -> None:
    answer = call(inprocess, "POST", path, files=AUDIO, data=form)
    assert 400 <= answer.status_code < 500 and field in str(answer.json()["detail"]), answer.text


@pytest.mark.unit
def test_a_diarized_job_with_speakers_gets_a_cue_per_turn(inprocess: InProcessService) -> None:
    form = {"task": "diarize", "response_format": "vtt", "subtitle_speakers": "true"}
    created = call(inprocess, "POST", ASYNC, files=AUDIO, data=form)
    assert created.status_code in (200, 201, 202), created.text
    job_id = created.json()["job_id"]
    for _ in range(200):
        job = call(inprocess, "GET", f"{ASYNC}/{job_id}").json()
        if job["status"] != "in_progress":
            break
        inprocess.loop.run_until_complete(asyncio.sleep(0.02))
    assert job["status"] == "complete", job
    assert re.search(r"<v speaker_0>Hello\n", job["result"]) and "<v speaker_1>there." in job["result"]


@pytest.mark.unit
def test_a_job_stored_before_the_rules_renders_with_the_defaults() -> None:
    stored = {"response_format": "srt", "timestamp_granularities": ["segment"]}  # no `subtitles` key
    spec = RenderSpec.model_validate(stored)
    assert spec.subtitles == SubtitleRules()
    old = LONG.model_copy(update={"words": []})  # and no words: the segments' text split by characters
    body = render_body(old, spec.response_format, [TimestampGranularity.segment], spec.subtitles)
    assert isinstance(body, str) and all(len(cue) <= 2 for cue in _cue_lines(body))
    assert render_body(old, ResponseFormat.text, [TimestampGranularity.segment]) == old.text


@pytest.mark.unit
def test_a_translation_as_srt_is_cut_from_words(inprocess: InProcessService) -> None:
    answer = call(inprocess, "POST", "/v1/audio/translations", files=AUDIO, data={"response_format": "srt"})
    assert answer.status_code == 200 and answer.text.startswith("1\n00:00:00,000 --> "), answer.text
    assert inprocess.pipeline.requests[-1].options.word_timestamps
