"""Receive a transcription form as it streams in: the file part goes straight to a spool file on disk,
the other fields to memory, and every limit is enforced while reading, so a 3 GB upload never sits in memory.

FastAPI's own form parsing is not used on the upload routes: it copies files through a temporary file and a
thread pool (a second copy on disk, and slower than the network, so the body piles up in memory before it).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl

import python_multipart
from fastapi import HTTPException, Request, status
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import parse_options_header
from starlette.requests import ClientDisconnect

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks  # declared for type checkers only

MAX_FIELDS = 32
"""Plain text fields in one form, each at most MAX_FIELD_BYTES; the fields in FIELD_ALLOWANCES are counted apart."""
MAX_FIELD_BYTES = 64 * 1024


@dataclass(frozen=True)
class FieldAllowance:
    """A text field that may be larger, or come more often, than MAX_FIELDS plain fields allow: its parts (under
    its name or its name with `[]`, as SDKs send lists) are counted apart, at most `max_parts`, each at most
    `max_bytes`, so the memory a form may take stays bounded."""

    name: str
    max_parts: int
    max_bytes: int
    part: str
    """What one part is, for the error that says how many are allowed."""


KNOWN_SPEAKER_REFERENCES = FieldAllowance(
    "known_speaker_references", max_parts=4, max_bytes=4 * 1024 * 1024, part="reference clips"
)
"""A known speaker's reference clip, a data URL: 10 s of 48 kHz stereo 16-bit WAV is 2.6 MB in base64."""
VOCABULARY_TERMS = FieldAllowance("hotwords", max_parts=256, max_bytes=16 * 1024, part="fields")
"""A vocabulary's terms, one part each (`deployments.vocabulary.MAX_TERMS` of them, so the vocabulary's own
check names the limit), or one comma-separated list of them all."""
VOICE_IDS = FieldAllowance("voices", max_parts=64, max_bytes=256, part="voice ids")
"""Enrolled voices' ids, one part each (the request's limit, `voices.max_per_request`, is checked and named later)."""
FIELD_ALLOWANCES = {
    name: allowance
    for allowance in (KNOWN_SPEAKER_REFERENCES, VOCABULARY_TERMS, VOICE_IDS)
    for name in (allowance.name, f"{allowance.name}[]")
}
FORM_OVERHEAD_BYTES = MAX_FIELDS * MAX_FIELD_BYTES + sum(
    allowance.max_parts * allowance.max_bytes for allowance in set(FIELD_ALLOWANCES.values())
)
"""Room for the non-file fields and part headers when checking Content-Length against the file limit."""
MAX_URLENCODED_BYTES = MAX_FIELDS * MAX_FIELD_BYTES


class FormRejectedError(HTTPException):
    """The body is not a form this service accepts; `detail` says what to fix."""


@dataclass(frozen=True)
class SpooledFile:
    path: Path
    filename: str
    size: int


@dataclass
class ReceivedForm:
    fields: dict[str, list[str]] = field(default_factory=dict)
    file: SpooledFile | None = None


def too_large(limit_bytes: int) -> FormRejectedError:
    return FormRejectedError(status.HTTP_413_CONTENT_TOO_LARGE, f"file is too large: the limit is {limit_bytes} bytes")


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


async def receive_raw_body(
    request: Request, path: Path, max_bytes: int, empty: str, digest: _Digest | None = None
) -> int:
    """The body itself as the file (audio sent raw, as Deepgram's and AssemblyAI's clients send it, not in a form),
    streamed to `path` with the limit enforced on Content-Length and while reading, and fed to `digest`; its
    size. On any failure, an empty body included (400 saying `empty`), nothing is left at `path`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise too_large(max_bytes)
    path.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    try:
        with path.open("wb") as spooled:
            async for piece in request.stream():
                size += len(piece)
                if size > max_bytes:
                    raise too_large(max_bytes)
                if digest is not None:
                    digest.update(piece)
                spooled.write(piece)
        if size == 0:
            raise FormRejectedError(status.HTTP_400_BAD_REQUEST, empty)
    except ClientDisconnect:
        path.unlink(missing_ok=True)
        raise FormRejectedError(status.HTTP_400_BAD_REQUEST, "the client disconnected during the upload") from None
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return size


async def read_json_body(request: Request, max_bytes: int, not_json: str = "the body is not JSON") -> Any:
    """A JSON body, capped while read (413 over `max_bytes`); 400 saying `not_json` when it is not JSON."""
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > max_bytes:
            raise FormRejectedError(status.HTTP_413_CONTENT_TOO_LARGE, f"the JSON body is over {max_bytes} bytes")
    try:
        return json.loads(body)
    except ValueError:
        raise FormRejectedError(status.HTTP_400_BAD_REQUEST, not_json) from None


async def receive_form(
    request: Request, spool_path: Path, max_file_bytes: int, file_field: str = "file"
) -> ReceivedForm:
    """Read the whole body; the file part (named `file_field`) lands at `spool_path`, which is removed again on
    any failure."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_file_bytes + FORM_OVERHEAD_BYTES:
        raise too_large(max_file_bytes)  # rejected before reading a byte of the body
    media_type, params = parse_options_header(request.headers.get("content-type", ""))
    try:
        if media_type == b"multipart/form-data":
            boundary = params.get(b"boundary", b"")
            return await _receive_multipart(request, boundary, spool_path, max_file_bytes, file_field)
        if media_type == b"application/x-www-form-urlencoded":
            return await _receive_urlencoded(request)
    except BaseException:
        spool_path.unlink(missing_ok=True)
        raise
    raise FormRejectedError(
        status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
        "send the request as multipart/form-data (or application/x-www-form-urlencoded when giving a url)",
    )


async def _receive_urlencoded(request: Request) -> ReceivedForm:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_URLENCODED_BYTES:
            raise FormRejectedError(status.HTTP_413_CONTENT_TOO_LARGE, "the form is too large")
    form = ReceivedForm()
    for name, value in parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True):
        form.fields.setdefault(name, []).append(value)
    return form


async def _receive_multipart(
    request: Request, boundary: bytes, spool_path: Path, max_file_bytes: int, file_field: str
) -> ReceivedForm:
    if not boundary:
        raise FormRejectedError(status.HTTP_400_BAD_REQUEST, "the multipart Content-Type has no boundary")
    receiver = _MultipartReceiver(spool_path, max_file_bytes, file_field)
    parser = python_multipart.MultipartParser(boundary, receiver.callbacks())
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except FormParserError:
        raise FormRejectedError(status.HTTP_400_BAD_REQUEST, "the multipart body is malformed") from None
    except ClientDisconnect:
        raise FormRejectedError(status.HTTP_400_BAD_REQUEST, "the client disconnected during the upload") from None
    finally:
        receiver.close()
    return receiver.form


class _MultipartReceiver:
    """python-multipart callbacks: one file part to disk, up to MAX_FIELDS small text fields (and the parts
    FIELD_ALLOWANCES allows) to memory."""

    def __init__(self, spool_path: Path, max_file_bytes: int, file_field: str) -> None:
        self.spool_path = spool_path
        self.max_file_bytes = max_file_bytes
        self.file_field = file_field
        self.form = ReceivedForm()
        self._header_name = b""
        self._header_value = b""
        self._disposition = b""
        self._name = ""
        self._filename: str | None = None
        self._value = bytearray()
        self._file: IO[bytes] | None = None
        self._file_size = 0
        self._field_count = 0
        self._allowance_counts: dict[FieldAllowance, int] = {}

    def callbacks(self) -> "MultipartCallbacks":
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value_data,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
        }

    def close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()  # may raise (a full disk refuses the last buffered bytes): the caller removes the file

    def _part_begin(self) -> None:
        self._disposition = b""
        self._value = bytearray()

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _header_value_data(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        if self._header_name.lower() == b"content-disposition":
            self._disposition = self._header_value
        self._header_name = b""
        self._header_value = b""

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        if b"name" not in options:
            raise FormRejectedError(status.HTTP_400_BAD_REQUEST, "a multipart part has no name")
        self._name = options[b"name"].decode("utf-8", errors="replace")
        self._filename = options[b"filename"].decode("utf-8", errors="replace") if b"filename" in options else None
        if self._filename is None:
            self._count_text_field()
            return
        if self._name != self.file_field or self.form.file is not None or self._file is not None:
            raise FormRejectedError(
                status.HTTP_400_BAD_REQUEST, f"upload exactly one file, in the field {self.file_field!r}"
            )
        self.spool_path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.spool_path.open("wb")

    def _count_text_field(self) -> None:
        """A plain field counts towards MAX_FIELDS; a field in FIELD_ALLOWANCES towards its own `max_parts`."""
        allowance = FIELD_ALLOWANCES.get(self._name)
        if allowance is None:
            self._field_count += 1
            if self._field_count > MAX_FIELDS:
                raise FormRejectedError(status.HTTP_400_BAD_REQUEST, f"too many form fields: at most {MAX_FIELDS}")
            return
        count = self._allowance_counts[allowance] = self._allowance_counts.get(allowance, 0) + 1
        if count > allowance.max_parts:
            raise FormRejectedError(
                status.HTTP_400_BAD_REQUEST, f"{self._name}: at most {allowance.max_parts} {allowance.part}"
            )

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._file is not None:
            self._file_size += end - start
            if self._file_size > self.max_file_bytes:
                raise too_large(self.max_file_bytes)  # stop reading now, not after the rest of the body
            self._file.write(data[start:end])
            return
        self._value += data[start:end]
        allowance = FIELD_ALLOWANCES.get(self._name)
        limit = MAX_FIELD_BYTES if allowance is None else allowance.max_bytes
        if len(self._value) > limit:
            raise FormRejectedError(
                status.HTTP_413_CONTENT_TOO_LARGE, f"form field {self._name[:64]!r} is too long: at most {limit} bytes"
            )

    def _part_end(self) -> None:
        if self._file is not None:
            self.close()
            self.form.file = SpooledFile(self.spool_path, self._filename or "", self._file_size)
        else:
            self.form.fields.setdefault(self._name, []).append(self._value.decode("utf-8", errors="replace"))
