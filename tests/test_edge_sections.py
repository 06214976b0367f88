"""A protocol's settings are a section its `Edge` names: the application's configuration (`AppArgs`) is
`AppConfig` with every edge's section, so a new protocol with settings is its package and one line in `EDGES`
(docs/develop/adding-a-protocol.md). The toy protocol below has nothing but its own package's parts."""

import importlib.util
import pickle
from pathlib import Path

import pytest
from fastapi import APIRouter
from pydantic import Field, ValidationError

from deployments.config import BatchingConfig, StrictModel
from serve_app.common.edge import Edge
from serve_app.config import AppConfig, Section
from serve_app.deepgram.config import DEEPGRAM, DeepgramConfig
from serve_app.http_app import EDGES, AppArgs, app_args

ROOT = Path(__file__).resolve().parents[1]


class ToyConfig(StrictModel):
    """The toy protocol's settings."""

    greeting: str = Field("hello", description="What the toy protocol says first.")


TOY = Section("toy", ToyConfig, "The toy protocol: what it says.")
TOY_EDGE = Edge(APIRouter(), config=TOY)


def test_every_edges_section_is_a_field_of_the_apps_args_and_no_other_is() -> None:
    sections = [edge.config for edge in EDGES if edge.config is not None]
    assert [section.name for section in sections] == ["asr_webservice", "assemblyai", "deepgram"]
    for section in sections:
        field = AppArgs.model_fields[section.name]
        assert field.annotation is section.model and field.description == section.description
        assert field.default == section.model()  # left out of the config: the section's defaults
        assert section.name not in AppConfig.model_fields  # AppConfig itself names no protocol
    added = [name for name in AppArgs.model_fields if name not in AppConfig.model_fields]
    assert added == [section.name for section in sections]


def test_a_protocol_reads_its_section_typed() -> None:
    args = AppArgs.model_validate({"deepgram": {"models": ["nova-3"]}})
    assert DEEPGRAM.of(args).models == ["nova-3"]
    assert DEEPGRAM.of(AppArgs()) == DeepgramConfig()
    assert DEEPGRAM.of(AppConfig()) == DeepgramConfig()  # a config without the section: its defaults
    with pytest.raises(ValidationError, match=r"deepgram\.nova"):
        AppArgs.model_validate({"deepgram": {"nova": 3}})  # a section's unknown key fails the deploy, as any


def test_the_apps_args_travel_to_the_ingress_by_reference() -> None:
    """Ray pickles the configuration the builder binds to the Ingress: the model made at import time is found
    again under its name in serve_app.http_app."""
    args = AppArgs.model_validate({"assemblyai": {"upload_ttl_s": 60}})
    copy = pickle.loads(pickle.dumps(args))
    assert type(copy) is AppArgs and copy == args


def test_a_toy_protocol_with_its_own_section_is_assembled_from_its_edge_alone() -> None:
    toy_args = app_args((*EDGES, TOY_EDGE), "ToyArgs")
    args = toy_args.model_validate({"toy": {"greeting": "hi"}, "deepgram": {"models": ["nova-2"]}})
    assert TOY.of(args).greeting == "hi" and DEEPGRAM.of(args).models == ["nova-2"]
    assert TOY.of(toy_args()).greeting == "hello"
    with pytest.raises(ValidationError, match=r"toy\.volume"):
        toy_args.model_validate({"toy": {"volume": 11}})

    hook = _config_reference_hook()
    hook._import_models = lambda: (toy_args, BatchingConfig)  # the reference as it would be with the toy's line
    reference = hook.reference()
    assert "## `toy`\n\nThe toy protocol's settings.\n" in reference
    assert '| `toy.greeting` | string | `"hello"` | What the toy protocol says first. |' in reference


def test_two_sections_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two settings sections are named 'toy'"):
        app_args((TOY_EDGE, TOY_EDGE), "TwiceToyArgs")
    with pytest.raises(ValueError, match="two settings sections are named 'storage'"):
        app_args((Edge(APIRouter(), config=Section("storage", ToyConfig, "Not the storage.")),), "ClashArgs")


def _config_reference_hook():
    spec = importlib.util.spec_from_file_location("config_reference", ROOT / "docs/hooks/config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
