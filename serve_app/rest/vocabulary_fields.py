"""The form's vocabulary fields: `hotwords` (faster-whisper's and speaches' name: repeated fields, `hotwords[]`, or
one comma-separated value) and the nexara SDK's `dictionary`. Each problem is a 400 whose `detail` names the
field: a list too long, a term too long, a list with no term, a dictionary this service does not have."""

from fastapi import HTTPException, status

from deployments.config import VocabularyConfig
from deployments.vocabulary import Vocabulary, split_terms, unknown_dictionary
from serve_app.common.vocabulary import VocabularyRefused, vocabulary_from
from serve_app.rest.schemas.transcription_form import TranscriptionForm


def vocabulary(form: TranscriptionForm, config: VocabularyConfig) -> Vocabulary | None:
    """The request's vocabulary, or None when it names none; a 400 naming the field that is wrong."""
    if not form.hotwords and form.dictionary is None:
        return None
    terms = split_terms(form.hotwords)
    if form.hotwords and not terms:
        raise _refuse("hotwords: no term given (send words or phrases, comma-separated or as repeated fields)")
    if (reason := unknown_dictionary(form.dictionary, config)) is not None:
        raise _refuse(f"dictionary: {reason}")
    try:
        return vocabulary_from({"hotwords": terms}, dictionary=form.dictionary)
    except VocabularyRefused as refused:
        raise _refuse(str(refused)) from None


def _refuse(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_400_BAD_REQUEST, detail)
