"""A lower CPU priority for a test's own Ray (tests/conftest.py's OWN_RAY_GROUP), that holds on Linux kernels
which group processes by session (autogroup, `/proc/sys/kernel/sched_autogroup_enabled`): there, a process's
nice orders only its own session's processes, and each session shares the CPU with the others as an equal
unless the session itself is given a nice (`/proc/<pid>/autogroup`)."""

import contextlib
import os
from pathlib import Path


def _autogroup(pid: int | str) -> Path:
    return Path("/proc", str(pid), "autogroup")


def session_nice(pid: int | str = "self") -> int:
    """The nice of the process's session (its autogroup); 0 where the kernel has none."""
    try:
        return int(_autogroup(pid).read_text().split()[-1])  # "/autogroup-1773 nice 0"
    except (OSError, ValueError, IndexError):
        return 0


def set_session_nice(pid: int, nice: int) -> None:
    """Give the process's session (its autogroup) this nice; nothing where the kernel has none."""
    with contextlib.suppress(OSError):
        _autogroup(pid).write_text(str(nice))


def lower_priority(nice: int) -> None:
    """This process and every process it starts from now on run at `nice`: in a session of their own at that
    nice, and each at that nice (a nice only rises: the caller cannot go back)."""
    if os.nice(0) >= nice:
        return
    if os.getsid(0) != os.getpid() and os.getpgid(0) != os.getpid():
        os.setsid()  # a session (autogroup) of its own, so that its nice leaves the other tests' sessions alone
    if os.getsid(0) == os.getpid():
        set_session_nice(os.getpid(), nice)
    os.nice(nice - os.nice(0))
