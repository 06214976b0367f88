"""`python -m serve_app.batch INPUT OUTPUT [options]`: see `serve_app/batch/__init__.py` and docs/batch.md."""

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from deployments.batch.inputs import iter_inputs
from deployments.batch.run import BatchSettings, run_batch
from deployments.batch.stages import Engines
from deployments.config import BatchingConfig, PipelineConfig
from serve_app.batch.plan import FORMATS, PlanError, batch_vocabulary, plan_each
from serve_app.batch.render import render
from serve_app.http_app import AppArgs


def engines(config_path: str | None) -> Engines:
    """The service's sections: from a Serve config (its application's args and the Transcriber's user_config, as
    `serve run` reads it) or from a file of the application's args alone; the defaults without one. The
    vocabulary's settings too, so that `--dictionary` finds the operator's dictionaries."""
    data: dict[str, Any] = yaml.safe_load(Path(config_path).read_text()) if config_path else {}
    batching: dict[str, Any] = {}
    if "applications" in data:
        application = data["applications"][0]
        for deployment in application.get("deployments", []):
            if deployment.get("name") == "Transcriber":
                batching = deployment.get("user_config", {})
        data = application.get("args", {})
    app = AppArgs.model_validate(data)  # a Serve config's args: the protocols' sections too
    return Engines(
        whisper=app.whisper,
        batching=BatchingConfig.model_validate(batching),
        pipeline=PipelineConfig(
            chunking=app.chunking, limits=app.limits, url_input=app.url_input, vocabulary=app.vocabulary
        ),
        diarization=app.diarization,
    )


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog="stt batch", description="Transcribe a folder, prefix or manifest on Ray Data."
    )
    parse.add_argument(
        "input", help="A folder, a glob, an object-store prefix (s3://, gs://) or a .csv/.jsonl manifest."
    )
    parse.add_argument("output", help="A folder or object-store prefix: outputs and _manifest.jsonl.")
    parse.add_argument("--response-format", action="append", choices=FORMATS, help="Repeatable; default json.")
    parse.add_argument("--task", choices=("transcribe", "diarize"), default="transcribe")
    parse.add_argument("--language", help="ISO-639-1 code; detected per file without it.")
    parse.add_argument("--word-timestamps", action="store_true", help="Words in verbose_json.")
    parse.add_argument(
        "--hotwords", action="append", help="Terms to get right (repeatable or comma-separated), as the form's field."
    )
    parse.add_argument("--dictionary", help="A named vocabulary (medical, or the config's), as the form's field.")
    parse.add_argument("--config", help="The service's Serve config (or its application's args): models, chunking.")
    parse.add_argument("--min-actors", type=int, default=1)
    parse.add_argument("--max-actors", type=int, default=1)
    parse.add_argument(
        "--files-per-batch", type=int, help="An engine call's files (6 on CPUs; 4 files' worth of chunks with GPUs)."
    )
    parse.add_argument("--batches-per-actor", type=int, default=2, help="Batches of files an actor runs at once.")
    parse.add_argument("--num-gpus", type=float, default=0.0, help="GPUs per actor.")
    parse.add_argument("--num-cpus", type=float, default=1.0, help="CPUs per engine actor.")
    parse.add_argument(
        "--decode-cpus", type=float, help="CPUs per decoding task (on CPUs: in the engine actors; with GPUs: 0.5)."
    )
    parse.add_argument("--speaker-actors", type=int, default=1, help="Most actors of the speakers' pool.")
    parse.add_argument("--speaker-cpus", type=float, default=0.5, help="CPUs per speakers' actor.")
    parse.add_argument("--retry-errors", action="store_true", help="Try again inputs that failed before.")
    return parse


def main(argv: list[str] | None = None) -> int:
    """0 when every input is ok, 1 when the manifest holds errors (`--retry-errors` tries them again), 2 when the
    run was refused (an option, a manifest row or the input's listing) before any work."""
    args = parser().parse_args(argv)
    formats = args.response_format or ["json"]
    try:
        configured = engines(args.config)
        vocabulary = batch_vocabulary(args.hotwords or [], args.dictionary, configured.pipeline.vocabulary)
    except (PlanError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    tasks = plan_each(iter_inputs(args.input), formats, args.task, args.language, args.word_timestamps, vocabulary)
    settings = BatchSettings(
        min_actors=args.min_actors,
        max_actors=max(args.max_actors, args.min_actors),
        files_per_batch=args.files_per_batch,
        batches_per_actor=args.batches_per_actor,
        num_gpus=args.num_gpus,
        num_cpus=args.num_cpus,
        decode_cpus=args.decode_cpus,
        speaker_actors=args.speaker_actors,
        speaker_cpus=args.speaker_cpus,
        retry_errors=args.retry_errors,
    )
    try:  # the listing streams: a bad row or option is found while listing, before any work starts
        outcomes = run_batch(tasks, args.output, configured, render, settings)
    except (PlanError, ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    ok = failed = 0
    for outcome in outcomes:
        ok, failed = ok + (outcome.status == "ok"), failed + (outcome.status == "error")
    print(f"{ok} ok, {failed} errors: {args.output}/_manifest.jsonl", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
