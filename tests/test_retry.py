"""Calls sent again when their worker was lost, and only then."""

import asyncio

import pytest
from ray import exceptions as ray_errors

from deployments.errors import AudioRejectedError
from deployments.retry import retry_on_worker_loss, worker_lost


def _lost_through_a_replica() -> Exception:
    """What a caller sees when a replica that it called lost the replica *it* called."""
    return ray_errors.RayTaskError("transcribe", "Traceback ...", ray_errors.ActorDiedError()).as_instanceof_cause()


def test_worker_loss_is_told_apart_from_failures_of_the_work() -> None:
    assert worker_lost(ray_errors.ActorDiedError())
    assert worker_lost(ray_errors.ActorUnavailableError("unreachable", None))
    assert worker_lost(_lost_through_a_replica())
    assert not worker_lost(AudioRejectedError("audio processing failed"))
    assert not worker_lost(ray_errors.RayTaskError("f", "tb", ValueError("a bug")).as_instanceof_cause())
    assert not worker_lost(RuntimeError("the model ran out of memory"))


def test_a_call_whose_worker_died_is_sent_again_until_it_answers() -> None:
    calls = []

    async def call() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise _lost_through_a_replica()
        return "text"

    assert asyncio.run(retry_on_worker_loss(call, "a chunk", attempts=3, first_delay_s=0.01)) == "text"
    assert len(calls) == 3


def test_attempts_are_bounded_and_other_errors_are_not_retried() -> None:
    calls = []

    async def dies() -> str:
        calls.append(1)
        raise ray_errors.ActorDiedError()

    with pytest.raises(ray_errors.ActorDiedError):
        asyncio.run(retry_on_worker_loss(dies, "a chunk", attempts=2, first_delay_s=0.01))
    assert len(calls) == 2

    async def rejected() -> str:
        calls.append(1)
        raise AudioRejectedError("audio processing failed")

    calls.clear()
    with pytest.raises(AudioRejectedError):
        asyncio.run(retry_on_worker_loss(rejected, "a chunk", first_delay_s=0.01))
    assert len(calls) == 1
