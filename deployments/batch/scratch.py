"""Where a batch process spools inputs and decoded copies: `<tmp>/stt-batch-<pid>-<random>/`, one folder per
process with a folder per file inside it that is removed when the file is done. A process killed outright (an
actor on a lost node, a task Ray Data cancelled) cannot remove its own: the next batch process on that node finds
the folders whose process is gone and removes them."""

import atexit
import os
import shutil
import tempfile
import time
from pathlib import Path

PREFIX = "stt-batch-"
UNOWNED_AFTER_S = 3600.0  # a folder without a pid in its name (written before pids were) is left this long

_mine: Path | None = None


def process_scratch() -> Path:
    """This process's scratch folder (made on first use, after sweeping those of processes that are gone)."""
    global _mine
    if _mine is None or not _mine.is_dir():
        sweep()
        _mine = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        atexit.register(shutil.rmtree, _mine, True)
    return _mine


def file_scratch() -> tempfile.TemporaryDirectory[str]:
    """A folder for one file's spooled input and decoded copy, removed when its `with` ends."""
    return tempfile.TemporaryDirectory(dir=process_scratch())


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the scratch folders of processes that no longer run on this machine; the ones removed."""
    removed = []
    for folder in (root or Path(tempfile.gettempdir())).glob(f"{PREFIX}*"):
        owner = folder.name[len(PREFIX) :].split("-", 1)[0]
        gone = not _alive(int(owner)) if owner.isdigit() else time.time() - folder.stat().st_mtime > UNOWNED_AFTER_S
        if gone and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
