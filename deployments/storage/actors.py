"""The cluster's named, detached actors (job tracker, usage ledger, rate limiter): one of each per cluster,
created by the first ingress replica and found by the others, restarted by Ray when they die."""

from typing import Any

import ray
from ray.actor import ActorProxy

from deployments.config import StorageConfig


def get_or_create(cls: type, name: str, storage: StorageConfig, *args: object) -> ActorProxy[Any]:
    """The actor `name` in the storage's namespace, created from `cls(*args)` if it does not exist yet: every
    detached actor is made here, with one set of options. Ray restarts it when it dies, and calls are retried
    across a restart, so each actor's calls are safe to repeat (charges carry ids; the rest is state or
    reads). It asks for no CPU (its work is bookkeeping), only the resources that pin it to chosen nodes, if any.

    Actor handles are typed `ActorProxy[Any]` (Ray's annotation for what `.remote()` on an actor class returns):
    a bare `ActorHandle` types every method as `Never`, and mypy would skip the code after each call as unreachable.
    """
    return (
        ray.remote(cls)
        .options(
            name=name,
            namespace=storage.actor_namespace,
            lifetime="detached",
            get_if_exists=True,
            max_restarts=-1,
            max_task_retries=-1,
            num_cpus=0,
            resources=dict(storage.actor_resources),
        )
        .remote(*args)
    )
