"""The contract with Ray Serve's request router (alpha in Ray 2.60): a live session's calls are routed to
the replica whose id its session id carries; a new session to any replica."""

import asyncio
from types import SimpleNamespace

from ray.serve.request_router import PendingRequest, RequestRouter

from deployments.live._routing import SessionAffinityRouter, home_of, session_id_on


def replica(unique_id: str) -> SimpleNamespace:
    return SimpleNamespace(replica_id=SimpleNamespace(unique_id=unique_id))


def request(*args: object) -> PendingRequest:
    return PendingRequest(args=list(args), kwargs={}, metadata=SimpleNamespace(), future=None)  # type: ignore[arg-type]  # the router reads neither


def choose(candidates: list, pending: PendingRequest) -> list[list]:
    router = object.__new__(SessionAffinityRouter)  # choose_replicas uses no router state
    return asyncio.run(router.choose_replicas(candidates, pending))


def test_a_sessions_calls_go_home() -> None:
    assert issubclass(SessionAffinityRouter, RequestRouter)
    replicas = [replica("a1b2c3d4"), replica("e5f6g7h8")]
    session_id = session_id_on("e5f6g7h8")
    assert home_of(request(session_id, b"pcm")) == "e5f6g7h8"
    assert choose(replicas, request(session_id, b"pcm")) == [[replicas[1]]]


def test_new_sessions_and_lost_homes_go_anywhere() -> None:
    replicas = [replica("a1b2c3d4"), replica("e5f6g7h8")]
    assert choose(replicas, request({"settings": 1})) == [replicas]
    assert choose(replicas, request(session_id_on("gone0000"))) == [replicas]
    assert home_of(request("sessions_are_not_this")) is None
