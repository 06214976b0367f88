"""The documentation's generated configuration reference describes every setting (the descriptions live in the
settings models: `Field(description=...)`), and CI runs exactly the README's test command."""

import importlib.util
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from deployments.config import BatchingConfig
from serve_app.http_app import AppArgs

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def load_hook():
    spec = importlib.util.spec_from_file_location("config_reference", ROOT / "docs/hooks/config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def leaf_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    paths = set()
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            paths |= leaf_paths(kind, f"{prefix}{name}.")
        else:
            paths.add(f"{prefix}{name}")
    return paths


def test_the_reference_describes_every_setting() -> None:
    rows = [line for line in load_hook().reference().splitlines() if line.startswith("| `")]
    described = {}
    for row in rows:
        match = re.match(r"\| `([^`]+)` \|", row)
        assert match is not None
        path = match.group(1)
        described[path] = row.rstrip(" |").rsplit(" | ", 1)[1].strip()
    expected = leaf_paths(AppArgs) | {f"user_config.{path}" for path in leaf_paths(BatchingConfig)}
    assert set(described) == expected
    assert [path for path, text in described.items() if not text] == []


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    test_section = readme.split("## Test", 1)[1]
    found = re.search(r"```bash\n(.+?)\n```", test_section, re.S)
    assert found is not None
    command = found.group(1)
    ci_lines = (ROOT / ".ci/run").read_text().splitlines()
    assert ci_lines[-1] == command
    assert command.endswith("&& .venv/bin/mkdocs build --strict")
