"""Component: the redaction's finder (Presidio and spaCy's English model, loaded in the test process) and the
redactor over texts, pieces, words and transcripts: each class on written text, the three modes, entities cut by
piece boundaries, the times kept, the languages served, and sentences without personal data left alone."""

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from deployments.live._redaction import LiveRedaction
from deployments.live.events import LiveWord, SessionEnded, SpeechEnded, TranscriptEvent, TurnEnded
from deployments.redaction.finder import Entity, EntityFinder, RedactionUnavailable, merged
from deployments.redaction.options import RedactionClass, RedactionOptions
from deployments.redaction.redactor import Redactor
from deployments.types import (
    AnalysisOptions,
    BatchHints,
    ChunkOptions,
    ChunkTranscript,
    DiarizedSegment,
    DiarizedTranscript,
    DiarizedWord,
    PipelineText,
    Segment,
    SpeakerSummary,
    Transcript,
    Word,
)
from tests.test_pipeline import _Analyzer, _pipeline, _request, _Transcriber, _wav

ALL = list(RedactionClass)


@pytest.fixture(scope="module")
def finder() -> EntityFinder:
    return EntityFinder()


def redactor(finder: EntityFinder, classes=ALL, mode="class", scope="owner-1") -> Redactor:
    return Redactor(RedactionOptions(classes=classes, mode=mode, scope=scope), finder, b"test-key")


@pytest.mark.parametrize(
    ("text", "cls", "entity"),
    [
        ("My card number is 4111 1111 1111 1111, thanks.", "credit_card_number", "4111 1111 1111 1111"),
        ("The card is 5500-0055-5555-5559.", "credit_card_number", "5500-0055-5555-5559"),
        ("My social security number is 536-22-8190.", "us_social_security_number", "536-22-8190"),
        ("Call me back at 415 555 2671 tomorrow.", "phone_number", "415 555 2671"),
        ("Write to jane.doe@example.com today.", "email_address", "jane.doe@example.com"),
        ("Write to jane dot doe at example dot com today.", "email_address", "jane dot doe at example dot com"),
        ("The IBAN is GB82 WEST 1234 5698 7654 32.", "iban", "GB82 WEST 1234 5698 7654 32"),
        ("The server is at 192.168.1.20 now.", "ip_address", "192.168.1.20"),
        ("I was born on March 3rd, 1985 in the spring.", "date_of_birth", "March 3rd, 1985"),
        ("Hello, my name is Sarah Johnson.", "person_name", "Sarah Johnson"),
        ("We moved to Chicago last year.", "location", "Chicago"),
        ("She works for Microsoft now.", "organization", "Microsoft"),
        ("The code is 7 4 9 2.", "numbers", "7 4 9 2"),
    ],
)
def test_each_class_is_found_and_replaced_by_its_token(finder, text, cls, entity) -> None:
    redacted = redactor(finder, [RedactionClass(cls)]).text(text, "en")
    assert entity not in redacted and f"[{cls.upper()}]" in redacted
    assert redacted.replace(f"[{cls.upper()}]", entity) == text  # nothing else touched


def test_a_number_failing_luhn_is_no_card_and_a_date_without_a_cue_no_birth_date(finder) -> None:
    text = "The order is 4111 1111 1111 1112 and we met on March 3rd, 1985."
    assert redactor(finder, [RedactionClass.credit_card_number, RedactionClass.date_of_birth]).text(text, "en") == text


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("My card number is 411111111111111", "credit_card_number"),  # a digit lost: no Luhn, but a card word
        ("The card ends in 1234.", "credit_card_number"),  # part of a card number is card data too
        ("I pay with my mastercard, 5105, 1051, 0510, 5100.", "credit_card_number"),
        ("My social security number is five three six two two eight one nine zero", "us_social_security_number"),
        ("Text me at 702, 5, 5, 5, 3, 4, 5, 6 when you arrive.", "phone_number"),
        ("You can reach me at 415. -555 5, 2, 6, 7, 1, alright", "phone_number"),  # as a live reading wrote it
        ("You can reach me at 415 -55 -2671. Alright", "phone_number"),  # a digit lost (another live reading)
        ("Call me on 555 2671 tonight.", "phone_number"),  # a local number
        ("You can reach me at 415 515 or write to", "phone_number"),  # a number heard in part (a live reading)
        ("can reach me at 415 555 2525 6, 7 1 Alright", "phone_number"),  # a group heard twice (a live reading)
        ("My email is Sarah.jonesatgmail.com", "email_address"),  # an address heard as one word
    ],
)
def test_numbers_and_addresses_as_speech_recognition_writes_them(finder, text, cls) -> None:
    redacted = redactor(finder, [RedactionClass(cls)]).text(text, "en")
    assert f"[{cls.upper()}]" in redacted and not any(c.isdigit() for c in redacted)
    assert "five" not in redacted and "jones" not in redacted


@pytest.mark.parametrize(
    "text",
    [
        "The weather is nice today and we will meet at noon at the station.",
        "Please send the report before the meeting starts.",
        "I think the second option is better for everyone.",
        "Call me in 2025 about the order number 12345.",  # a year after a calling word, an order number
        "Please write to me. It is fine to send it.",  # a sentence's end before a word that is a domain's end
        "I read my gmail at home and outlook at work.",  # providers' names, no address
    ],
)
def test_sentences_without_personal_data_are_left_alone(finder, text) -> None:
    assert redactor(finder, [c for c in ALL if c != RedactionClass.numbers]).text(text, "en") == text


def test_mask_keeps_length_and_spaces_and_hash_is_stable_within_a_scope_only(finder) -> None:
    text = " My name is Sarah Johnson."
    assert redactor(finder, mode="mask").text(text, "en") == " My name is ***** *******."
    first = redactor(finder, mode="hash").text(text, "en")
    again = redactor(finder, mode="hash").text(" Yesterday Sarah Johnson called.", "en")
    other = redactor(finder, mode="hash", scope="owner-2").text(text, "en")
    token = first.split("is ")[1].rstrip(".")
    assert token.startswith("[PERSON_NAME_") and token in again and token not in other


def test_an_entity_cut_by_pieces_is_hidden_in_each_piece(finder) -> None:
    pieces = [" My card is 4111", " 1111 1111", " 1111, call", " 415 555 2671."]
    out = redactor(finder, [RedactionClass.credit_card_number, RedactionClass.phone_number]).pieces(pieces, "en")
    assert out == [" My card is [CREDIT_CARD_NUMBER]", " [CREDIT_CARD_NUMBER]", " [CREDIT_CARD_NUMBER], call",
                   " [PHONE_NUMBER]."]  # fmt: skip


def test_named_entities_are_english_only_patterns_every_language(finder) -> None:
    with pytest.raises(RedactionUnavailable, match="person_name"):
        redactor(finder, [RedactionClass.person_name]).text("Je m'appelle Marie Curie.", "fr")
    out = redactor(finder, [RedactionClass.credit_card_number]).text("Ma carte: 4111 1111 1111 1111.", "fr")
    assert out == "Ma carte: [CREDIT_CARD_NUMBER]."


def test_overlapping_findings_merge_under_the_most_specific_class() -> None:
    spans = merged([Entity(0, 10, RedactionClass.numbers), Entity(2, 14, RedactionClass.credit_card_number)])
    assert spans == [Entity(0, 14, RedactionClass.credit_card_number)]


def _words(text: str, speaker: str | None = None) -> list:
    out = []
    for index, token in enumerate(text.split()):
        values = {"word": " " + token, "start": float(index), "end": index + 0.5}
        out.append(DiarizedWord(**values, speaker=speaker) if speaker else Word(**values))
    return out


def test_a_transcript_is_redacted_in_segments_and_words_which_keep_their_times(finder) -> None:
    first, second = " I am Sarah Johnson from Chicago.", " My card is 4111 1111 1111 1111."
    decoding = {
        "seek": 0,
        "tokens": [],
        "temperature": 0,
        "avg_logprob": 0,
        "compression_ratio": 1,
        "no_speech_prob": 0,
    }
    segments = [Segment(id=i, start=0, end=1, text=t, **decoding) for i, t in enumerate((first, second))]
    words = _words(first + second)
    result = redactor(finder).transcript(Transcript(language="en", duration=10, segments=segments, words=words))
    assert isinstance(result, Transcript)
    assert result.text == "I am [PERSON_NAME] from [LOCATION]. My card is [CREDIT_CARD_NUMBER]."
    assert [w.word for w in result.words][2:5] == [" [PERSON_NAME]", " [PERSON_NAME]", " from"]
    assert [(w.start, w.end) for w in result.words] == [(w.start, w.end) for w in words]
    assert all("4111" not in w.word and "Sarah" not in w.word for w in result.words)


def test_a_diarized_transcript_is_redacted_in_its_text_segments_and_their_words(finder) -> None:
    text = " Call me at 415 555 2671, I am Sarah Johnson."
    words = _words(text, "speaker_0")
    diarized = DiarizedTranscript(
        text=text.strip(), language="en", duration=9, speakers=[SpeakerSummary(speaker="speaker_0", speaking_time=9)],
        segments=[DiarizedSegment(id=0, start=0, end=9, text=text, speaker="speaker_0", words=words)], words=words,
    )  # fmt: skip
    result = redactor(finder, [RedactionClass.phone_number, RedactionClass.person_name]).transcript(diarized)
    assert isinstance(result, DiarizedTranscript)
    for shown in (result.text, result.segments[0].text, "".join(w.word for w in result.segments[0].words)):
        assert "2671" not in shown and "Sarah" not in shown and "[PHONE_NUMBER]" in shown


def _event(words: str, start: int, turn: int = 0) -> TranscriptEvent:
    live = [LiveWord(text=w, start=start + 100 * i, end=start + 100 * i + 80) for i, w in enumerate(words.split())]
    return TranscriptEvent(text="".join(" " + w.text for w in live), words=live, turn=turn)


async def _stream(filter_: LiveRedaction, events: list) -> list:
    out = []
    for event in events:
        out.extend(await filter_.process(event))
    return out


def test_a_live_session_never_sends_part_of_an_entity(finder) -> None:
    live = LiveRedaction(
        redactor(finder, [RedactionClass.credit_card_number, RedactionClass.person_name]), lambda _: "en"
    )
    first = [_event("Hello, my name is Sarah", 0), _event("Johnson and my card", 600), _event("number is 4111", 1100)]
    held = asyncio.run(_stream(live, first))
    assert "".join(e.text for e in held) == " Hello, my name is [PERSON_NAME] and my card number is"
    said = "Hello, my name is Sarah Johnson and my card number is 4111 1111 1111 1111, thanks."
    turn_end = TurnEnded(turn=0, start=0, end=2000, confidence=None, text=said, words=[])
    rest = [_event("1111 1111", 1500), _event("1111, thanks.", 1800), turn_end]
    out = asyncio.run(_stream(live, rest))
    streamed = [e for e in out if isinstance(e, TranscriptEvent)]
    sent = "".join(e.text for e in held + streamed)
    assert not any(c.isdigit() for c in sent) and "Sarah" not in sent and "[CREDIT_CARD_NUMBER]" in sent
    assert [w.start for e in held + streamed for w in e.words] == sorted(
        w.start for e in held + streamed for w in e.words
    )
    turn = out[-1]
    assert isinstance(turn, TurnEnded) and "4111" not in turn.text and "[CREDIT_CARD_NUMBER]" in turn.text


def test_a_pause_releases_a_held_name_but_not_a_number_and_the_session_end_releases_all(finder) -> None:
    live = LiveRedaction(redactor(finder, [RedactionClass.phone_number]), lambda _: "en")
    out = asyncio.run(_stream(live, [_event("Call Peter", 0), SpeechEnded(turn=0, end=500)]))
    assert "".join(e.text for e in out if isinstance(e, TranscriptEvent)) == " Call Peter"
    out = asyncio.run(_stream(live, [_event("at 415 555", 900), SpeechEnded(turn=0, end=1500)]))
    assert "".join(e.text for e in out if isinstance(e, TranscriptEvent)) == ""  # `at`: an address may be forming
    said = "Call Peter at 415 555 2671"
    ended = SessionEnded(audio_duration_ms=3000, channels_transcribed=1, billed_ms=3000, text=said)
    out = asyncio.run(_stream(live, [_event("2671", 1600), ended]))
    streamed = [e for e in out if isinstance(e, TranscriptEvent)]
    assert "".join(e.text for e in streamed) == " at [PHONE_NUMBER]"
    assert [w.text for e in streamed for w in e.words] == ["at", *["[PHONE_NUMBER]"] * 3]  # each word keeps its times
    assert out[-1].text == "Call Peter at [PHONE_NUMBER]"


def test_a_live_session_never_sends_a_phone_number_heard_in_part(finder) -> None:
    """Fast speech read live: the number's last digits lost, the next words come at once (a CI's realtime session)."""
    live = LiveRedaction(redactor(finder, [RedactionClass.phone_number]), lambda _: "en")
    events = [_event("You can reach", 0), _event("me at 415 515", 600), _event("or write to", 1200)]
    sent = "".join(e.text for e in asyncio.run(_stream(live, events)) if isinstance(e, TranscriptEvent))
    assert not any(c.isdigit() for c in sent) and "[PHONE_NUMBER]" in sent, sent


class _Naming(_Transcriber):
    """Writes a name in every chunk."""

    async def _transcribe(self, chunk: np.ndarray, options: ChunkOptions, hints: BatchHints) -> ChunkTranscript:
        transcript = await super()._transcribe(chunk, options, hints)
        segment = transcript.segments[0].model_copy(update={"text": " My name is Sarah Johnson."})
        return transcript.model_copy(update={"segments": [segment]})


def test_the_analysis_and_the_streamed_text_read_the_redacted_words(tmp_path: Path) -> None:
    pipeline, analyzer = _pipeline(tmp_path, _Naming()), _Analyzer()
    pipeline.analyzer = analyzer  # type: ignore[assignment]  # a fake for the Ray handle
    redaction = RedactionOptions(classes=[RedactionClass.person_name])
    request = _request(_wav(tmp_path, [(0.1, 3.0)]), language="en")
    request = request.model_copy(
        update={
            "options": request.options.model_copy(update={"redaction": redaction}),
            "analysis": AnalysisOptions(prompt="Who is calling?"),
            "stream_text": True,
        }
    )

    async def events() -> list:
        return [event async for event in pipeline.transcribe_streaming(request)]

    received = asyncio.run(events())
    ((asked, _),) = analyzer.asked
    assert isinstance(asked, Transcript) and asked.text == "My name is [PERSON_NAME]."
    streamed = "".join(event.text for event in received if isinstance(event, PipelineText))
    assert "Sarah" not in streamed and "[PERSON_NAME]" in streamed


def test_a_live_address_is_held_from_at_to_its_domain(finder) -> None:
    live = LiveRedaction(redactor(finder, [RedactionClass.email_address]), lambda _: "en")
    events = [_event("write to jane", 0), _event("at", 400), _event("gmail", 600), _event(".com, thanks.", 900),
              SpeechEnded(turn=0, end=1200)]  # fmt: skip
    out = asyncio.run(_stream(live, events))
    texts = [e.text for e in out]
    assert not [t for t in texts if "gmail" in t or "jane" in t] and "[EMAIL_ADDRESS]" in "".join(texts), texts


@pytest.mark.parametrize(
    "said",
    [
        "write to Sarah Johnson gmail .com",
        "write to sarah johnson gmail dot com",
        "or right to say sarah dot johnson gmail dot com",  # no e-mail word: `write` heard as `right`
        "it is jane underscore doe hotmail .co .uk thanks",
        "reach me at janedoeatyahoo.com",
        "my address is jane at gmail and that is all",  # the domain's ending lost
    ],
)
def test_an_address_heard_without_its_at_is_an_address(finder, said) -> None:
    """A live reading lost the `at` (and wrote `.com` as a word of its own), or the context word; the address's
    domain is still hidden, and a dotted local part with it."""
    redacted = redactor(finder, [RedactionClass.email_address]).text(said, "en")
    secrets = ("gmail", "hotmail", "yahoo", "jane", "sarah dot")
    assert "[EMAIL_ADDRESS]" in redacted and not [s for s in secrets if s in redacted.lower()], redacted


def test_a_live_address_at_a_mail_provider_needs_no_email_word(finder) -> None:
    """`write to` heard as `right to`: the provider's name is held until its domain's ending comes."""
    live = LiveRedaction(redactor(finder, [RedactionClass.email_address]), lambda _: "en")
    ended = SessionEnded(audio_duration_ms=3000, channels_transcribed=1, billed_ms=3000, text="")
    events = [_event("or right to say Sarah Johnson", 0), _event("gmail", 600), _event(".com.", 900),
              SpeechEnded(turn=0, end=1200), ended]  # fmt: skip
    texts = [e.text for e in asyncio.run(_stream(live, events)) if isinstance(e, TranscriptEvent)]
    assert not [t for t in texts if "gmail" in t] and "[EMAIL_ADDRESS]" in "".join(texts), texts


def test_a_name_found_once_stays_hidden_for_the_session(finder) -> None:
    """A live reading that garbles a name's context (`Alright, tusserinat. Johnsonat.` for `write to sarah dot
    johnson at ...`) gives the named-entity model nothing to find: the session remembers the words it found."""
    live = LiveRedaction(redactor(finder, [RedactionClass.person_name, RedactionClass.location]), lambda _: "en")
    ended = SessionEnded(audio_duration_ms=9000, channels_transcribed=1, billed_ms=9000, text="Johnsonat. Chicago.")
    events = [_event("Hello, my name is Sarah Johnson and I live in Chicago.", 0), SpeechEnded(turn=0, end=900),
              _event("Alright, tusserinat. Johnsonat. thanks.", 1200, turn=1), SpeechEnded(turn=1, end=2000),
              TurnEnded(turn=1, start=1200, end=2000, confidence=None, text=" Sarah's. Chicago",
                        words=[LiveWord(text="Sarah's.", start=1200, end=1300)]),
              ended]  # fmt: skip
    out = asyncio.run(_stream(live, events))
    sent = json.dumps([e.model_dump() for e in out]).lower()
    assert "johnson" not in sent and "sarah" not in sent and "chicago" not in sent, sent
    assert "alright" in sent and "thanks" in sent and "[person_name]" in sent and "[location]" in sent


def test_a_name_found_once_is_hidden_wherever_it_is_written_as_a_name(finder) -> None:
    text = "My name is Sarah Johnson. Johnson is busy, so pay the bill to Johnsons today. Will Bill come?"
    redacted = redactor(finder, [RedactionClass.person_name]).text(text, "en")
    assert "Johnson" not in redacted and "pay the bill" in redacted, redacted


def test_a_pause_inside_a_live_address_releases_none_of_it(finder) -> None:
    live = LiveRedaction(redactor(finder, [RedactionClass.email_address]), lambda _: "en")
    ended = SessionEnded(audio_duration_ms=3000, channels_transcribed=1, billed_ms=3000, text="")
    events = [_event("or write to Sarah Johnson", 0), _event("gmail", 600), SpeechEnded(turn=0, end=900),
              _event(".com", 1200), ended]  # fmt: skip
    texts = [e.text for e in asyncio.run(_stream(live, events)) if isinstance(e, TranscriptEvent)]
    assert not [t for t in texts if "gmail" in t] and "[EMAIL_ADDRESS]" in "".join(texts), texts
