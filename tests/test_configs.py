"""Every shipped Serve config is valid: its application args pass AppConfig and its Transcriber batching
settings pass BatchingConfig, with max_ongoing_requests at least the batch size."""

from pathlib import Path

import pytest
import yaml

from deployments.config import BatchingConfig
from serve_app.config import AppConfig

CONFIGS = sorted(p for p in (Path(__file__).resolve().parents[1] / "configs").glob("*.yaml") if "kuberay" not in p.name)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: path.name)
def test_config_is_valid(path: Path) -> None:
    application = yaml.safe_load(path.read_text())["applications"][0]
    assert application["import_path"] == "serve_app.app:build_app"
    AppConfig.model_validate(application["args"])
    transcriber = next(d for d in application["deployments"] if d["name"] == "Transcriber")
    batching = BatchingConfig.model_validate(transcriber.get("user_config", {}))
    assert transcriber.get("max_ongoing_requests", 64) >= batching.max_batch_size


def test_the_three_configs_exist() -> None:
    assert {path.name for path in CONFIGS} >= {"local.yaml", "gpu.yaml", "backfill.yaml"}


@pytest.mark.parametrize("name", ["local.yaml", "gpu.yaml"])
def test_interactive_chunks_find_room_beside_the_jobs_chunks(name: str) -> None:
    """Serve queues calls beyond a replica's max_ongoing_requests in front of it, in arrival order, where
    the interactive lane cannot help: the jobs' chunks in flight must leave room for a batch of others.
    (backfill.yaml is for throughput alone.)"""
    application = yaml.safe_load((CONFIGS[0].parent / name).read_text())["applications"][0]
    config = AppConfig.model_validate(application["args"])
    transcriber = next(d for d in application["deployments"] if d["name"] == "Transcriber")
    batching = BatchingConfig.model_validate(transcriber.get("user_config", {}))
    jobs_in_flight = config.jobs.max_concurrent_jobs * config.chunking.max_chunks_in_flight
    assert transcriber["max_ongoing_requests"] >= jobs_in_flight + batching.max_batch_size
    assert batching.interactive_lane
