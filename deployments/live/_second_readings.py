"""Whether a group of utterances is read again (issue 61): one pure decision from the group and the replica's load.

A live session's final transcript is each group of its utterances read once more as a file's chunk is read
(`_final_pass.py`). Every group with streamed words is read again while the replica's sessions keep up; what
decides otherwise is here, in one function, so that each rule is in one place, tested from a table of cases, and
every decision carries its reason: counted in `stt_live_second_readings_total{outcome}` and, when a session's
groups kept their streamed words, logged once for the session when it ends.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from deployments.config import FinalPassWindow

MOST_BEHIND_S = 2.0
"""Audio that arrived longer ago than this still waiting for its streaming reading in one of the replica's
sessions (its words would come that late): it is falling behind,
and a group ending then, in any of them, keeps its streamed words rather than take the Transcriber from it.
(Summed over the sessions, four sessions each waiting on a reading in flight, as they do, read as behind.)
At 4 s, two base sessions read all their groups again (17 of 17, against 34 of 37) with finals as far from the
file's (11.1%), and four tiny.en sessions' streamed words came later (p95 2.86 / 2.82 s against 2.27 / 2.04)."""
MOST_WAITING = 4
"""Groups of the replica's sessions waiting for their second reading, beyond which the next keeps its streamed
words (each waits behind the others: its reading would come too late to be worth it)."""
MOST_WAITING_AT_END = 1
"""At the end of input the last group's words not streamed yet are left to its second reading only while no
other group of the replica waits: a client waits for the session's end, and sessions ending together would
each wait for a full encoder pass."""


class Outcome(StrEnum):
    """What became of a group: read again, or why it keeps its streamed words."""

    READ = "read"
    DISABLED = "disabled"
    """`live.final_pass: none`: the streamed words are the final transcript, by configuration."""
    CLEARED = "cleared"
    """The client dropped some of its audio (OpenAI's `input_audio_buffer.clear`)."""
    BEHIND = "behind"
    """The replica's sessions are more than `MOST_BEHIND_S` behind."""
    QUEUED = "queued"
    """`MOST_WAITING` groups of the replica already wait for their reading."""

    @property
    def skipped(self) -> bool:
        """A reading the replica could not afford (not one the client or the configuration turned off)."""
        return self in (Outcome.BEHIND, Outcome.QUEUED)


@dataclass(frozen=True)
class ReplicaLoad:
    """What the replica's sessions, which share its Transcriber, have waiting."""

    behind_s: float = 0.0
    """How long ago the oldest audio one of them has not taken in yet arrived (seconds of wall time)."""
    waiting: int = 0
    """Groups of theirs waiting for a second reading."""


def decide(window: FinalPassWindow, cleared: bool, load: ReplicaLoad) -> Outcome:
    """Whether a group with streamed words is read again (a group without any has nothing to read)."""
    if window == "none":
        return Outcome.DISABLED
    if cleared:
        return Outcome.CLEARED
    if load.behind_s > MOST_BEHIND_S:
        return Outcome.BEHIND
    if load.waiting >= MOST_WAITING:
        return Outcome.QUEUED
    return Outcome.READ


def tail_left_to_reading(window: FinalPassWindow, cleared: bool, load: ReplicaLoad) -> bool:
    """At the end of input, whether the last group's second reading also writes the words not streamed yet (one
    reading after the last frame instead of a streaming reading and then the second)."""
    return decide(window, cleared, load) is Outcome.READ and load.waiting < MOST_WAITING_AT_END


def _ignore(outcome: Outcome) -> None:
    return None


@dataclass(frozen=True)
class SecondReadings:
    """The replica's side of the decision, shared by its sessions: their load, and where outcomes are counted."""

    load: Callable[[], ReplicaLoad] = ReplicaLoad
    record: Callable[[Outcome], None] = field(default=_ignore)
