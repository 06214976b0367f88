"""What the REST API's audio forms share: exactly one source (an upload or a URL), the model, and their checks;
and the OpenAPI request body of a form that `serve_app.rest.form_intake` reads itself."""

from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, WithJsonSchema, field_validator, model_validator

from deployments.redaction import RedactionOptions
from deployments.transcriber.languages import is_whisper_language
from serve_app.common.redaction import REDACT_FIELD_DOC, REDACT_MODE_DOC
from serve_app.common.upload import SpooledFile
from serve_app.rendering.response_formats import ResponseFormat

MODEL_ID = "whisper-1"
AUTO_LANGUAGE = frozenset({"auto", "automatic"})
"""Values of `language` (besides empty) that mean "detect it", as the nexara SDK sends them."""

TEXT_ONLY_FORMATS = (ResponseFormat.json, ResponseFormat.text)
"""Formats that carry no times: their requests are decoded without Whisper's timestamp tokens."""


def http_url(url: str | None) -> str | None:
    """A form's `url`, stripped, if it is an http(s) address with a host (a ValueError if not)."""
    if url is None:
        return None
    scheme, _, rest = url.strip().partition("://")
    if scheme.lower() not in ("http", "https") or not rest or rest.startswith("/"):
        raise ValueError("url must be an http:// or https:// address with a host")
    return url.strip()


def language_code(language: str | None) -> str | None:
    """A form's `language` as a Whisper language code; None (detect it) for empty, `auto` or `automatic`."""
    if language is None or language == "":
        return None
    code = language.strip().lower()
    if code in AUTO_LANGUAGE or code == "":
        return None
    if not is_whisper_language(code):
        raise ValueError(f"unsupported language {language[:16]!r}: use an ISO-639-1 code such as 'en' or 'fr'")
    return code


class AudioForm(BaseModel):
    """What every audio form shares: exactly one source (an upload or a URL), the model, and their checks. A field
    a form does not know is refused (400), so that nobody gets a 200 without a feature they asked for."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    file: Annotated[SpooledFile, WithJsonSchema({"type": "string", "format": "binary"})] | None = Field(
        None, description="The audio or video file. Give exactly one of file or url."
    )
    url: str | None = Field(None, max_length=2048, description="An http(s) URL of the audio. Give exactly one.")
    model: str = Field(MODEL_ID, max_length=128, description="One of the ids GET /v1/models lists.")
    redact: list[str] = Field(default_factory=list, alias="redact[]", max_length=32, description=REDACT_FIELD_DOC)
    redact_mode: str | None = Field(None, max_length=32, description=REDACT_MODE_DOC)
    _redaction: RedactionOptions | None = PrivateAttr(None)
    """`redact` and `redact_mode` read (serve_app/common/redaction.py), with the caller's key as the hash's scope."""

    def set_redaction(self, redaction: RedactionOptions | None) -> None:
        self._redaction = redaction

    @field_validator("url")
    @classmethod
    def http_url(cls, url: str | None) -> str | None:
        return http_url(url)

    @model_validator(mode="after")
    def one_source(self) -> Self:
        if (self.file is None) == (self.url is None):
            raise ValueError("give exactly one of 'file' (an upload) or 'url'")
        return self


def multipart_request_body(form: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI `requestBody` of a route that parses its multipart form itself (see serve_app.common.upload)."""
    schema = form.model_json_schema()
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(definitions[node["$ref"].rsplit("/", 1)[-1]])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    schema = inline(schema)
    return {"required": True, "content": {"multipart/form-data": {"schema": schema}}}
