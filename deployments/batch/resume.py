"""What a rerun leaves out: inputs whose marker says they finished with every output this run asks for (a rerun
asking for another format does those again), and with `retry_errors` those whose outcome was an error are tried
again. It is asked one task at a time while the listing streams: it holds the earlier manifest's outcomes and
the names of the finished inputs, not the listing."""

from collections.abc import Iterable, Iterator

from deployments.batch.outputs import OutputFolder
from deployments.batch.tasks import FileTask, Outcome


class Resume:
    """The earlier runs' work in OUTPUT (its markers and manifest), read once."""

    def __init__(self, output: OutputFolder, retry_errors: bool) -> None:
        self.output = output
        self.retry_errors = retry_errors
        self.finished = output.markers()
        self.earlier = {outcome.name: outcome for outcome in output.iter_manifest() if outcome.name in self.finished}
        self.asked: set[str] = set()

    def kept(self, task: FileTask) -> Outcome | None:
        """The earlier outcome that stands for `task` (it is then not done again), or None: to do."""
        self.asked.add(task.name)
        outcome = self._outcome(task.name)
        if outcome is None:
            return None
        if outcome.status == "error":
            return None if self.retry_errors else outcome
        return outcome if outcome.covers(task) else None

    def rest(self) -> Iterator[Outcome]:
        """The finished inputs this run did not list (their rows stay in the manifest), once the listing is read."""
        for name in sorted(self.finished - self.asked):
            outcome = self._outcome(name)
            if outcome is not None:
                yield outcome

    def _outcome(self, name: str) -> Outcome | None:
        if name not in self.finished:
            return None
        # a run that stopped before rewriting its manifest: the marker says it
        return self.earlier.get(name) or self.output.marker(name)


def pending(
    tasks: Iterable[FileTask], output: OutputFolder, retry_errors: bool
) -> tuple[list[FileTask], list[Outcome]]:
    """The tasks still to run, and the earlier outcomes that stay (every finished input's, once, by name)."""
    resume = Resume(output, retry_errors)
    todo, kept = [], []
    for task in tasks:
        outcome = resume.kept(task)
        if outcome is None:
            todo.append(task)
        else:
            kept.append(outcome)
    return todo, sorted([*kept, *resume.rest()], key=lambda outcome: outcome.name)
