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
from pyannote.core import Annotation, Segment, Timeline
from pyannote.database.util import load_rttm
from pyannote.metrics.diarization import DiarizationErrorRate

from deployments.config import DiarizationConfig, ResegmentationConfig, WhisperModelConfig
from deployments.diarization._pyannote import CLUSTERING_THRESHOLDS, DiarizationPipeline
from deployments.diarization.words import diarized_transcription
from deployments.files._assembly import join_chunks
from deployments.files._chunking import SpeechChunker, chunk_audio
from deployments.files._decode import decode_audio
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import SAMPLE_RATE, ChunkOptions, Diarization, DiarizationOptions, DiarizationSetting, Transcript
from tests.media import SHARED_AUDIO, pyannote_sample


@dataclass
class Case:
    name: str
    samples: np.ndarray
    reference: Annotation
    setting: DiarizationSetting
    uem: Timeline | None = None


def strict_der() -> DiarizationErrorRate:
    """Accumulates over files: abs(metric) is the total DER."""
    return DiarizationErrorRate(collar=0.0, skip_overlap=False)


def ami_cases() -> list[Case]:
    rttm = SHARED_AUDIO / "ami_dev.rttm"
    if not rttm.exists():
        return []
    references = load_rttm(str(rttm))
    return [
        Case(
            f"{name}.wav (AMI)",
            decode_audio(SHARED_AUDIO / f"{name}.wav").samples,
            references[name],
            DiarizationSetting.meeting,
            Timeline([Segment(0, 30)]),
        )  # fmt: skip
        for name in sorted(references)
        if (SHARED_AUDIO / f"{name}.wav").exists()
    ]


class Transcriber:
    """Words with times, as the service gets them (Whisper base, VAD chunks)."""

    def __init__(self) -> None:
        self.engine = CTranslate2Engine(WhisperModelConfig(model="embedded:base"))
        self.chunker = SpeechChunker()

    def __call__(self, samples: np.ndarray) -> Transcript:
        chunk_pieces = self.chunker.chunks(samples)
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


def table(cases: list[Case], config: DiarizationConfig) -> None:
    pipeline = DiarizationPipeline(config)
    transcribe = Transcriber()
    words = {case.name: transcribe(case.samples) for case in cases}
    pipeline.diarize(cases[0].samples, DiarizationOptions())  # warm-up

    threshold = config.clustering_threshold or CLUSTERING_THRESHOLDS[config.embedding]
    print(f"embedded pipeline, {config.embedding} embeddings, clustering threshold {threshold};"
          " strict DER (no collar, overlap scored)")  # fmt: skip
    print(f"{'audio':52s} {'turns DER %':>11s} {'segments DER %':>14s} {'speakers (ref)':>15s} {'RTF':>6s}")
    runs = ["", ", setting", ", num_speakers"]
    totals = {run: (strict_der(), strict_der()) for run in runs}
    ami_totals = {run: (strict_der(), strict_der()) for run in runs}
    for case in cases:
        count = len(case.reference.labels())
        options = [
            DiarizationOptions(),
            DiarizationOptions(setting=case.setting),
            DiarizationOptions(num_speakers=count),
        ]
        for run, option in zip(runs, options, strict=True):
            started = time.perf_counter()
            diarization: Diarization = pipeline.diarize(case.samples, option)
            seconds = time.perf_counter() - started
            segments = diarized_transcription(words[case.name], diarization).segments
            turns_metric, segments_metric = totals[run]
            turns_der = turns_metric(case.reference, annotation(diarization.turns), uem=case.uem)
            segments_der = segments_metric(case.reference, annotation(segments), uem=case.uem)
            if case.uem is not None:  # the AMI excerpts
                ami_totals[run][0](case.reference, annotation(diarization.turns), uem=case.uem)
                ami_totals[run][1](case.reference, annotation(segments), uem=case.uem)
            found = f"{len({turn.speaker for turn in diarization.turns})} ({count})"
            rtf = seconds / (case.samples.size / SAMPLE_RATE)
            label = case.name + (f", {case.setting}" if run == ", setting" else run)
            print(f"{label:52s} {turns_der * 100:11.1f} {segments_der * 100:14.1f} {found:>15s} {rtf:6.3f}")
    for name, runs_totals in (("total", totals), ("AMI total", ami_totals)):
        for run, (turns_metric, segments_metric) in runs_totals.items():
            print(f"{name + run:52s} {abs(turns_metric) * 100:11.1f} {abs(segments_metric) * 100:14.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedding", choices=["campplus", "resemblyzer"], default="campplus")
    parser.add_argument("--threshold", type=float, default=None, help="clustering threshold (default: measured)")
    parser.add_argument("--no-resegmentation", action="store_true", help="the pipeline's turns as they come")
    parser.add_argument("--sweep", action="store_true", help="compare the encoders over clustering thresholds")
    parser.add_argument("--resegmentation-sweep", action="store_true", help="compare resegmentation windows")
    args = parser.parse_args()
    cases = list(filter(None, [sample_case(), stereo_case(), *ami_cases()]))
    resegmentation = ResegmentationConfig(enabled=not args.no_resegmentation)
    if args.sweep:
        sweep(cases, resegmentation)
    elif args.resegmentation_sweep:
        resegmentation_sweep(cases)
    else:
        config = DiarizationConfig(
            embedding=args.embedding, clustering_threshold=args.threshold, resegmentation=resegmentation
        )
        table(cases, config)


if __name__ == "__main__":
    main()
