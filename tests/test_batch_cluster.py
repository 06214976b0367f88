"""`stt batch` on a Ray cluster of several nodes (Ray's `cluster_utils.Cluster`, as devkit/local_cluster.py): a
worker node lost mid-batch (its raylet and processes killed, as a lost VM) loses no file and writes none twice."""

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import ray
from ray.cluster_utils import Cluster

from deployments.batch.inputs import list_inputs
from deployments.batch.run import BatchSettings, run_batch
from deployments.batch.tasks import Outcome
from devkit.media import encode
from serve_app.batch.__main__ import engines
from serve_app.batch.plan import plan
from serve_app.batch.render import render

pytestmark = pytest.mark.slow  # a Ray cluster of its own, whose nodes it removes

ROOT = Path(__file__).resolve().parents[1]
FILES = 12
LOSE_A_NODE_AFTER_S = 20


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A head without CPUs (the driver's node) and two one-CPU workers; its Ray files apart (RAY_TMPDIR), so that no
    other Ray on this machine joins it."""
    ray_tmpdir = tempfile.mkdtemp(prefix="stt-ray-", dir="/tmp")
    previous = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = ray_tmpdir
    running = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        ray.init(address=running.address, log_to_driver=False)  # before the workers: the driver's raylet is the head's
        for _ in range(2):
            running.add_node(num_cpus=1)
        yield running
    finally:
        ray.shutdown()
        running.shutdown()
        if previous is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = previous
        shutil.rmtree(ray_tmpdir, ignore_errors=True)


def test_a_lost_worker_node_loses_no_file_and_writes_none_twice(
    cluster: Cluster, call_samples: np.ndarray, tmp_path: Path
) -> None:
    folder, output = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    for index in range(FILES):  # 10-20 s of the call each, from different starts
        start = index * 16_000
        (folder / f"part{index:02d}.wav").write_bytes(
            encode(call_samples[start : start + (10 + index) * 16_000], "wav")
        )
    configured = engines(str(ROOT / "configs" / "local.yaml"))
    configured = configured.model_copy(
        update={"whisper": configured.whisper.model_copy(update={"model": "embedded:tiny.en", "cpu_threads": 1})}
    )
    tasks = plan(list_inputs(str(folder)), ["json"], "transcribe", "en", False)
    settings = BatchSettings(
        min_actors=2, max_actors=2, files_per_batch=1, num_cpus=0.5
    )  # an engine actor and a decoding task on each worker
    outcomes: list[Outcome] = []
    batch = threading.Thread(
        target=lambda: outcomes.extend(run_batch(tasks, str(output), configured, render, settings))
    )
    batch.start()

    first_written: dict[str, int] = {}  # each marker's mtime when first seen: a file written again would change it
    lost = None
    started = time.monotonic()
    deadline = started + 600
    while batch.is_alive() and time.monotonic() < deadline:
        for marker in (output / "_done").glob("*.json") if (output / "_done").exists() else []:
            first_written.setdefault(marker.name, marker.stat().st_mtime_ns)
        # Mid-run: once a file is done, or 20 s in (the engines are up and reading by then; outputs may come in
        # blocks, so waiting for three of them raced the batch's end in one CI run).
        if lost is None and (len(first_written) >= 1 or time.monotonic() - started > LOSE_A_NODE_AFTER_S):
            lost = cluster.list_all_nodes()[1]  # a worker: each holds one of the two actors (one CPU each), mid-file
            cluster.remove_node(lost, allow_graceful=False)  # a lost VM
            cluster.add_node(num_cpus=1)  # the autoscaler's replacement
        time.sleep(0.1)
    batch.join(timeout=60)

    assert lost is not None, "no worker node was removed while the batch ran"
    assert sorted(outcome.name for outcome in outcomes) == [f"part{index:02d}" for index in range(FILES)]
    assert {outcome.status for outcome in outcomes} == {"ok"}, [o.error for o in outcomes if o.error]
    assert sorted(path.name for path in output.glob("*.json")) == [f"part{index:02d}.json" for index in range(FILES)]
    for name, mtime in first_written.items():
        assert (output / "_done" / name).stat().st_mtime_ns == mtime, f"{name} written twice"
