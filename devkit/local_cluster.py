"""The service on a Ray cluster of several nodes on one machine (Ray's own `ray.cluster_utils.Cluster`, as Ray
Serve's tests use): for the multi-node tests (tests/test_cluster_service.py), scripts/chaos.py's node-loss
rows, and by hand (`python -m scripts.local_cluster`).

The head node has no CPUs: it runs Ray's GCS, Serve's controller and the HTTP proxy, and no replica (as a
KubeRay head with `num-cpus: 0`). Each worker node has CPUs and one `transcriber` resource, which each
Transcriber replica asks for: replicas land on workers, at most one Transcriber per worker; the detached
actors are kept on workers too (`WORKER_RESOURCE`). The Transcriber
autoscales from zero on its queue (`autoscaled_transcriber`: backfill.yaml's shape, with delays of seconds).
Removing a worker node kills its raylet and every process on it, as a lost VM.

Ray writes the cluster's address to `<temp dir>/ray/ray_current_cluster`, which a later `serve run` (or
`ray.init()`) on this machine would join: the cluster keeps its Ray files in a temporary directory of its own
(RAY_TMPDIR, while it runs), and `stop` removes it and restores the environment, so that services started
with `serve run` before or after it start their own Ray as usual.
"""

import os
import shutil
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import ray
import yaml
from ray.cluster_utils import Cluster

from devkit.faults import kill_processes, processes_under
from devkit.local_service import ROOT, free_port, serves

TRANSCRIBER_RESOURCE = "transcriber"
WORKER_RESOURCE = "worker"
"""Every worker node has one; the detached actors (job tracker, ledger, rate limiter) ask for a sliver of it
(`storage.actor_resources`), so that they too run on workers, and a test can lose the tracker's node."""


def autoscaled_transcriber(max_replicas: int) -> dict[str, Any]:
    """backfill.yaml's Transcriber autoscaling, from zero, with delays of seconds instead of minutes: one
    replica per 2 queued requests (the test's jobs are short), down to none 5 s after the queue drains."""
    return {
        "min_replicas": 0,
        "max_replicas": max_replicas,
        "target_ongoing_requests": 2,
        "upscale_delay_s": 1,
        "downscale_delay_s": 5,
        "downscale_to_zero_delay_s": 5,
        "look_back_period_s": 2,
        "metrics_interval_s": 0.5,
    }


class LocalCluster:
    """A head and `workers` worker nodes running the service from configs/local.yaml's shape (tiny.en),
    job records and the usage ledger in `storage` (SQLite on the shared state_dir by default; a cluster
    sets `database_url`, with its password in `env`)."""

    def __init__(
        self,
        workdir: Path,
        api_keys: list[str],
        workers: int = 3,
        worker_cpus: float = 2,
        model: str = "embedded:tiny.en",
        storage: dict[str, Any] | None = None,
        jobs: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.api_keys = api_keys
        self.workers = workers
        self.worker_cpus = worker_cpus
        self.model = model
        self.storage = {
            "state_dir": str(workdir / "state"),
            "actor_resources": {WORKER_RESOURCE: 0.01},
            **(storage or {}),
        }
        self.jobs = {"max_concurrent_jobs": 6, "max_running_jobs_per_key": 200, "retry_interval_s": 1, **(jobs or {})}
        self.env = dict(env or {})
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.cluster: Cluster | None = None
        self._ray_tmpdir: str | None = None
        self._previous_ray_tmpdir: str | None = None

    def config(self) -> dict[str, Any]:
        """configs/local.yaml, with the Transcriber autoscaled from zero on the workers' `transcriber`
        resource, two ingress replicas, the proxy on the head only, and the keys file in every replica's
        environment (keys without a rate limit: tests poll many jobs)."""
        config: dict[str, Any] = yaml.safe_load((ROOT / "configs" / "local.yaml").read_text())
        config["proxy_location"] = "HeadOnly"
        config["http_options"] = {"host": "127.0.0.1", "port": self.port}
        app = config["applications"][0]
        keys_file = self.workdir / "keys.yaml"
        entries = [{"key": key, "name": "cluster", "requests_per_second": 10_000} for key in self.api_keys]
        keys_file.write_text(yaml.safe_dump({"keys": entries}))
        app["runtime_env"] = {"env_vars": {"STT_API_KEYS_FILE": str(keys_file), "PYTHONUNBUFFERED": "1", **self.env}}
        args = app["args"]
        args["whisper"] = {**args["whisper"], "model": self.model}
        args["storage"] = {**args.get("storage", {}), **self.storage}
        args["jobs"] = {**args.get("jobs", {}), **self.jobs}
        for deployment in app["deployments"]:
            if deployment["name"] == "Ingress":
                deployment["num_replicas"] = 2
            if deployment["name"] == "Transcriber":
                deployment.pop("num_replicas", None)
                deployment["autoscaling_config"] = autoscaled_transcriber(max_replicas=self.workers)
                options = deployment["ray_actor_options"]
                options["num_cpus"] = 0.5
                options["resources"] = {TRANSCRIBER_RESOURCE: 1}
        return config

    def start(self, timeout_s: float = 240) -> "LocalCluster":
        self._ray_tmpdir = tempfile.mkdtemp(prefix="stt-ray-", dir="/tmp")  # short: Ray's socket paths must fit
        self._previous_ray_tmpdir = os.environ.get("RAY_TMPDIR")
        os.environ["RAY_TMPDIR"] = self._ray_tmpdir
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        self.cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        for _ in range(self.workers):
            self.add_worker()
        ray.init(address=self.cluster.address, namespace="serve", log_to_driver=False)
        from ray.serve._private import api
        from ray.serve.config import ProxyLocation
        from ray.serve.schema import ServeDeploySchema

        config = ServeDeploySchema.model_validate(self.config())
        client = api.serve_start(http_options=config.http_options.model_dump(), proxy_location=ProxyLocation.HeadOnly)
        client.deploy_apps(config, _blocking=False)  # as `serve deploy` does
        self._wait_until_ready(timeout_s)
        return self

    def add_worker(self) -> Any:
        """A worker node (as the autoscaler adds a VM): CPUs and one Transcriber's room."""
        assert self.cluster is not None
        return self.cluster.add_node(num_cpus=self.worker_cpus, resources={TRANSCRIBER_RESOURCE: 1, WORKER_RESOURCE: 1})

    def _wait_until_ready(self, timeout_s: float) -> None:
        from ray import serve

        deadline = time.monotonic() + timeout_s
        status = None
        while time.monotonic() < deadline:
            status = serve.status().applications.get("stt")
            if status is not None and status.status == "DEPLOY_FAILED":
                break
            if serves(self.base_url, self.api_keys[0]):
                return
            time.sleep(1)
        message = status.message if status is not None else "no application"
        self.stop()
        raise RuntimeError(f"the service did not become ready on the cluster in {timeout_s} s: {message}")

    # ---- what the tests look at ----

    def worker_nodes(self) -> list[Any]:
        """The worker nodes still alive (Ray's `Node` objects, for `remove_node`)."""
        assert self.cluster is not None
        return list(self.cluster.worker_nodes)

    def replicas(self, deployment: str) -> int:
        """Running replicas of one deployment, as Serve counts them."""
        from ray import serve

        states = serve.status().applications["stt"].deployments[deployment].replica_states
        return sum(count for state, count in states.items() if state == "RUNNING")

    def nodes_of(self, class_name: str) -> set[str]:
        """The node ids holding live actors of a class: a Serve replica (`ServeReplica:stt:Transcriber`) or a
        detached actor (`JobTracker`)."""
        actors = ray._private.state.actors()  # from the GCS itself: no dashboard needed
        return {
            actor["Address"]["NodeID"]
            for actor in actors.values()
            if actor["State"] == "ALIVE" and actor["ActorClassName"] == class_name
        }

    def node_with(self, class_name: str) -> Any | None:
        """The worker node holding an actor of `class_name`, if one does."""
        held = self.nodes_of(class_name)
        return next((node for node in self.worker_nodes() if node.node_id in held), None)

    def kill(self, kind: str) -> int:
        """SIGKILL every process of one replica kind (or the tracker's actor) on whichever nodes hold them, as
        the OOM killer would: the nodes stay (Ray restarts the actor, Serve the replicas); how many processes."""
        return kill_processes(processes_under(os.getpid(), kind))

    def remove_node(self, node: Any) -> None:
        """Lose a worker node: SIGKILL its raylet and every process on it, at once, as a lost VM."""
        assert self.cluster is not None
        self.cluster.remove_node(node, allow_graceful=False)

    def stop(self) -> None:
        if self.cluster is None:
            return
        try:
            ray.shutdown()
            for node in [*self.cluster.worker_nodes, self.cluster.head_node]:  # killed, as a lost VM: a graceful
                if node is not None:  # stop of four nodes took 24 s of the loop, and nothing is read after it
                    self.cluster.remove_node(node, allow_graceful=False)
            self.cluster.shutdown()  # type: ignore[no-untyped-call]  # Ray's test utility, unannotated;  # also removes the address file under RAY_TMPDIR, which is still ours here
        finally:
            self.cluster = None
            if self._previous_ray_tmpdir is None:
                os.environ.pop("RAY_TMPDIR", None)
            else:
                os.environ["RAY_TMPDIR"] = self._previous_ray_tmpdir
            if self._ray_tmpdir is not None:
                shutil.rmtree(self._ray_tmpdir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, kind: type | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.stop()
