"""Writing a batch's results where readers never see half a file: each output is written under a temporary name
and renamed; a file's marker (`_done/<name>.json`, its outcome) is written last, so a marker means every output of
that file is complete. `_manifest.jsonl` is the outcomes, rewritten whole (object stores cannot append)."""

import io
import uuid
from collections.abc import Iterable, Iterator

from pyarrow import fs

from deployments.batch.inputs import filesystem
from deployments.batch.tasks import Outcome

MANIFEST = "_manifest.jsonl"
MARKERS = "_done"


class OutputFolder:
    """OUTPUT (a folder or an object-store prefix), as pyarrow writes it."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.fs, self.root = filesystem(uri)
        self.root = self.root.rstrip("/")

    def path(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def write(self, relative: str, content: str | Iterable[str]) -> None:
        """Written under a temporary name beside it, then renamed: a reader sees all of it or nothing. `content`
        may come a piece at a time (the manifest of a large run, streamed from the driver's journal)."""
        final = self.path(relative)
        parent = final.rsplit("/", 1)[0]
        self.fs.create_dir(parent, recursive=True)
        temporary = f"{parent}/.{final.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp"
        with self.fs.open_output_stream(temporary) as stream:
            for piece in [content] if isinstance(content, str) else content:
                stream.write(piece.encode("utf-8"))
        self.fs.move(temporary, final)

    def read(self, relative: str) -> str | None:
        try:
            with self.fs.open_input_stream(self.path(relative)) as stream:
                return bytes(stream.read()).decode("utf-8")
        except FileNotFoundError:
            return None

    def marker(self, name: str) -> Outcome | None:
        """The outcome of `name` if a run finished it (its outputs then all complete)."""
        text = self.read(f"{MARKERS}/{name}.json")
        return None if text is None else Outcome.model_validate_json(text)

    def finish(self, outcome: Outcome, bodies: dict[str, str]) -> Outcome:
        """The outputs (relative path -> body), then the marker that says they are complete."""
        for relative, body in bodies.items():
            self.write(relative, body)
        outcome = outcome.model_copy(update={"outputs": sorted(bodies)})
        self.write(f"{MARKERS}/{outcome.name}.json", outcome.model_dump_json())
        return outcome

    def markers(self) -> set[str]:
        """The names of every finished input (one listing, not a read per input)."""
        base = self.path(MARKERS)
        if self.fs.get_file_info(base).type != fs.FileType.Directory:
            return set()
        found = self.fs.get_file_info(fs.FileSelector(base, recursive=True))
        return {
            entry.path[len(base) + 1 : -len(".json")]
            for entry in found
            if entry.type == fs.FileType.File and entry.path.endswith(".json") and not entry.base_name.startswith(".")
        }

    def write_manifest(self, outcomes: Iterable[Outcome]) -> None:
        self.write_manifest_lines(outcome.model_dump_json(exclude_none=True) + "\n" for outcome in outcomes)

    def write_manifest_lines(self, lines: Iterable[str]) -> None:
        self.write(MANIFEST, lines)

    def iter_manifest(self) -> Iterator[Outcome]:
        """`_manifest.jsonl`'s rows, read one at a time."""
        try:
            with self.fs.open_input_stream(self.path(MANIFEST)) as stream:
                for line in io.TextIOWrapper(stream, encoding="utf-8"):
                    if line.strip():
                        yield Outcome.model_validate_json(line)
        except FileNotFoundError:
            return

    def read_manifest(self) -> list[Outcome]:
        text = self.read(MANIFEST) or ""
        return [Outcome.model_validate_json(line) for line in text.splitlines() if line.strip()]
