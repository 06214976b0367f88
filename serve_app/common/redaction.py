"""A request's redaction fields read into `RedactionOptions`, shared by the protocols that name classes as this
service does (the REST form; the nexara and OpenAI live sessions). Each problem is a 400 naming the field: an
unknown class, a mode without classes, a class the request's language cannot be redacted of."""

from typing import get_args

from fastapi import HTTPException, status

from deployments.redaction import RedactionClass, RedactionMode, RedactionOptions, unserved_classes

CLASSES = ", ".join(cls.value for cls in RedactionClass)
MODES = get_args(RedactionMode)
REDACT_FIELD_DOC = (
    f"Entity classes to hide wherever the words appear: {CLASSES}. Repeated fields (or `redact[]`), or one"
    " comma-separated value. Names, places, organisations and dates of birth in English only (docs: Redaction)."
)
REDACT_MODE_DOC = (
    "With redact: `class` (the default: `[PERSON_NAME]`), `mask` (`*****`, the entity's length) or `hash` (a keyed"
    " hash, the same token for the same entity within this key: `[PERSON_NAME_3f9a1c2b]`)."
)


def split_classes(values: list[str]) -> list[str]:
    """Repeated values, each possibly comma-separated, stripped and lower-cased; empty ones dropped."""
    return [name.strip().lower() for value in values for name in value.split(",") if name.strip()]


def redaction_options(
    classes: list[str],
    mode: str | None,
    scope: str,
    language: str | None,
    field: str = "redact",
    mode_field: str = "redact_mode",
) -> RedactionOptions | None:
    """The options, or None when no class is asked (a mode alone is a 400)."""
    names = list(dict.fromkeys(split_classes(classes)))
    if not names:
        if mode is not None:
            raise _refuse(f"{mode_field} requires {field}: name the entity classes to hide ({CLASSES})")
        return None
    unknown = [name for name in names if name not in RedactionClass.__members__]
    if unknown:
        raise _refuse(f"{field}: unknown class {unknown[0][:64]!r}: one of {CLASSES}")
    if mode is not None and mode not in MODES:
        raise _refuse(f"{mode_field}: {mode[:32]!r} is not a mode: one of {', '.join(MODES)}")
    chosen = [RedactionClass(name) for name in names]
    if unserved := unserved_classes(chosen, language):
        listed = ", ".join(cls.value for cls in unserved)
        raise _refuse(f"{field}: {listed} can be found in English only, and language is {language!r}")
    return RedactionOptions(classes=chosen, mode=mode or "class", scope=scope)


def _refuse(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_400_BAD_REQUEST, detail)
