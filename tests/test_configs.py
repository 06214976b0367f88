"""Every shipped Serve config is valid: its application args pass AppArgs (AppConfig with the protocols'
sections) and its Transcriber batching
settings pass BatchingConfig, with max_ongoing_requests at least the batch size. The Ray Serve LLM alternative
that gpu.yaml and the KubeRay manifest carry as a comment is valid too, for Ray Serve LLM's own LLMConfig."""

from pathlib import Path

import pytest
import yaml

from deployments.config import AnalysisConfig, BatchingConfig
from serve_app.http_app import AppArgs

CONFIGS = sorted(p for p in (Path(__file__).resolve().parents[1] / "configs").glob("*.yaml") if "kuberay" not in p.name)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: path.name)
def test_config_is_valid(path: Path) -> None:
    application = yaml.safe_load(path.read_text())["applications"][0]
    assert application["import_path"] == "serve_app.app:build_app"
    AppArgs.model_validate(application["args"])
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
    config = AppArgs.model_validate(application["args"])
    transcriber = next(d for d in application["deployments"] if d["name"] == "Transcriber")
    batching = BatchingConfig.model_validate(transcriber.get("user_config", {}))
    jobs_in_flight = config.jobs.max_concurrent_jobs * config.chunking.max_chunks_in_flight
    assert transcriber["max_ongoing_requests"] >= jobs_in_flight + batching.max_batch_size
    assert batching.interactive_lane


def ray_llm_example(text: str) -> dict:
    """The analysis section a config shows commented out, between `# ray_llm example begin` and `... end`."""
    lines = text.splitlines()
    begin = next(i for i, line in enumerate(lines) if line.strip() == "# ray_llm example begin")
    end = next(i for i, line in enumerate(lines) if line.strip() == "# ray_llm example end")
    return yaml.safe_load("\n".join(line.split("#", 1)[1].removeprefix(" ") for line in lines[begin + 1 : end]))


def ray_serve_llm_config() -> type | None:
    """Ray Serve LLM's LLMConfig, where it imports: `ray.serve.llm` needs vLLM; the class it re-exports
    unchanged needs only pyarrow (the dev extra)."""
    try:
        from ray.serve.llm import LLMConfig

        return LLMConfig
    except ImportError:
        pass
    try:
        from ray.llm._internal.serve.core.configs.llm_config import LLMConfig as InternalLLMConfig

        return InternalLLMConfig
    except ImportError:
        return None


@pytest.mark.parametrize("name", ["gpu.yaml", "kuberay-rayservice.yaml"])
def test_the_ray_llm_alternative_is_a_valid_analysis_config(name: str) -> None:
    text = (CONFIGS[0].parent / name).read_text()
    example = ray_llm_example(text)["analysis"]
    config = AnalysisConfig.model_validate(example)
    assert config.backend == "ray_llm" and config.ray_llm is not None
    assert config.context_tokens == config.ray_llm["engine_kwargs"]["max_model_len"]
    if name == "kuberay-rayservice.yaml":
        assert example == ray_llm_example((CONFIGS[0].parent / "gpu.yaml").read_text())["analysis"]
        return
    args = yaml.safe_load(text)["applications"][0]["args"]
    AppArgs.model_validate({**args, "analysis": example})  # it fits in the application's args

    llm_config_type = ray_serve_llm_config()
    if llm_config_type is None:
        pytest.skip("Ray Serve LLM's LLMConfig does not import here (it needs pyarrow: the dev extra)")
    llm_config = llm_config_type(**config.ray_llm)
    assert llm_config.model_id == config.model
