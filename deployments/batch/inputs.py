"""What a batch transcribes: a local folder or glob, an object-store prefix, or a manifest (CSV or JSONL with a
`path` or `url` per row and optional `language`, `task`, `num_speakers`, `id`)."""

import csv
import glob
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from pyarrow import fs

MANIFEST_SUFFIXES = (".csv", ".jsonl")
ROW_FIELDS = frozenset({"path", "url", "id", "language", "task", "num_speakers"})


@dataclass(frozen=True)
class Listed:
    """One input found: its source, its output name and the per-row choices a manifest gave."""

    source: str
    name: str
    overrides: dict[str, Any] = field(default_factory=dict)


def filesystem(uri: str) -> tuple[fs.FileSystem, str]:
    """pyarrow's filesystem for a URI or a local path (made absolute)."""
    if "://" not in uri:
        uri = os.path.abspath(uri)
    found: tuple[fs.FileSystem, str] = fs.FileSystem.from_uri(uri)
    return found


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def _hidden(relative: str) -> bool:
    return any(part.startswith((".", "_")) for part in PurePosixPath(relative).parts)


def _unsafe_name(name: str) -> str | None:
    """Why an output name would not stay a file of its own inside OUTPUT, or None."""
    parts = name.split("/")
    if "\\" in name or name.startswith("/") or any(part in ("", ".", "..") for part in parts):
        return "must be a relative name inside OUTPUT: no '..', no empty folder, no leading '/' or '\\'"
    if any(part.startswith((".", "_")) for part in parts):
        return "must not start a name with '.' or '_' (OUTPUT's own _manifest.jsonl and markers use them)"
    if any(ord(ch) < 32 for ch in name):
        return "must not hold control characters"
    return None


def _stem(relative: str) -> str:
    path = PurePosixPath(relative)
    return str(path.with_suffix("")) if path.suffix else str(path)


def list_inputs(source: str) -> list[Listed]:
    """Every input of `source` at once (for small sources and tests; the batch streams `iter_inputs`)."""
    return list(iter_inputs(source))


def iter_inputs(source: str) -> Iterator[Listed]:
    """Every input of `source`, in a stable order, one at a time: a local folder is walked a directory at a time
    and a manifest read a row at a time, so that 100,000 inputs are never a list here (an object-store prefix is
    pyarrow's listing: its entries, not ours). Files and folders whose name starts with `.` or `_` are left out
    (an OUTPUT inside INPUT, with its `_manifest.jsonl` and markers, is then not read as input)."""
    if source.endswith(MANIFEST_SUFFIXES) and not any(ch in source for ch in "*?["):
        yield from read_manifest(source)
        return
    if "://" not in source and any(ch in source for ch in "*?["):
        found = sorted(path for path in glob.glob(source, recursive=True) if os.path.isfile(path))
        root = os.path.commonpath([os.path.dirname(os.path.abspath(path)) for path in found]) if found else ""
        for path in found:
            relative = os.path.relpath(os.path.abspath(path), root)
            if not _hidden(relative):
                yield Listed(os.path.abspath(path), _stem(relative))
        return
    filesystem_, root = filesystem(source)
    info = filesystem_.get_file_info(root)
    if info.type == fs.FileType.File:
        yield Listed(_uri(source, root), _stem(PurePosixPath(root).name))
        return
    if info.type != fs.FileType.Directory:
        raise FileNotFoundError(f"{source}: no such file, folder or prefix")
    if "://" not in source:
        yield from _walk(root)
        return
    entries = filesystem_.get_file_info(fs.FileSelector(root, recursive=True))
    entries.sort(key=lambda entry: entry.path)
    for entry in entries:
        relative = entry.path[len(root.rstrip("/")) + 1 :]
        if entry.type == fs.FileType.File and not _hidden(relative):
            yield Listed(_uri(source, entry.path), _stem(relative))


def _walk(root: str) -> Iterator[Listed]:
    """A local folder's files, a directory at a time, in order of their relative paths."""
    for directory, folders, files in os.walk(root):
        folders[:] = sorted(folder for folder in folders if not folder.startswith((".", "_")))
        relative_dir = os.path.relpath(directory, root)
        for name in sorted(files):
            relative = name if relative_dir == "." else f"{relative_dir}/{name}"
            if not _hidden(relative):
                yield Listed(os.path.join(directory, name), _stem(relative))


def _uri(source: str, path: str) -> str:
    """A listed path as a URI that `filesystem` reads back: the source's scheme kept."""
    if "://" not in source:
        return path
    scheme, _ = source.split("://", 1)
    return f"{scheme}://{path}"


def read_manifest(manifest: str) -> Iterator[Listed]:
    """A manifest's rows, read one at a time: relative paths are read beside the manifest; a row's `id` (or its
    file's stem) names its outputs; unknown columns are an error naming them (never ignored)."""
    filesystem_, path = filesystem(manifest)
    base = manifest.rsplit("/", 1)[0] if "/" in manifest else "."
    names: set[str] = set()
    with filesystem_.open_input_stream(path) as stream:
        lines = io.TextIOWrapper(stream, encoding="utf-8", newline="")
        rows: Iterator[dict[str, Any]] = (
            (dict(row) for row in csv.DictReader(lines))
            if manifest.endswith(".csv")
            else (json.loads(line) for line in lines if line.strip())
        )
        for number, row in enumerate(rows, start=1):
            yield _manifest_row(manifest, base, number, row, names)


def _manifest_row(manifest: str, base: str, number: int, row: dict[str, Any], names: set[str]) -> Listed:
    unknown = set(row) - ROW_FIELDS
    if unknown:
        raise ValueError(f"{manifest} row {number}: unknown columns {sorted(unknown)} (known: {sorted(ROW_FIELDS)})")
    source = row.get("url") or row.get("path")
    if not source:
        raise ValueError(f"{manifest} row {number}: neither `path` nor `url`")
    if not is_url(source) and "://" not in source and not os.path.isabs(source):
        source = f"{base}/{source}" if "://" in base else os.path.abspath(os.path.join(base, source))
    name = str(row.get("id") or _stem(PurePosixPath(source.split("?")[0]).name))
    if (reason := _unsafe_name(name)) is not None:
        raise ValueError(f"{manifest} row {number}: output name {name[:80]!r} (its `id` or file name) {reason}")
    if name in names:
        raise ValueError(f"{manifest} row {number}: output name {name!r} repeats: give rows an `id`")
    names.add(name)
    overrides = {key: row[key] for key in ("language", "task", "num_speakers") if row.get(key) not in (None, "")}
    return Listed(source, name, overrides)
