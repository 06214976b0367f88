"""MkDocs hook: the configuration reference, generated from the settings models at build time.

`docs/configuration/reference.md` holds the marker below; this hook replaces it with one section per settings
group of `AppArgs` (the Serve config's `applications[].args`: `AppConfig` and each protocol's section, named by
its Edge) and one for the Transcriber's `user_config` (`BatchingConfig`), each a table of setting path, type,
default and description. The descriptions are the `Field(description=...)` texts in `deployments/config/`,
`deployments/billing/pricing.py` and the protocols' `serve_app/<protocol>/config.py`: one source.
"""

import json
import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- config-reference -->"
PAGE = "configuration/reference.md"


def _import_models() -> tuple[type, type]:
    root = str(Path(__file__).resolve().parents[2])  # the checkout whose docs are built, not an installed copy
    if root not in sys.path:
        sys.path.insert(0, root)
    from deployments.config import BatchingConfig
    from serve_app.http_app import AppArgs

    return AppArgs, BatchingConfig


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return defs[schema["$ref"].rsplit("/", 1)[1]]
    if len(schema.get("allOf", [])) == 1:
        return _resolve(schema["allOf"][0], defs)
    return schema


def _type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "null":
        return "null"
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object":
        values = schema.get("additionalProperties")
        return f"map of {_type(values)}" if isinstance(values, dict) else "object"
    bounds = []
    for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in schema:
            bounds.append(f"{sign} {schema[key]}")
    for key, sign in (("minLength", "items ≥"), ("minItems", "items ≥")):
        if key in schema:
            bounds.append(f"{sign} {schema[key]}")
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


_MISSING = object()


def _default(defaults: Any, path: str) -> str:
    """The default as the model makes it (default factories included), from a dump of the default settings."""
    value = defaults
    for part in path.split("."):
        value = value.get(part, _MISSING) if isinstance(value, dict) else _MISSING
    if value is _MISSING:
        return "required"
    return f"`{_cell(json.dumps(value, ensure_ascii=False))}`"


def _paragraphs(text: str) -> str:
    """A docstring as Markdown: a blank line before a list, which Python-Markdown needs."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("- ") and lines and lines[-1].strip() and not lines[-1].startswith(("- ", "  ")):
            lines.append("")
        lines.append(line)
    return "\n".join(lines)


def _rows(prefix: str, model: dict[str, Any], defs: dict[str, Any], defaults: Any) -> list[str]:
    rows = []
    for name, field in model.get("properties", {}).items():
        path = f"{prefix}{name}"
        target = _resolve(field, defs)
        if "properties" in target:  # a nested settings model: its fields, under its path
            rows.extend(_rows(f"{path}.", target, defs, defaults))
            continue
        if "type" in field or "anyOf" in field or "enum" in field:
            target = field
        description = field.get("description") or target.get("description") or ""
        rows.append(f"| `{path}` | {_type(target)} | {_default(defaults, path)} | {_cell(description)} |")
    return rows


def _table(rows: list[str]) -> list[str]:
    return ["| setting | type | default | description |", "|---|---|---|---|", *rows, ""]


def reference() -> str:
    app_config, batching_config = _import_models()
    schema = app_config.model_json_schema()
    defs = schema.get("$defs", {})
    defaults = app_config().model_dump(mode="json")
    lines: list[str] = []
    top = {name: field for name, field in schema["properties"].items() if "properties" not in _resolve(field, defs)}
    lines += ["## Top level", "", *_table(_rows("", {"properties": top}, defs, defaults))]
    for name, field in schema["properties"].items():
        group = _resolve(field, defs)
        if "properties" not in group:
            continue
        lines += [f"## `{name}`", ""]
        if group.get("description"):
            lines += [_paragraphs(group["description"]), ""]
        lines += _table(_rows(f"{name}.", group, defs, defaults))
    batching = batching_config.model_json_schema()
    lines += ["## Transcriber `user_config`", ""]
    lines += [
        "Not under `args`: the `Transcriber` deployment's `user_config` in the same Serve config file"
        " (`deployments/config/transcriber.py:BatchingConfig`), applied live without a restart on `serve deploy`"
        " ([Transcriber batching](index.md#transcriber-batching)).",
        "",
    ]
    batching_defaults = {"user_config": batching_config().model_dump(mode="json")}
    lines += _table(_rows("user_config.", batching, batching.get("$defs", {}), batching_defaults))
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker {MARKER}")
    return markdown.replace(MARKER, reference())
