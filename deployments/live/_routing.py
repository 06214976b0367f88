"""Every call of a live session reaches the replica that holds it, however many LiveTranscriber
replicas there are: a Ray Serve request router (`RequestRouter`, alpha in Ray 2.60; tested in
tests/test_session_routing.py).

A session's id names its home: the replica that opened it writes its own replica id into the id
(`session_id_on`), and this router sends each call whose first argument is such an id to that replica,
whichever handle or Ingress replica makes it. Nothing is shared or stored, so it holds across handles and
through autoscaling. A new session (`open`) goes to the least busy replica. A call whose home has gone (the
replica died) goes to any replica, which answers that it does not hold the session.

One rule for callers: do not route two calls of one session at the same moment. Calls made while serving
one request share its internal request id, and a router without Serve's FIFO mixin (which would hand a
chosen replica to whichever call is oldest, breaking affinity) matches a chosen replica to its call by that
id alone, so of two calls routing together one would wait forever. The Ingress therefore waits for the
event stream to start (`SessionReady`) before it forwards audio, and makes every other call of a session (its
pushes, heartbeat, commits, close) one at a time (`serve_app/sessions/calls.py`).
"""

import uuid

from ray.serve.request_router import PendingRequest, RequestRouter, RunningReplica

PREFIX = "sess"


def session_id_on(replica_id: str) -> str:
    return f"{PREFIX}_{replica_id}_{uuid.uuid4().hex}"


def home_of(pending_request: PendingRequest | None) -> str | None:
    """The replica id inside the call's session id, if the call is for a session."""
    if pending_request is None or not pending_request.args:
        return None
    first = pending_request.args[0]
    if not isinstance(first, str) or not first.startswith(PREFIX + "_"):
        return None
    parts = first.split("_")
    return parts[1] if len(parts) == 3 else None


class SessionAffinityRouter(RequestRouter):
    async def choose_replicas(
        self, candidate_replicas: list[RunningReplica], pending_request: PendingRequest | None = None
    ) -> list[list[RunningReplica]]:
        home = home_of(pending_request)
        if pending_request is not None:  # wait between rounds when no replica took the call (no busy retry loop)
            pending_request.routing_context.should_backoff = True
        if home is not None:
            at_home = [replica for replica in candidate_replicas if replica.replica_id.unique_id == home]
            if at_home:
                return [at_home]
        return [candidate_replicas]  # the base router picks the one with the shortest queue
