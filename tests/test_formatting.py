"""Subtitle and JSON rendering, checked with the srt and webvtt-py parsers."""

import io
import json

import srt
import webvtt

from deployments.transcriber.languages import language_name
from deployments.types import (
    DiarizedSegment,
    DiarizedTranscript,
    DiarizedWord,
    Segment,
    SpeakerSummary,
    SpeakerTurn,
    Transcript,
    Word,
)
from serve_app.rendering.response_formats import ResponseFormat, TimestampGranularity, render, sentences
from serve_app.rendering.subtitles import SubtitleRules, build_cues, srt_document, vtt_document, words_of_segments

SEGMENT, WORD = [TimestampGranularity.segment], [TimestampGranularity.word]


def _segment(index: int, start: float, end: float, text: str) -> Segment:
    return Segment(
        id=index, seek=0, start=start, end=end, text=text, tokens=[1, 2], temperature=0.0,
        avg_logprob=-0.2, compression_ratio=1.2, no_speech_prob=0.01,
    )  # fmt: skip


SEGMENTS = [_segment(0, 0.0, 1.5, " Hello there."), _segment(1, 2.0, 2.5, "  "), _segment(2, 3661.25, 3662.0, " Bye.")]
TRANSCRIPT = Transcript(
    language="en", duration=3662.0, segments=SEGMENTS, words=[Word(word=" Hello", start=0.0, end=0.5, prob=0.9)]
)


def test_srt_cues_are_numbered_from_one_and_skip_empty_text() -> None:
    document = srt_document(build_cues(words_of_segments(SEGMENTS), SubtitleRules()), SubtitleRules())
    cues = list(srt.parse(document))
    assert [(cue.index, cue.content) for cue in cues] == [(1, "Hello there."), (2, "Bye.")]
    assert cues[1].start.total_seconds() == 3661.25
    # "Bye." is on screen 5/6 s, longer than its 0.75 s of speech: the free time after it is taken (subtitles.py)
    assert "01:01:01,250 --> 01:01:02,083" in document


def test_vtt_has_header_and_dotted_times() -> None:
    document = vtt_document(build_cues(words_of_segments(SEGMENTS), SubtitleRules()), SubtitleRules())
    assert document.startswith("WEBVTT\n")
    assert "01:01:01.250 --> 01:01:02.083" in document
    captions = webvtt.from_buffer(io.StringIO(document)).captions
    assert [caption.text for caption in captions] == ["Hello there.", "Bye."]


def test_json_is_text_only() -> None:
    response = render(TRANSCRIPT, ResponseFormat.json, SEGMENT)
    assert json.loads(bytes(response.body)) == {"text": "Hello there.   Bye."}


def test_verbose_json_has_words_only_when_asked() -> None:
    with_words = json.loads(bytes(render(TRANSCRIPT, ResponseFormat.verbose_json, WORD).body))
    without = json.loads(bytes(render(TRANSCRIPT, ResponseFormat.verbose_json, SEGMENT).body))
    assert with_words["words"] == [{"word": "Hello", "start": 0.0, "end": 0.5, "prob": 0.9}]
    assert "words" not in without
    assert without["task"] == "transcribe" and without["language"] == "english" and len(without["segments"]) == 3


def test_verbose_json_names_the_language_as_openai_does() -> None:
    french = TRANSCRIPT.model_copy(update={"language": "fr"})
    assert json.loads(bytes(render(french, ResponseFormat.verbose_json, SEGMENT).body))["language"] == "french"
    assert language_name("xx") == "xx"  # not a Whisper language: the code as it is


def test_a_diarized_transcript_is_always_openais_diarized_json_object() -> None:
    """The wire shape is the edge's: segments typed `transcript.text.segment`, without their words, which
    clients get once, at the top level, without Whisper's leading space."""
    words = [
        DiarizedWord(word=" Hi", start=0.0, end=0.4, prob=0.9, speaker="speaker_0"),
        DiarizedWord(word=" yo", start=1.0, end=1.3, speaker="speaker_1"),
    ]
    diarized = DiarizedTranscript(
        text="Hi yo",
        language="en",
        duration=2.0,
        speakers=[SpeakerSummary(speaker="speaker_0", speaking_time=0.5)],
        segments=[DiarizedSegment(id=0, start=0.0, end=0.4, text=" Hi", speaker="speaker_0", words=words[:1])],
        words=words,
        turns=[SpeakerTurn(speaker="speaker_0", start=0.0, end=0.5)],
    )
    expected = (
        b'{"task":"diarize","text":"Hi yo","language":"en","duration":2.0,'
        b'"speakers":[{"speaker":"speaker_0","speaking_time":0.5}],'
        b'"segments":[{"type":"transcript.text.segment","id":0,"start":0.0,"end":0.4,"text":" Hi",'
        b'"speaker":"speaker_0"}],'
        b'"words":[{"word":"Hi","start":0.0,"end":0.4,"prob":0.9,"speaker":"speaker_0"},'
        b'{"word":"yo","start":1.0,"end":1.3,"prob":null,"speaker":"speaker_1"}],'
        b'"turns":[{"speaker":"speaker_0","start":0.0,"end":0.5}]}'
    )
    for response_format in ResponseFormat:
        if response_format == ResponseFormat.diarized_json:  # OpenAI's own shape: the next test
            continue
        response = render(diarized, response_format, SEGMENT)
        assert response.body == expected and response.media_type == "application/json"
    assert diarized.words[0].word == " Hi"  # the domain object is left as it is
    openai_shape = render(diarized, ResponseFormat.diarized_json, SEGMENT)
    assert openai_shape.body == (
        b'{"task":"transcribe","duration":2.0,"text":"Hi yo","segments":[{"type":"transcript.text.segment",'
        b'"id":"seg_0","start":0.0,"end":0.4,"text":" Hi","speaker":"speaker_0"}],'
        b'"usage":{"type":"duration","seconds":2.0}}'
    )


def test_diarized_json_is_what_the_openai_sdk_parses() -> None:
    from openai.types.audio import TranscriptionDiarized

    words = [DiarizedWord(word=" Hi", start=0.0, end=0.4, prob=0.9, speaker="alice")]
    diarized = DiarizedTranscript(
        text="Hi",
        language="en",
        duration=1.0,
        speakers=[SpeakerSummary(speaker="alice", speaking_time=0.4)],
        segments=[DiarizedSegment(id=0, start=0.0, end=0.4, text="Hi", speaker="alice", words=words)],
        words=words,
    )
    parsed = TranscriptionDiarized.model_validate_json(
        bytes(render(diarized, ResponseFormat.diarized_json, SEGMENT).body)
    )
    assert parsed.segments[0].speaker == "alice" and parsed.segments[0].id == "seg_0"
    assert parsed.usage is not None and parsed.usage.type == "duration" and parsed.usage.seconds == 1.0


def _words(text: str, language_gap: float = 0.5) -> list[Word]:
    return [
        Word(word=f" {token}", start=index * language_gap, end=index * language_gap + 0.4, prob=0.9)
        for index, token in enumerate(text.split())
    ]


def test_sentences_split_at_sentence_ends_not_at_every_dot() -> None:
    words = _words("Mr. Smith paid 3.5 dollars. Did he? Yes!")
    assert [(s.text, s.start, s.end) for s in sentences(words, "en")] == [
        ("Mr. Smith paid 3.5 dollars.", 0.0, 2.4),
        ("Did he?", 2.5, 3.4),
        ("Yes!", 3.5, 3.9),
    ]


def test_sentences_of_a_language_without_rules_split_at_terminal_punctuation() -> None:
    assert [s.text for s in sentences(_words("Habari yako. Nzuri sana."), "sw")] == ["Habari yako.", "Nzuri sana."]
    assert sentences([], "en") == []
