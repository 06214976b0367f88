"""What a rerun leaves out: inputs whose marker says they finished with every output this run asks for (a rerun
asking for another format does those again), and with `retry_errors` those whose outcome was an error are tried
again."""

from deployments.batch.outputs import OutputFolder
from deployments.batch.tasks import FileTask, Outcome


def pending(tasks: list[FileTask], output: OutputFolder, retry_errors: bool) -> tuple[list[FileTask], list[Outcome]]:
    """The tasks still to run, and the manifest's earlier outcomes that stay (every finished input's, once)."""
    finished = output.markers()
    earlier = {outcome.name: outcome for outcome in output.read_manifest()}
    for name in finished - set(earlier):  # a run that stopped before rewriting its manifest: the markers say it
        marker = output.marker(name)
        if marker is not None:
            earlier[name] = marker
    asked = {task.name: task for task in tasks}

    def done(name: str) -> bool:
        outcome = earlier.get(name)
        if outcome is None or name not in asked:
            return True
        if outcome.status == "error":
            return not retry_errors
        return outcome.covers(asked[name])

    finished = {name for name in finished if done(name)}
    kept = [earlier[name] for name in sorted(finished) if name in earlier]
    return [task for task in tasks if task.name not in finished], kept
