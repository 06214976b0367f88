"""Word-level speaker assignment and segment splitting (deployments/diarization/words.py)."""

from deployments.diarization.words import decoding_of, diarized_transcription, speaker_of, speaker_summaries
from deployments.types import Diarization, Segment, SpeakerTurn, Transcript, Word
from serve_app.rendering.response_formats import ResponseFormat, TimestampGranularity, render_body

A, B = "speaker_0", "speaker_1"  # the names clients get; a diarizer's own labels are renamed (tested below)
TURNS = [SpeakerTurn(speaker=A, start=0.0, end=2.0), SpeakerTurn(speaker=B, start=2.5, end=5.0)]


def _segment(start: float, end: float, text: str) -> Segment:
    return Segment(id=0, seek=0, start=start, end=end, text=text, tokens=[], temperature=0.0, avg_logprob=0.0,
                   compression_ratio=1.0, no_speech_prob=0.0)  # fmt: skip


def test_a_word_gets_the_speaker_it_overlaps_most() -> None:
    assert speaker_of(1.5, 2.7, TURNS) == A  # 0.5 s with A, 0.2 s with B
    assert speaker_of(1.9, 3.0, TURNS) == B


def test_an_overlapped_word_goes_to_the_speaker_who_holds_most_of_it() -> None:
    overlapping = [SpeakerTurn(speaker=A, start=0.0, end=3.0), SpeakerTurn(speaker=B, start=2.0, end=5.0)]
    assert speaker_of(2.6, 3.4, overlapping) == B  # A holds 0.4 s of it, B all 0.8 s
    assert speaker_of(1.8, 2.4, overlapping) == A  # A 0.6 s, B 0.4 s
    split = [SpeakerTurn(speaker=A, start=0.9, end=1.1), SpeakerTurn(speaker=A, start=1.15, end=1.35),
             SpeakerTurn(speaker=B, start=1.35, end=1.7)]  # fmt: skip
    assert speaker_of(0.9, 1.7, split) == A  # A's two turns hold 0.4 s together, B's one 0.35 s


def test_a_word_in_a_gap_gets_the_nearest_turn() -> None:
    assert speaker_of(2.05, 2.15, TURNS) == A
    assert speaker_of(2.35, 2.45, TURNS) == B
    assert speaker_of(7.0, 7.5, TURNS) == B


def test_a_segment_is_split_where_the_speaker_changes() -> None:
    words = [Word(word=" Hello", start=0.2, end=0.8), Word(word=" there.", start=0.9, end=1.6),
             Word(word=" Hi,", start=2.6, end=3.0), Word(word=" you.", start=3.1, end=3.5)]  # fmt: skip
    transcript = Transcript(
        language="en", duration=5.0, segments=[_segment(0.0, 3.6, " Hello there. Hi, you.")], words=words
    )
    diarization = Diarization(turns=TURNS, exclusive_turns=TURNS)
    result = diarized_transcription(transcript, diarization)
    assert [(s.id, s.speaker, s.text, s.start, s.end) for s in result.segments] == [
        (0, A, "Hello there.", 0.0, 2.0),  # the speaker's turn, up to SNAP_S (1 s) past the words
        (1, B, "Hi, you.", 2.5, 4.5),
    ]
    assert result.turns == TURNS
    assert [word.speaker for word in result.segments[1].words] == [B, B]
    assert result.text == "Hello there. Hi, you."
    assert [(s.speaker, s.speaking_time) for s in result.speakers] == [(A, 2.0), (B, 2.5)]


def test_speaking_time_counts_overlapped_speech_and_orders_by_first_turn() -> None:
    turns = [SpeakerTurn(speaker=B, start=1.0, end=3.0), SpeakerTurn(speaker=A, start=0.5, end=2.0),
             SpeakerTurn(speaker=B, start=4.0, end=4.5)]  # fmt: skip
    assert [(s.speaker, s.speaking_time) for s in speaker_summaries(turns)] == [(A, 1.5), (B, 2.5)]


def test_segments_hold_speech_not_the_silence_between_words_or_turns() -> None:
    """One speaker, two turns with a pause between them, one Whisper segment over both: two segments."""
    turns = [SpeakerTurn(speaker=A, start=0.0, end=2.0), SpeakerTurn(speaker=A, start=6.0, end=8.0)]
    words = [Word(word=" Before", start=0.5, end=1.5), Word(word=" after.", start=6.5, end=7.5)]
    transcript = Transcript(language="en", duration=8.0, segments=[_segment(0.0, 8.0, " Before after.")], words=words)
    result = diarized_transcription(transcript, Diarization(turns=turns, exclusive_turns=turns))
    assert [(s.text, s.start, s.end) for s in result.segments] == [("Before", 0.0, 2.0), ("after.", 6.0, 7.0 + 1.0)]
    long_turn = [SpeakerTurn(speaker=A, start=0.0, end=20.0)]  # the diarizer heard speech Whisper did not
    result = diarized_transcription(transcript, Diarization(turns=long_turn, exclusive_turns=long_turn))
    assert [(s.text, s.start, s.end) for s in result.segments] == [("Before", 0.0, 2.5), ("after.", 5.5, 8.5)]


def test_every_word_is_kept_even_without_a_turn_of_its_speaker_nearby() -> None:
    words = [Word(word=" Lone", start=10.0, end=10.5), Word(word=" word.", start=10.6, end=11.0)]
    transcript = Transcript(language="en", duration=12.0, segments=[_segment(10.0, 11.0, " Lone word.")], words=words)
    result = diarized_transcription(transcript, Diarization(turns=TURNS, exclusive_turns=TURNS))
    assert [(s.speaker, s.text, s.start, s.end) for s in result.segments] == [(B, "Lone word.", 10.0, 11.0)]


def test_a_zero_length_word_gets_the_speaker_of_the_turn_around_it() -> None:
    """Whisper gives some words no duration; they must not split their speaker's segment."""
    assert speaker_of(1.0, 1.0, TURNS) == A
    words = [Word(word=" I", start=0.2, end=0.6), Word(word=" I", start=1.0, end=1.0),
             Word(word=" heard.", start=1.1, end=1.6)]  # fmt: skip
    transcript = Transcript(language="en", duration=5.0, segments=[_segment(0.0, 1.6, " I I heard.")], words=words)
    result = diarized_transcription(transcript, Diarization(turns=TURNS, exclusive_turns=TURNS))
    assert [(s.speaker, s.text) for s in result.segments] == [(A, "I I heard.")]


def test_segments_follow_turns_into_overlapped_speech_and_never_overlap_their_own_speaker() -> None:
    """Words take the speaker of the exclusive turns (who dominates); a segment's span follows its speaker's
    whole turn, overlap included, so an interjection over someone else's speech keeps its time; and one
    speaker's segments never overlap each other even when another speaker's word splits their run."""
    turns = [SpeakerTurn(speaker=A, start=0.0, end=6.0), SpeakerTurn(speaker=B, start=2.0, end=3.5)]
    exclusive = [SpeakerTurn(speaker=A, start=0.0, end=2.5), SpeakerTurn(speaker=B, start=2.5, end=3.0),
                 SpeakerTurn(speaker=A, start=3.0, end=6.0)]  # fmt: skip
    words = [Word(word=" One", start=0.2, end=2.2), Word(word=" yes", start=2.6, end=2.9),
             Word(word=" two.", start=3.1, end=5.5)]  # fmt: skip
    transcript = Transcript(language="en", duration=6.0, segments=[_segment(0.0, 5.5, " One yes two.")], words=words)
    result = diarized_transcription(transcript, Diarization(turns=turns, exclusive_turns=exclusive))
    assert [(s.speaker, s.text, s.start, s.end) for s in result.segments] == [
        (A, "One", 0.0, 3.1),
        (B, "yes", 2.0, 3.5),  # B's whole turn, overlapped part included
        (A, "two.", 3.1, 6.0),  # A's earlier segment ends where this one's first word starts
    ]


def test_speakers_are_named_in_order_of_appearance_and_every_word_has_one() -> None:
    """The diarizer's labels become speaker_0, speaker_1, ... by first turn; every word is listed at the top
    level with its speaker and probability; without any turn, the speech is speaker_0's."""
    turns = [
        SpeakerTurn(speaker="SPEAKER_01", start=0.0, end=2.0),
        SpeakerTurn(speaker="SPEAKER_00", start=2.5, end=5.0),
    ]
    words = [Word(word=" Hi.", start=0.5, end=1.0, prob=0.8), Word(word=" Hello.", start=3.0, end=3.5, prob=0.7)]
    transcript = Transcript(language="en", duration=5.0, segments=[_segment(0.0, 3.5, " Hi. Hello.")], words=words)
    result = diarized_transcription(transcript, Diarization(turns=turns, exclusive_turns=turns))
    assert [(w.word, w.speaker, w.prob) for w in result.words] == [(" Hi.", A, 0.8), (" Hello.", B, 0.7)]
    assert [s.speaker for s in result.segments] == [A, B] and [s.speaker for s in result.speakers] == [A, B]
    assert [t.speaker for t in result.turns] == [A, B]
    body = render_body(result, ResponseFormat.json, [TimestampGranularity.segment])
    assert isinstance(body, dict)
    assert "words" not in body["segments"][0]  # clients get them once, at the top level

    unheard = diarized_transcription(transcript, Diarization(turns=[], exclusive_turns=[]))
    assert {s.speaker for s in unheard.segments} == {A} and {w.speaker for w in unheard.words} == {A}
    assert [(s.speaker, s.speaking_time) for s in unheard.speakers] == [(A, 3.0)]


def test_a_speakers_segment_keeps_the_decoding_figures_of_the_whisper_segment_it_overlaps_most() -> None:
    first = _segment(0.0, 2.2, " Hello there.").model_copy(update={"seek": 0, "avg_logprob": -0.2})
    second = _segment(2.2, 5.0, " Hi, you.").model_copy(update={"seek": 220, "avg_logprob": -0.7})
    most = decoding_of(2.5, 4.5, [first, second])
    assert most is not None and most.avg_logprob == -0.7
    first_only = decoding_of(0.0, 2.0, [first, second])
    assert first_only is not None and first_only.seek == 0
    nearest = decoding_of(6.0, 7.0, [first, second])
    assert nearest is not None and nearest.seek == 220  # none overlaps: the nearest
    assert decoding_of(0.0, 1.0, []) is None
