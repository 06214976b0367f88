"""No tracked text file holds a merge conflict's markers (one reached docs/performance.md on main once: mkdocs
and the Python tools let Markdown, YAML and text files pass with them)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(rb"^(?:<{7}|\|{7}|>{7})(?: |$)", re.MULTILINE)
"""git's conflict markers: ours, the base (diff3), theirs; a lone `=======` is also a Markdown heading's rule."""


def conflicted_lines(content: bytes) -> list[int]:
    """The 1-based lines holding a conflict marker."""
    return [content.count(b"\n", 0, found.start()) + 1 for found in MARKER.finditer(content)]


def tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name.decode() for name in listed.split(b"\0") if name]


def test_the_marker_pattern_finds_a_conflict_and_nothing_else() -> None:
    conflict = b"text\n" + b"<" * 7 + b" HEAD\nours\n" + b"=" * 7 + b"\ntheirs\n" + b">" * 7 + b" wt-live\n"
    assert conflicted_lines(conflict) == [2, 6]
    assert conflicted_lines(b"Title\n" + b"=" * 7 + b"\n>>> quoted\n<<<<<<<<< longer\n") == []


def test_no_tracked_text_file_holds_conflict_markers() -> None:
    found = {}
    for path in tracked_files():
        if not path.is_file():  # deleted in the working tree, not yet committed
            continue
        content = path.read_bytes()
        if b"\0" in content[:8192]:  # binary
            continue
        if lines := conflicted_lines(content):
            found[str(path.relative_to(ROOT))] = lines
    assert not found, f"merge conflict markers (file: lines): {found}"
