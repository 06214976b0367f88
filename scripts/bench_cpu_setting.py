"""The Transcriber's setting on a small CPU host: one two-thread batch of 8 per lane (the baseline, the
setting before) against two one-thread batches of 4 per lane at once (configs/local.yaml).

Each setting gets a freshly started local service, alternately (baseline, local, baseline, local: this
machine drifts, so neither side runs only early or only late). On each: the warm-ups of
`scripts.bench_throughput`, then the 10-minute recording (json) and 16 concurrent 10 s requests (json),
then one 10 s request alone (verbose_json, median of 3), which pays for the one-thread setting.

    .venv/bin/python -m scripts.bench_cpu_setting [--model embedded:base] [--rounds 2]
"""

import statistics
import tempfile
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from deployments.types import SAMPLE_RATE
from devkit.local_service import LocalService
from scripts.bench_throughput import (
    WARM_UP_S,
    Clip,
    long_recording,
    post_concurrently,
    reference_clips,
    short_clips,
    timed,
)

SETTINGS = {  # label: (whisper overrides, Transcriber user_config overrides)
    "one 2-thread batch of 8 per lane (baseline)": (
        {"cpu_threads": 2, "parallel_batches": 2},
        {"max_batch_size": 8, "lane_batches": 1},
    ),
    "two 1-thread batches of 4 per lane (local.yaml)": ({}, {}),
}


def measure(model: str, whisper: dict, batching: dict, recording: Clip, short: list[Clip]) -> dict[str, float]:
    with (
        tempfile.TemporaryDirectory() as workdir,
        LocalService(
            Path(workdir), ["bench"], whisper={"model": model, **whisper}, batching=batching, unthrottled=True
        ) as service,
    ):
        post_concurrently(service.base_url, [Clip("warm-up", recording.samples[: WARM_UP_S * SAMPLE_RATE])])
        post_concurrently(service.base_url, short[:8])
        long_s, _ = timed(lambda: post_concurrently(service.base_url, [recording]))
        many_s, _ = timed(lambda: post_concurrently(service.base_url, short))
        alone_s = statistics.median(
            timed(lambda: post_concurrently(service.base_url, short[:1], "verbose_json"))[0] for _ in range(3)
        )
    return {"long": long_s, "many": many_s, "alone": alone_s}


def main(model: str = "embedded:base", rounds: int = 2) -> None:
    console = Console(width=160)
    clips = reference_clips()
    recording, short = long_recording(clips, 600), short_clips(clips, 16)
    results: dict[str, list[dict[str, float]]] = {label: [] for label in SETTINGS}
    for round_index in range(rounds):
        for label, (whisper, batching) in SETTINGS.items():
            console.print(f"round {round_index + 1}: {label} ...")
            results[label].append(measure(model, whisper, batching, recording, short))
    baseline = next(iter(SETTINGS))
    table = Table(title=f"Transcriber setting on this host, {model}; each cell: round 1 | round 2 | ...")
    for column in ("setting", "10-min json s", "vs baseline", "16 concurrent s", "vs baseline", "one 10 s request s"):
        table.add_column(column)
    for label, runs in results.items():
        base = results[baseline]
        table.add_row(
            label,
            " | ".join(f"{run['long']:.1f}" for run in runs),
            " | ".join(f"{b['long'] / run['long']:.2f}x" for b, run in zip(base, runs, strict=True)),
            " | ".join(f"{run['many']:.1f}" for run in runs),
            " | ".join(f"{b['many'] / run['many']:.2f}x" for b, run in zip(base, runs, strict=True)),
            " | ".join(f"{run['alone']:.2f}" for run in runs),
        )
    console.print(table)


if __name__ == "__main__":
    typer.run(main)
