"""The speaker-diarization pipeline the Diarizer deployment runs: pyannote.audio on 16 kHz samples.

By default the pipeline is pyannote's own `SpeakerDiarization` on the embedded models
(`deployments/diarization/_models.py`); any other pyannote pipeline can be configured instead.
"""

import logging
import os
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pyannote.audio import Pipeline
from pyannote.audio.pipelines import SpeakerDiarization
from pyannote.core import Annotation

from deployments.config import DiarizationConfig
from deployments.diarization._clustering import CountingClustering
from deployments.diarization._known_speakers import match_speakers, speaker_centroids
from deployments.diarization._models import (
    CamPlusPlusEmbedding,
    OnnxSegmentation,
    ResemblyzerEmbedding,
    SpeakerFramesEmbedding,
    UnusedPLDA,
)
from deployments.diarization._resegmentation import resegment
from deployments.diarization._voice_split import split_voices
from deployments.types import (
    SAMPLE_RATE,
    Diarization,
    DiarizationOptions,
    DiarizationSetting,
    SpeakerTurn,
    VoicePrint,
)

logger = logging.getLogger("ray.serve")

SETTING_HINTS: dict[DiarizationSetting, dict[str, int]] = {
    DiarizationSetting.general: {},  # any number of speakers, found by clustering
    # Meetings: clustering decides too. Measured (scripts/bench_diarization.py): a `min_speakers: 2` hint
    # made the AMI excerpt dev01 worse (54.7% DER against 47.7%) and dev00 no better.
    DiarizationSetting.meeting: {},
    DiarizationSetting.telephonic: {"min_speakers": 1, "max_speakers": 2},  # calls: one or two parties, never more
}
"""Each `DiarizationSetting`'s speaker-count hints for the pipeline. An explicit `num_speakers` wins."""


def speaker_hints(options: DiarizationOptions) -> dict[str, int]:
    """The pipeline's count hints: an explicit `num_speakers` wins, then explicit bounds (each replacing the
    setting's), then the setting's."""
    if options.num_speakers is not None:
        return {"num_speakers": options.num_speakers}
    hints = dict(SETTING_HINTS[options.setting])
    if options.min_speakers is not None:
        hints["min_speakers"] = options.min_speakers
        if hints.get("max_speakers", options.min_speakers) < options.min_speakers:
            del hints["max_speakers"]
    if options.max_speakers is not None:
        hints["max_speakers"] = options.max_speakers
        if hints.get("min_speakers", 1) > options.max_speakers:
            del hints["min_speakers"]
    return hints


EMBEDDINGS = {"campplus": CamPlusPlusEmbedding, "resemblyzer": ResemblyzerEmbedding}
CLUSTERING_THRESHOLDS = {"campplus": 0.85, "resemblyzer": 0.5}
"""Measured on the development audio (scripts/bench_diarization.py --sweep): CAM++ finds the right speaker
count on every file from 0.8 to 0.9 (0.85 sits mid-plateau); resemblyzer's best was 0.5."""


COUNTING_MIN_ACTIVE_RATIO = 0.1
"""Counting clustering: a window's speaker embedding joins the clustering from 1 s of clean speech in the
10 s window (pyannote: 2 s), so that speakers who say little are among the embeddings clustered. Measured
(turns DER, 12 reference files, `num_speakers` given): 27.9% total, against 39.4% at 0.2 and 38.9% with
pyannote's clustering."""


class DiarizationPipeline:
    """A pyannote pipeline on 16 kHz mono samples."""

    def __init__(self, config: DiarizationConfig) -> None:
        torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
        self.resegmentation = config.resegmentation
        self.known_speaker_threshold = config.known_speaker_threshold
        self.embedding: SpeakerFramesEmbedding | None = None
        self.encoder_name = config.embedding if config.pipeline == "embedded" else "campplus"
        """Which speaker encoder embeds voices: an enrolled voice's vector compares only with its own encoder's."""
        if config.pipeline == "embedded":
            self.embedding = EMBEDDINGS[config.embedding]()
            self.pipeline: Pipeline = SpeakerDiarization(
                segmentation=OnnxSegmentation(speech_bias=config.speech_bias),
                embedding=self.embedding,
                plda=UnusedPLDA(),
                clustering="AgglomerativeClustering",
                embedding_exclude_overlap=True,
                segmentation_batch_size=config.batch_size,
                embedding_batch_size=config.batch_size,
            )
            self.threshold_clustering = self.pipeline.clustering
            self.counting_clustering = (
                CountingClustering(0.0, config.min_cluster_size, COUNTING_MIN_ACTIVE_RATIO)
                if config.clustering == "counting"
                else None
            )
            self.set_threshold(config.clustering_threshold or CLUSTERING_THRESHOLDS[config.embedding])
        else:
            location = config.pipeline
            token = os.environ.get(config.token_env) if not Path(location).is_dir() else None
            pretrained = Pipeline.from_pretrained(location, token=token)
            if pretrained is None:
                raise RuntimeError(f"could not load the diarization pipeline {location!r}")
            self.pipeline = pretrained
        self.pipeline.to(torch.device(config.device))

    def set_threshold(self, threshold: float) -> None:
        """The embedded pipeline's parameters; `min_cluster_size` 12 is pyannote's default for 3.x models."""
        counting: CountingClustering | None = getattr(self, "counting_clustering", None)
        if counting is not None:
            counting.threshold = threshold
        self.pipeline.instantiate(
            {
                "segmentation": {"min_duration_off": 0.0},
                "clustering": {"method": "centroid", "min_cluster_size": 12, "threshold": threshold},
            }
        )

    def annotate(self, samples: np.ndarray, **hints: int) -> tuple[Annotation, Annotation]:
        """(every speaker's turns, the exclusive turns). pyannote.audio 3 pipelines return one Annotation,
        which then serves as both."""
        waveform = {"waveform": torch.from_numpy(np.ascontiguousarray(samples))[None], "sample_rate": SAMPLE_RATE}
        # One file in, so one output (not pyannote's iterator for a list); hints never include `preload`.
        output: Any = self.pipeline(waveform, **hints)  # type: ignore[arg-type]
        if isinstance(output, Annotation):
            return output, output
        return output.speaker_diarization, output.exclusive_speaker_diarization

    def embed_voices(self, windows: list[np.ndarray]) -> np.ndarray:
        """(windows, dimension): the speaker encoder's embedding of each window of one voice."""
        if self.embedding is None:
            raise RuntimeError("live speaker labels need the embedded diarization pipeline's speaker encoder")
        with torch.inference_mode():
            voices = [self.embedding.embed(self.embedding.frames(torch.from_numpy(window))) for window in windows]
        return torch.stack(voices).numpy()

    def diarize(self, samples: np.ndarray, options: DiarizationOptions) -> Diarization:
        """A count or bounds from the request are met by the clustering without them when it already meets
        them (so a count the service would have found changes nothing), else by the counting clustering (a
        second pipeline run: pyannote's pipeline keeps no embeddings between runs), whose answer is taken only
        when it meets them: short of the count too, it scored worse than the first (issue 35, trn04)."""
        hints = speaker_hints(options)
        counted = self.counting_clustering is not None and (
            options.num_speakers is not None or options.min_speakers is not None or options.max_speakers is not None
        )
        turns, exclusive = self.annotate(samples, **({} if counted else hints))
        if counted and not _meets(len(turns.labels()), hints):
            counted_turns, counted_exclusive = self.annotate_counting(samples, hints)
            if _meets(len(counted_turns.labels()), hints):  # else it is no closer to the count, and was worse
                turns, exclusive = counted_turns, counted_exclusive
        if self.resegmentation.enabled:
            turns, exclusive = self.resegment(samples, turns, exclusive)
        names: dict[str, str] = {}
        if options.known_speakers or options.known_voices:
            turns, exclusive, names = self.name_known_speakers(samples, turns, exclusive, options)
        return Diarization(turns=_turns(turns), exclusive_turns=_turns(exclusive), names=names)

    def annotate_counting(self, samples: np.ndarray, hints: dict[str, int]) -> tuple[Annotation, Annotation]:
        """`annotate` with the counting clustering (deployments/diarization/_clustering.py) in pyannote's place.
        One run at a time (the Diarizer's lock), so the swap is never seen by another request."""
        self.pipeline.clustering = self.counting_clustering
        try:
            return self.annotate(samples, **hints)
        finally:
            self.pipeline.clustering = self.threshold_clustering

    @cached_property
    def speaker_encoder(self) -> SpeakerFramesEmbedding:
        """The encoder that names known speakers: the embedded pipeline's own; CAM++ beside a configured one."""
        return self.embedding if self.embedding is not None else CamPlusPlusEmbedding()

    def embed_voice(self, samples: np.ndarray) -> np.ndarray:
        encoder = self.speaker_encoder
        with torch.inference_mode():
            return encoder.embed(encoder.frames(torch.from_numpy(np.ascontiguousarray(samples)))).numpy()

    def voice_print(self, samples: np.ndarray) -> VoicePrint:
        """An enrolment clip's speech (16 kHz, VAD already applied) as a voice."""
        unit = _unit(self.embed_voice(samples))
        return VoicePrint(embedding=unit.tolist(), speech_s=len(samples) / SAMPLE_RATE, encoder=self.encoder_name)

    def name_known_speakers(
        self, samples: np.ndarray, turns: Annotation, exclusive: Annotation, options: DiarizationOptions
    ) -> tuple[Annotation, Annotation, dict[str, str]]:
        """(turns, exclusive turns, speaker label -> name) for the known speakers whose clip (decoded 16 kHz
        float32 at its path) or enrolled voice matches a speaker's voice (deployments/diarization/_known_speakers.py).
        Voices that match no speaker are looked for inside the speakers found, by short windows, and split out
        where they are heard (`_voice_split`). A voice of another encoder than this pipeline's is left out (logged):
        its vector does not compare with ours."""
        references: dict[str, list[np.ndarray]] = {}
        for speaker in options.known_speakers:
            clip = np.fromfile(speaker.reference_path, dtype=np.float32)
            references.setdefault(speaker.name, []).append(self.embed_voice(clip))
        for voice in options.known_voices:
            if voice.encoder != self.encoder_name:
                logger.warning("voice %s was enrolled with %s, not %s: left out", voice.voice_id, voice.encoder,
                               self.encoder_name)  # fmt: skip
                continue
            references.setdefault(voice.name, []).append(np.asarray(voice.embedding, dtype=np.float32))
        names = [name for name, vectors in references.items() for _ in vectors]
        vectors = [vector for group in references.values() for vector in group]
        centroids = speaker_centroids(samples, _turns(exclusive), self.embed_voice)
        matched = match_speakers(centroids, vectors, names, self.known_speaker_threshold)
        unmatched = {
            name: _unit(np.mean(group, axis=0)) for name, group in references.items() if name not in matched.values()
        }
        embedding = self.embedding
        if unmatched and embedding is not None:
            waveform = torch.from_numpy(np.ascontiguousarray(samples))
            turns, exclusive, split = split_voices(
                turns,
                exclusive,
                embedding.frame_count(len(samples)),
                lambda bounds: embedding.embed_windows(waveform, bounds),
                unmatched,
                self.resegmentation,
            )
            matched |= split
        return turns, exclusive, matched

    def resegment(self, samples: np.ndarray, turns: Annotation, exclusive: Annotation) -> tuple[Annotation, Annotation]:
        """The pipeline's turns corrected by the speaker encoder on short windows
        (deployments/diarization/_resegmentation.py); as they are for a configured pipeline, which embeds no
        encoder of ours."""
        embedding = self.embedding
        if embedding is None:
            return turns, exclusive
        waveform = torch.from_numpy(np.ascontiguousarray(samples))
        return resegment(
            turns,
            exclusive,
            embedding.frame_count(len(samples)),
            lambda bounds: embedding.embed_windows(waveform, bounds),
            self.resegmentation,
        )


def _meets(speakers: int, hints: dict[str, int]) -> bool:
    """Whether a number of speakers found meets a request's count or bounds."""
    if "num_speakers" in hints:
        return speakers == hints["num_speakers"]
    return hints.get("min_speakers", 1) <= speakers <= hints.get("max_speakers", speakers)


def _unit(vector: np.ndarray) -> np.ndarray:
    unit: np.ndarray = vector / max(float(np.linalg.norm(vector)), 1e-9)
    return unit


def _turns(annotation: Annotation) -> list[SpeakerTurn]:
    return [
        SpeakerTurn(speaker=str(label), start=round(turn.start, 3), end=round(turn.end, 3))
        for turn, _, label in annotation.itertracks(yield_label=True)
    ]
