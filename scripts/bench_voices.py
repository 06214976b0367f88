"""Enrolled voices across recordings (issue 64): speakers enrolled from one recording, named in another.

For each pair of AMI excerpts in `../shared` that share speakers (dev00 -> dev01 and trn06 -> trn09, with
speakers of 5 s or more of solo speech; trn03 -> trn01, a shorter one), each speaker of the first is enrolled
from the stretches where only they talk (the RTTM's), through the service's enrolment path (Silero VAD's speech,
at least `voices.min_speech_s`, the Diarizer's speaker encoder: `_enrolment.enrolment_speech` and
`DiarizationPipeline.voice_print`); the second is diarized with those voices, as a request's `voices` does.
Scored over the second recording's reference speech (0-30 s), per reference speaker by their own voice, with no
optimal mapping: named right (the speaker's own name), named wrong (another voice's), unnamed (speaker_N, or no
speaker found there). Speakers whose enrolment clip held >= 5 s of their voice are scored apart (the goal:
>= 80% named right).

Strangers: the voices enrolled from each first recording are tried on every recording of other people (no
shared speaker, sample.wav included); the share of their speech time given a name at all (the goal: <= 5%).

First it prints what naming costs: the pairs' recordings diarized with and without the voices, side by side.
Each setting runs the Diarizer's own call (`DiarizationPipeline.diarize` with the voices), at each threshold
of `--thresholds` (the service's `diarization.known_speaker_threshold` is marked) and each of
`--window-thresholds` (`_voice_split.WINDOW_THRESHOLD`: voices split out of a speaker that merged two):
how the thresholds were chosen.

    .venv/bin/python -m scripts.bench_voices [--thresholds 0.5 0.55 0.6] [--window-thresholds 0.45 0.5 0.55]
"""

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from pyannote.core import Annotation, Segment
from pyannote.database.util import load_rttm

from deployments.config import DiarizationConfig, VoicesConfig
from deployments.diarization import _voice_split
from deployments.diarization._pyannote import DiarizationPipeline
from deployments.errors import AudioRejectedError
from deployments.files._enrolment import enrolment_speech
from deployments.files.decoding import decode_audio
from deployments.types import DiarizationOptions, KnownVoice, SpeakerTurn
from devkit.media import encode

AUDIO = Path(__file__).resolve().parents[2] / "shared" / "audio"
PAIRS = (("dev00", "dev01"), ("trn06", "trn09"), ("trn03", "trn01"))
SCORED_S = 30.0
LONG_ENROLMENT_S = 5.0


def solo(annotation: Annotation, speaker: str) -> list[tuple[float, float]]:
    """Where `speaker` talks and no one else does (within the scored region)."""
    own = annotation.label_timeline(speaker).support()
    others = annotation.subset([speaker], invert=True).get_timeline().support()
    spans = own.extrude(others) if len(others) else own
    return [(s.start, min(s.end, SCORED_S)) for s in spans if s.start < SCORED_S]


def overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def scored_time(
    annotation: Annotation, turns: list[SpeakerTurn], names: dict[str, str], speakers: set[str] | None = None
) -> dict[str, dict[str, float]]:
    """Per reference speaker: seconds of their speech named right, wrong, unnamed (each reference turn against
    the diarizer's exclusive turns; time no turn covers is unnamed)."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"right": 0.0, "wrong": 0.0, "unnamed": 0.0})
    for segment, _, speaker in annotation.crop(Segment(0, SCORED_S)).itertracks(yield_label=True):
        if speakers is not None and speaker not in speakers:
            continue
        span = (segment.start, segment.end)
        covered = 0.0
        for turn in turns:
            seconds = overlap(span, (turn.start, turn.end))
            if seconds <= 0:
                continue
            covered += seconds
            name = names.get(turn.speaker)
            out[speaker]["unnamed" if name is None else "right" if name == speaker else "wrong"] += seconds
        out[speaker]["unnamed"] += max(0.0, segment.duration - covered)
    return out


def voices_of(enrolled: dict[str, np.ndarray], encoder: str) -> list[KnownVoice]:
    return [KnownVoice(voice_id=name, name=name, embedding=vector.tolist(), encoder=encoder)
            for name, vector in enrolled.items()]  # fmt: skip


def cost(
    pipeline: DiarizationPipeline, audio: dict[str, np.ndarray], enrolled: dict[str, dict[str, np.ndarray]]
) -> None:
    """What naming costs the Diarizer: each pair's second recording diarized without voices and with them,
    alternately, twice (the same process, side by side)."""
    plain = named_s = 0.0
    for _ in range(2):
        for source, target in PAIRS:
            voices = DiarizationOptions(known_voices=voices_of(enrolled[source], pipeline.encoder_name))
            started = time.perf_counter()
            pipeline.diarize(audio[target], DiarizationOptions())
            middle = time.perf_counter()
            pipeline.diarize(audio[target], voices)
            plain, named_s = plain + middle - started, named_s + time.perf_counter() - middle
    print(f"\ncost: diarizing with the voices {named_s:.1f} s, without {plain:.1f} s: {named_s / plain:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.5, 0.55, 0.6, 0.65])
    parser.add_argument("--window-thresholds", type=float, nargs="+", default=[_voice_split.WINDOW_THRESHOLD])
    args = parser.parse_args()
    if not AUDIO.is_dir():
        raise SystemExit(f"{AUDIO} is missing: this benchmark needs ../shared beside the project")
    config = DiarizationConfig()
    voices_config = VoicesConfig()
    pipeline = DiarizationPipeline(config)
    rttm = {**load_rttm(str(AUDIO / "ami_dev.rttm")), **load_rttm(str(AUDIO / "ami_train.rttm")),
            **load_rttm(str(AUDIO / "sample.rttm"))}  # fmt: skip
    recordings = sorted(name for name in rttm if (AUDIO / f"{name}.wav").exists())
    audio = {name: decode_audio(AUDIO / f"{name}.wav").samples for name in recordings}

    # voices enrolled from each first recording's speakers, as POST /v1/voices does
    enrolled: dict[str, dict[str, np.ndarray]] = {}
    enrolled_s: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for source, _ in PAIRS:
            enrolled[source], enrolled_s[source] = {}, {}
            clip = Path(scratch) / f"{source}.wav"
            clip.write_bytes(encode(audio[source], "wav"))
            for speaker in rttm[source].labels():
                try:
                    speech = enrolment_speech(str(clip), voices_config, solo(rttm[source], speaker))
                except AudioRejectedError as refused:
                    print(f"{source} {speaker}: not enrolled ({refused})")
                    continue
                voice = pipeline.voice_print(speech)
                enrolled[source][speaker] = np.asarray(voice.embedding)
                enrolled_s[source][speaker] = voice.speech_s
                print(f"{source} {speaker}: enrolled from {voice.speech_s:.1f} s of speech")

    def named(source: str, target: str) -> tuple[list[SpeakerTurn], dict[str, str]]:
        """The target diarized as a request naming the source's voices is (the Diarizer's own call)."""
        options = DiarizationOptions(known_voices=voices_of(enrolled[source], pipeline.encoder_name))
        diarization = pipeline.diarize(audio[target], options)
        return diarization.exclusive_turns, diarization.names

    cost(pipeline, audio, enrolled)
    print(f"\nthreshold / window | pair | named right / wrong / unnamed (speakers >= {LONG_ENROLMENT_S:g} s; all)")
    for window_threshold in args.window_thresholds:
        _voice_split.WINDOW_THRESHOLD = window_threshold
        for threshold in args.thresholds:
            pipeline.known_speaker_threshold = threshold
            mark = " (default)" if abs(threshold - config.known_speaker_threshold) < 1e-9 else ""
            setting = f"{threshold:.2f}{mark} / {window_threshold:.2f}"
            long_total: dict[str, float] = defaultdict(float)
            for source, target in PAIRS:
                if not enrolled[source]:
                    continue
                turns, names = named(source, target)
                shared = set(enrolled[source]) & set(rttm[target].labels())
                per_speaker = scored_time(rttm[target], turns, names, shared)
                long = {s for s in shared if enrolled_s[source].get(s, 0.0) >= LONG_ENROLMENT_S}
                cells = []
                for group in (long, shared):
                    sums = {key: sum(per_speaker[s][key] for s in group) for key in ("right", "wrong", "unnamed")}
                    total = sum(sums.values()) or 1.0
                    cells.append(" / ".join(f"{sums[key] / total:.0%}" for key in ("right", "wrong", "unnamed")))
                    if group is long:
                        for key, value in sums.items():
                            long_total[key] += value
                print(f"{setting} | {source}->{target} | {cells[0]} ; {cells[1]}")
            total = sum(long_total.values()) or 1.0
            print(f"{setting} | all pairs (>= {LONG_ENROLMENT_S:g} s) | right {long_total['right'] / total:.1%}"
                  f" wrong {long_total['wrong'] / total:.1%} unnamed {long_total['unnamed'] / total:.1%}")  # fmt: skip
            stranger_named, stranger_speech = 0.0, 0.0
            for source, _ in PAIRS:
                for target in recordings:
                    if not enrolled[source] or set(enrolled[source]) & set(rttm[target].labels()):
                        continue
                    turns, names = named(source, target)
                    for times in scored_time(rttm[target], turns, names).values():
                        stranger_named += times["wrong"]  # every name given a stranger is wrong
                        stranger_speech += sum(times.values())
            share = stranger_named / max(stranger_speech, 1e-9)
            print(f"{setting} | strangers | {share:.1%} of {stranger_speech:.0f} s named\n")


if __name__ == "__main__":
    main()
