"""The KubeRay RayJob of `stt batch`, checked without a cluster (as tests/test_cluster_files.py checks the
RayService): its entrypoint parses as the command's, reads the service's GPU config, and its GPU pods fit the actors
it asks for."""

import shlex
from pathlib import Path

import yaml

from serve_app.batch.__main__ import engines, parser

ROOT = Path(__file__).resolve().parents[1]
IMAGE_ROOT = "/home/ray/stt-service"  # the Dockerfile's WORKDIR


def _job() -> dict:
    return yaml.safe_load((ROOT / "configs" / "kuberay-rayjob.yaml").read_text())


def test_the_entrypoint_is_the_batch_command_on_the_services_gpu_config() -> None:
    job = _job()
    assert job["kind"] == "RayJob" and job["spec"]["shutdownAfterJobFinishes"] is True
    command = shlex.split(job["spec"]["entrypoint"])
    assert command[:3] == ["python", "-m", "serve_app.batch"]
    args = parser().parse_args(command[3:])
    assert args.input.startswith("s3://") and args.output.startswith("s3://")
    assert args.config.startswith(IMAGE_ROOT)
    configured = engines(str(ROOT / Path(args.config).relative_to(IMAGE_ROOT)))
    assert configured.whisper.device == "cuda" and configured.batching.max_batch_size == 32
    assert args.files_per_batch >= configured.batching.max_batch_size  # an actor's files fill the engine's batches


def test_the_gpu_group_fits_the_actor_pool() -> None:
    spec = _job()["spec"]
    args = parser().parse_args(shlex.split(spec["entrypoint"])[3:])
    cluster = spec["rayClusterSpec"]
    assert cluster["rayVersion"] == __import__("ray").__version__
    assert cluster["enableInTreeAutoscaling"] is True
    gpu = next(group for group in cluster["workerGroupSpecs"] if group["groupName"] == "gpu")
    resources = gpu["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert resources["nvidia.com/gpu"] == args.num_gpus == 1
    assert float(resources["cpu"]) >= args.num_cpus
    assert gpu["maxReplicas"] >= args.max_actors >= args.min_actors
    assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"  # no actor lands on the head
