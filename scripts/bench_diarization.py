"""Diarization quality and speed of the embedded pipeline, with pyannote.metrics.

DER is scored the strict way: no forgiveness collar, overlapped speech scored, twice per file: from the
Diarizer's own turns, and from the `segments` a user gets back for task=diarize (the same code as the
service: Whisper base words, then `deployments.diarization.words.diarized_transcription`).

- `sample.wav` (30 s, two speakers, shipped with pyannote.audio with `sample.rttm`).
- `stereo_diarization.wav` (../shared, one speaker per channel): the pipeline hears the mono mix-down;
  the reference is each channel's speech (Silero VAD), labelled by channel.
- `dev00.wav`, `dev01.wav` (../shared): 30 s AMI meeting excerpts with `ami_dev.rttm`, scored on 0-30 s.

Each file runs three times: the default setting (speaker count found by clustering), the
`diarization_setting` preset meant for it (`telephonic` for the calls, `meeting` for AMI), and with
`num_speakers` given. Totals are printed over all files and over the AMI excerpts alone. `--sweep`
instead compares the speaker encoders over clustering thresholds (total turns DER and how many files get
the right speaker count), and `--resegmentation-sweep` the resegmentation's window and step (and none):
the evidence for the defaults.

    .venv/bin/python -m scripts.bench_diarization [--embedding resemblyzer] [--threshold 0.7]
        [--no-resegmentation] [--sweep | --resegmentation-sweep]

`--sweep --no-resegmentation` reproduces the encoder table measured before resegmentation.
"""

import argparse
import time
from dataclasses import dataclass

import av
import numpy as np
from faster_whisper.vad import VadOptions, get_speech_timestamps
from pyannote.core import Annotation, Segment
from pyannote.database.util import load_rttm
from pyannote.metrics.diarization import DiarizationErrorRate

from deployments.config import DiarizationConfig, ResegmentationConfig, WhisperModelConfig
from deployments.diarization._pyannote import CLUSTERING_THRESHOLDS, DiarizationPipeline
from deployments.diarization.words import diarized_transcription
from deployments.files._assembly import join_chunks
from deployments.files._chunking import SpeechChunker, chunk_audio
from deployments.files.decoding import decode_audio
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE, ChunkOptions, Diarization, DiarizationOptions, DiarizationSetting, Transcript
from devkit.diarization_references import Case, reference_cases, speakers_in
from devkit.media import SHARED_AUDIO, pyannote_sample


def strict_der() -> DiarizationErrorRate:
    """Accumulates over files: abs(metric) is the total DER."""
    return DiarizationErrorRate(collar=0.0, skip_overlap=False)


class Transcriber:
    """Words with times, as the service gets them (Whisper base, VAD chunks)."""

    def __init__(self) -> None:
        self.engine = CTranslate2Engine(WhisperModelConfig(model="embedded:base"))
        self.chunker = SpeechChunker()

    def __call__(self, samples: np.ndarray) -> Transcript:
        chunk_pieces = self.chunker.chunks(samples)
        if not chunk_pieces:  # no speech the VAD hears: nothing to transcribe, as in the service
            return Transcript(language="en", duration=len(samples) / SAMPLE_RATE, segments=[])
        options = ChunkOptions(language="en", word_timestamps=True)
        chunks = self.engine.transcribe_batch([chunk_audio(samples, pieces) for pieces in chunk_pieces], options)
        return join_chunks(chunks, chunk_pieces, len(samples) / SAMPLE_RATE, "en")


def annotation(turns) -> Annotation:  # noqa: ANN001
    result = Annotation()
    for index, turn in enumerate(turns):
        if turn.end > turn.start and turn.speaker:
            result[Segment(turn.start, turn.end), index] = turn.speaker
    return result


def sample_case() -> Case:
    path = pyannote_sample()
    reference = next(iter(load_rttm(str(path.with_suffix(".rttm"))).values()))
    return Case("sample.wav", decode_audio(path).samples, reference, DiarizationSetting.telephonic)


def channels(path: str) -> np.ndarray:
    """(channels, samples) float32 at 16 kHz."""
    with av.open(path) as container:
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="fltp", layout=stream.layout.name, rate=SAMPLE_RATE)
        pieces = [out.to_ndarray() for frame in container.decode(stream) for out in resampler.resample(frame)]
    return np.concatenate(pieces, axis=1)


def speech_of(samples: np.ndarray) -> list[tuple[float, float]]:
    options = VadOptions(min_silence_duration_ms=300, speech_pad_ms=0)
    return [(t["start"] / SAMPLE_RATE, t["end"] / SAMPLE_RATE) for t in get_speech_timestamps(samples, options)]


def stereo_case() -> Case | None:
    path = SHARED_AUDIO / "stereo_diarization.wav"
    if not path.exists():
        return None
    stereo = channels(str(path))
    reference = Annotation()
    for channel, samples in enumerate(stereo):
        for start, end in speech_of(np.ascontiguousarray(samples)):
            reference[Segment(start, end), f"{channel}"] = f"channel {channel}"
    return Case(
        "stereo_diarization.wav (mono mix)",
        stereo.mean(axis=0).astype(np.float32),
        reference,
        DiarizationSetting.telephonic,
    )


SWEEP_THRESHOLDS = [0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 1.0]


@dataclass
class TurnsScore:
    """The turns' DER of one pipeline setting over the cases: in total, over the AMI excerpts, per file."""

    total: float
    ami_total: float
    right_counts: int
    cells: list[str]


def score_turns(pipeline: DiarizationPipeline, cases: list[Case]) -> TurnsScore:
    every, ami, right, cells = strict_der(), strict_der(), 0, []
    for case in cases:
        turns = annotation(pipeline.diarize(case.samples, DiarizationOptions()).turns)
        der = every(case.reference, turns, uem=case.uem)
        if case.uem is not None:  # the AMI excerpts
            ami(case.reference, turns, uem=case.uem)
        found, count = len(turns.labels()), len(case.reference.labels())
        right += found == count
        cells.append(f"{der * 100:.1f} ({found}/{count})")
    return TurnsScore(abs(every), abs(ami), right, cells)


def sweep(cases: list[Case], resegmentation: ResegmentationConfig) -> None:
    """Both speaker encoders over clustering thresholds: total turns DER and right speaker counts."""
    print(f"{'embedding':12s} {'threshold':>9s} {'turns DER %':>11s} {'right count':>11s}  per file DER % (found/ref)")
    for embedding in ("campplus", "resemblyzer"):
        pipeline = DiarizationPipeline(DiarizationConfig(embedding=embedding, resegmentation=resegmentation))
        for threshold in SWEEP_THRESHOLDS:
            pipeline.set_threshold(threshold)
            score = score_turns(pipeline, cases)
            print(
                f"{embedding:12s} {threshold:9.2f} {score.total * 100:11.1f} {score.right_counts:>5d} of {len(cases)}  "
                + ", ".join(score.cells)
            )


RESEGMENTATION_SWEEP = [(1.0, 0.25), (1.0, 0.5), (1.5, 0.25), (1.5, 0.5), (2.0, 0.25), (2.0, 0.5), (3.0, 1.0)]


def resegmentation_sweep(cases: list[Case]) -> None:
    """Turns DER without resegmentation, then over its window and step: all files and the AMI excerpts."""
    print(f"{'resegmentation':22s} {'turns DER %':>11s} {'AMI turns DER %':>15s}  per file DER % (found/ref)")
    settings = [("none", ResegmentationConfig(enabled=False))] + [
        (f"window {window} s, step {step} s", ResegmentationConfig(window_s=window, step_s=step))
        for window, step in RESEGMENTATION_SWEEP
    ]
    pipeline = DiarizationPipeline(DiarizationConfig())  # loaded once; only its resegmentation changes
    for name, resegmentation in settings:
        pipeline.resegmentation = resegmentation
        score = score_turns(pipeline, cases)
        print(f"{name:22s} {score.total * 100:11.1f} {score.ami_total * 100:15.1f}  " + ", ".join(score.cells))


@dataclass
class Scored:
    """One diarization of one file: DER of its turns and segments, the speakers found, the seconds it took."""

    turns: float
    segments: float
    found: int
    seconds: float
    components: dict[str, float]


class Scorer:
    """Runs pipelines on the cases and scores them, with one Whisper transcription per file shared by all."""

    def __init__(self, cases: list[Case]) -> None:
        self.cases = cases
        transcribe = Transcriber()
        self.words = {case.name: transcribe(case.samples) for case in cases}
        self.totals: dict[str, tuple[DiarizationErrorRate, DiarizationErrorRate]] = {}

    def score(self, run: str, pipeline: DiarizationPipeline, case: Case, options: DiarizationOptions) -> Scored:
        started = time.perf_counter()
        diarization: Diarization = pipeline.diarize(case.samples, options)
        seconds = time.perf_counter() - started
        segments = diarized_transcription(self.words[case.name], diarization).segments
        turns_total, segments_total = self.totals.setdefault(run, (strict_der(), strict_der()))
        turns = turns_total(case.reference, annotation(diarization.turns), uem=case.uem)
        detailed = segments_total(case.reference, annotation(segments), uem=case.uem, detailed=True)
        found = len({turn.speaker for turn in diarization.turns})
        return Scored(turns, detailed["diarization error rate"], found, seconds, detailed)

    def total(self, run: str) -> tuple[float, float]:
        """(turns, segments) DER over every file scored in `run`."""
        turns_total, segments_total = self.totals[run]
        return abs(turns_total), abs(segments_total)


def percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def table(cases: list[Case], config: DiarizationConfig, baseline: DiarizationConfig | None, settings: bool) -> None:
    """The issue's table: per file DER of segments and turns, speakers found / in the reference, and segments
    DER with `num_speakers` given; the total; the segments' errors split into missed speech, false alarm and
    confusion; the real-time factor. With `baseline`, the same for that configuration, timed in the same run
    (its runs alternate with the new ones, file by file)."""
    scorer = Scorer(cases)
    pipelines = {"": DiarizationPipeline(config)}
    if baseline is not None:
        pipelines["baseline "] = DiarizationPipeline(baseline)
    for pipeline in pipelines.values():
        pipeline.diarize(cases[0].samples, DiarizationOptions())  # warm-up
    rows: dict[str, list[str]] = {prefix: [] for prefix in pipelines}
    breakdown: list[str] = []
    seconds = dict.fromkeys(pipelines, 0.0)
    right = dict.fromkeys(pipelines, 0)
    audio_seconds = sum(case.samples.size for case in cases) / SAMPLE_RATE
    setting_rows: list[str] = []
    for case in cases:
        count = speakers_in(case)
        for prefix, pipeline in pipelines.items():
            default = scorer.score(prefix + "default", pipeline, case, DiarizationOptions())
            given = scorer.score(prefix + "num_speakers", pipeline, case, DiarizationOptions(num_speakers=count))
            seconds[prefix] += default.seconds
            right[prefix] += default.found == count
            rows[prefix].append(
                f"| {case.name} | {percent(default.segments)} | {percent(default.turns)} | {default.found}/{count} "
                f"| {percent(given.segments)} ({given.found}) |"
            )
            if not prefix:
                parts = default.components
                speech = max(parts["total"], 1e-9)
                breakdown.append(
                    f"| {case.name} | {speech:.1f} s | {percent(parts['missed detection'] / speech)} "
                    f"| {percent(parts['false alarm'] / speech)} | {percent(parts['confusion'] / speech)} "
                    f"| {percent(default.segments)} |"
                )
        if settings:
            cells = []
            for setting in DiarizationSetting:
                scored = scorer.score(f"setting {setting}", pipelines[""], case, DiarizationOptions(setting=setting))
                cells.append(f"{percent(scored.segments)} ({scored.found})")
            setting_rows.append(f"| {case.name} ({case.setting}) | " + " | ".join(cells) + " |")

    threshold = config.clustering_threshold or CLUSTERING_THRESHOLDS[config.embedding]
    print(f"embedded pipeline, {config.embedding} embeddings, clustering threshold {threshold}; strict DER"
          " (no collar, overlap scored, the UEM's region); segments from Whisper base words\n")  # fmt: skip
    for prefix in pipelines:
        print(f"{prefix or 'this configuration'}:\n")
        print("| file | DER segments | DER turns | speakers found / in reference "
              "| DER segments with `num_speakers` = reference count (found) |")  # fmt: skip
        print("|---|---|---|---|---|")
        print("\n".join(rows[prefix]))
        turns, segments = scorer.total(prefix + "default")
        _, given_segments = scorer.total(prefix + "num_speakers")
        print(f"| **total** | **{percent(segments)}** | **{percent(turns)}** | right on {right[prefix]} of"
              f" {len(cases)} | **{percent(given_segments)}** |\n")  # fmt: skip
    print("segments' errors (default setting), as shares of the reference speech:\n")
    print("| file | reference speech | missed | false alarm | confusion | DER |\n|---|---|---|---|---|---|")
    print("\n".join(breakdown) + "\n")
    if settings:
        print("segments DER (speakers found) per `diarization_setting`:\n")
        print("| file (preset meant for it) | " + " | ".join(DiarizationSetting) + " |\n|---|---|---|---|")
        print("\n".join(setting_rows))
        print("| **total** | " + " | ".join(percent(scorer.total(f"setting {s}")[1]) for s in DiarizationSetting))
        print()
    for prefix in pipelines:
        rtf = seconds[prefix] / audio_seconds
        print(f"{prefix or 'this configuration'}: diarization real-time factor {rtf:.3f}"
              f" ({seconds[prefix]:.1f} s for {audio_seconds:.0f} s of audio, default setting)")  # fmt: skip


BASELINE = DiarizationConfig(clustering="pyannote", speech_bias=0.0)
"""The configuration before issue 35 (pyannote's clustering, the segmentation's own speech decision), for
`--baseline`: scored and timed beside the new one in the same run. Words go to speakers the new way in both."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedding", choices=["campplus", "resemblyzer"], default="campplus")
    parser.add_argument("--threshold", type=float, default=None, help="clustering threshold (default: measured)")
    parser.add_argument("--no-resegmentation", action="store_true", help="the pipeline's turns as they come")
    parser.add_argument("--baseline", action="store_true", help="also score and time the configuration before")
    parser.add_argument("--settings", action="store_true", help="also score each diarization_setting preset")
    parser.add_argument("--stereo", action="store_true", help="add the stereo file (reference: each channel's VAD)")
    parser.add_argument("--sweep", action="store_true", help="compare the encoders over clustering thresholds")
    parser.add_argument("--resegmentation-sweep", action="store_true", help="compare resegmentation windows")
    args = parser.parse_args()
    cases = reference_cases() or [sample_case()]
    if args.stereo:
        cases += list(filter(None, [stereo_case()]))
    resegmentation = ResegmentationConfig(enabled=not args.no_resegmentation)
    if args.sweep:
        sweep(cases, resegmentation)
    elif args.resegmentation_sweep:
        resegmentation_sweep(cases)
    else:
        config = DiarizationConfig(
            embedding=args.embedding, clustering_threshold=args.threshold, resegmentation=resegmentation
        )
        table(cases, config, BASELINE if args.baseline else None, args.settings)


if __name__ == "__main__":
    main()
