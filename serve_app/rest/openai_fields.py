"""The form fields of OpenAI's current transcription API that arrive in shapes a flat form model cannot read:
`chunking_strategy` (`auto`, or a server_vad object the openai SDK sends as `chunking_strategy[type]`,
`chunking_strategy[threshold]`, ...; or as a JSON string), and the known speakers, `known_speaker_names[]`
with `known_speaker_references[]` (data URLs of short clips).

They are parsed here, before the form model validates the rest, and any mistake is a 400 that names the field.
A reference clip's bytes are spooled beside the upload (deployments/storage/spool.py), never decoded here:
the pipeline decodes them, and refuses a clip that is not audio or too short, naming it.
"""

import base64
import binascii
import json
import re
from pathlib import Path
from urllib.parse import unquote_to_bytes

from fastapi import HTTPException, status
from pydantic import ValidationError

from deployments.storage.spool import reference_path
from deployments.types import KnownSpeaker, SpeechDetection

MAX_KNOWN_SPEAKERS = 4
"""As OpenAI allows."""
MAX_SPEAKER_NAME_CHARS = 64
GENERIC_LABEL = re.compile(r"speaker_\d+")
"""The labels unmatched speakers get: a known speaker may not take one."""
CHUNKING_FIELDS = ("type", "prefix_padding_ms", "silence_duration_ms", "threshold")
NAME_FIELDS = ("known_speaker_names[]", "known_speaker_names")
REFERENCE_FIELDS = ("known_speaker_references[]", "known_speaker_references")
AUDIO_MEDIA_TYPES = ("audio/", "video/")
"""A reference's media type must be one of these (any format the file may have), application/octet-stream,
or none."""


def refuse(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_400_BAD_REQUEST, detail)


def openai_field_names() -> frozenset[str]:
    """Every form field name this module reads."""
    return frozenset(
        {"chunking_strategy", *(f"chunking_strategy[{name}]" for name in CHUNKING_FIELDS), *NAME_FIELDS,
         *REFERENCE_FIELDS}
    )  # fmt: skip


def pop_chunking_strategy(fields: dict[str, list[str]]) -> tuple[bool, SpeechDetection | None]:
    """(whether chunking_strategy was given, the VAD settings it asks for: None for `auto`). Removes its fields."""
    whole = [value for value in fields.pop("chunking_strategy", []) if value != ""]
    parts = {
        name: fields.pop(f"chunking_strategy[{name}]")
        for name in CHUNKING_FIELDS
        if f"chunking_strategy[{name}]" in fields
    }
    if not whole and not parts:
        return False, None
    if whole and parts:
        raise refuse("chunking_strategy: give either the string or the object's fields, not both")
    if whole:
        text = whole[-1].strip()
        if text == "auto":
            return True, None
        try:
            given = json.loads(text)
        except json.JSONDecodeError:
            given = None
        if not isinstance(given, dict):
            raise refuse(
                f'chunking_strategy: {text[:64]!r} is neither "auto" nor a server_vad object'
                ' ({"type": "server_vad", "threshold": ..., "prefix_padding_ms": ..., "silence_duration_ms": ...})'
            )
    else:
        given = {name: values[-1] for name, values in parts.items()}
    return True, _server_vad(given)


def _server_vad(given: dict[str, object]) -> SpeechDetection:
    if given.get("type") != "server_vad":
        raise refuse(f'chunking_strategy: type must be "server_vad", got {str(given.get("type"))[:32]!r}')
    unknown = sorted(set(given) - set(CHUNKING_FIELDS))
    if unknown:
        raise refuse(f"chunking_strategy: unknown field {unknown[0][:64]!r}; it takes {', '.join(CHUNKING_FIELDS)}")
    settings = {name: value for name, value in given.items() if name != "type"}
    try:
        return SpeechDetection.model_validate(settings)
    except ValidationError as error:
        issue = error.errors()[0]
        raise refuse(f"chunking_strategy: {issue['loc'][0]}: {issue['msg']}") from None


def _given(fields: dict[str, list[str]], names: tuple[str, ...]) -> list[str]:
    values: list[str] = []
    for name in names:
        values += fields.pop(name, [])
    return values


def pop_known_speakers(fields: dict[str, list[str]], spool_path: Path) -> list[KnownSpeaker]:
    """The known speakers, each reference clip's bytes written to the spool beside `spool_path`. Removes
    their fields. The caller removes the clips (`remove_spooled`) if the request goes no further."""
    names = [name.strip() for name in _given(fields, NAME_FIELDS)]
    references = _given(fields, REFERENCE_FIELDS)
    if not names and not references:
        return []
    if len(names) != len(references):
        raise refuse(
            f"known_speaker_names[] ({len(names)}) and known_speaker_references[] ({len(references)}) must pair up:"
            " one data URL per name"
        )
    if len(names) > MAX_KNOWN_SPEAKERS:
        raise refuse(f"known_speaker_names[]: at most {MAX_KNOWN_SPEAKERS} known speakers, got {len(names)}")
    for index, name in enumerate(names):
        if not name or len(name) > MAX_SPEAKER_NAME_CHARS:
            raise refuse(f"known_speaker_names[{index}]: give a name of 1 to {MAX_SPEAKER_NAME_CHARS} characters")
        if GENERIC_LABEL.fullmatch(name):
            raise refuse(f"known_speaker_names[{index}]: {name!r} is the label of an unnamed speaker; choose another")
        if name in names[:index]:
            raise refuse(f"known_speaker_names[{index}]: {name[:64]!r} is given twice")
    speakers = []
    for index, (name, reference) in enumerate(zip(names, references, strict=True)):
        clip = data_url_bytes(reference, f"known_speaker_references[{index}]")
        path = reference_path(spool_path, index)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(clip)
        speakers.append(KnownSpeaker(name=name, reference_path=str(path)))
    return speakers


def data_url_bytes(url: str, field: str) -> bytes:
    """The bytes of a `data:[<media type>][;base64],<data>` URL whose media type may be audio."""
    url = url.strip()
    if not url[:5].lower() == "data:" or "," not in url:
        raise refuse(f"{field}: give the clip as a data URL, such as data:audio/wav;base64,<the file in base64>")
    header, _, payload = url[5:].partition(",")
    parameters = [part.strip().lower() for part in header.split(";")]
    media_type = parameters[0]
    if media_type and media_type != "application/octet-stream" and not media_type.startswith(AUDIO_MEDIA_TYPES):
        raise refuse(f"{field}: the data URL holds {media_type[:64]!r}, not audio")
    if "base64" in parameters[1:]:
        try:
            clip = base64.b64decode(payload.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise refuse(f"{field}: the data URL's base64 is malformed") from None
    else:
        clip = unquote_to_bytes(payload)
    if not clip:
        raise refuse(f"{field}: the clip is empty")
    return clip
