"""The counting clustering's contract (deployments/diarization/_clustering.py), on synthetic embeddings: a
given count is obeyed, min/max bounds are obeyed, a speaker with few embeddings survives, and a right
count given (one the service finds without it) changes nothing."""

import numpy as np
import pytest
from pyannote.core import Annotation, Segment

from deployments.config import ResegmentationConfig
from deployments.diarization._clustering import CountingClustering, cluster_embeddings
from deployments.diarization._models import with_speech_bias
from deployments.diarization._pyannote import DiarizationPipeline, speaker_hints
from deployments.types import DiarizationOptions, DiarizationSetting

THRESHOLD = 0.85


def voices(sizes: list[int], spread: float = 0.15, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(embeddings, speaker of each): `sizes[k]` noisy unit vectors around speaker k's random direction."""
    random = np.random.default_rng(seed)
    centres = random.normal(size=(len(sizes), 64))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    speakers = np.repeat(np.arange(len(sizes)), sizes)
    embeddings = centres[speakers] + spread * random.normal(size=(len(speakers), 64)) / np.sqrt(64)
    return embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True), speakers


def same_partition(found: np.ndarray, speakers: np.ndarray) -> bool:
    pairs = {(int(a), int(b)) for a, b in zip(found, speakers, strict=True)}
    return len(pairs) == len(set(found)) == len(set(speakers))


def test_the_threshold_counts_distinct_voices_and_keeps_one_that_spoke_little() -> None:
    embeddings, speakers = voices([30, 20, 3])  # the third speaker: one short turn, three windows
    found = cluster_embeddings(embeddings, THRESHOLD, 2, 1, len(embeddings))
    assert same_partition(found, speakers)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_a_given_count_is_obeyed(count: int) -> None:
    embeddings, _ = voices([30, 20, 3])
    assert len(set(cluster_embeddings(embeddings, THRESHOLD, 2, count, count))) == count


def test_a_right_count_given_changes_nothing() -> None:
    embeddings, _ = voices([25, 12, 4], seed=1)
    free = cluster_embeddings(embeddings, THRESHOLD, 2, 1, len(embeddings))
    assert np.array_equal(cluster_embeddings(embeddings, THRESHOLD, 2, 3, 3), free)


def test_a_count_above_the_threshold_s_splits_off_the_speaker_who_said_least() -> None:
    """Two close voices that the threshold merges; given two, the one with 3 windows is its own again."""
    embeddings, speakers = voices([30, 3], spread=0.15, seed=2)
    close = embeddings.copy()
    close[speakers == 1] = 0.6 * close[speakers == 1] + 0.4 * close[speakers == 0].mean(axis=0)
    close /= np.linalg.norm(close, axis=1, keepdims=True)
    assert len(set(cluster_embeddings(close, 1.5, 2, 1, len(close)))) == 1
    assert same_partition(cluster_embeddings(close, 1.5, 2, 2, 2), speakers)


def test_min_and_max_bounds_are_obeyed() -> None:
    embeddings, _ = voices([20, 20, 20, 20])
    assert len(set(cluster_embeddings(embeddings, THRESHOLD, 2, 1, 2))) == 2
    assert len(set(cluster_embeddings(embeddings, THRESHOLD, 2, 6, 8))) == 6
    assert len(set(cluster_embeddings(embeddings, THRESHOLD, 2, 3, 5))) == 4


def test_a_lone_outlier_is_not_a_speaker_without_a_count() -> None:
    embeddings, speakers = voices([30, 20, 1])
    found = cluster_embeddings(embeddings, THRESHOLD, 2, 1, len(embeddings))
    assert len(set(found)) == 2 and same_partition(found[speakers < 2], speakers[speakers < 2])


def test_the_speech_bias_lowers_silence_and_keeps_probabilities() -> None:
    scores = np.log(np.array([[[0.6, 0.3, 0.05, 0.02, 0.01, 0.01, 0.01]]]))
    biased = with_speech_bias(scores, 1.0)
    assert np.allclose(np.exp(biased).sum(axis=-1), 1.0)
    assert biased[0, 0].argmax() == 1 and scores[0, 0].argmax() == 0
    assert np.allclose(biased[..., 1:] - biased[..., 1:2], scores[..., 1:] - scores[..., 1:2])


def test_speaker_hints_a_count_wins_then_bounds_then_the_setting() -> None:
    telephonic = DiarizationSetting.telephonic
    assert speaker_hints(DiarizationOptions(num_speakers=3, min_speakers=1, setting=telephonic)) == {"num_speakers": 3}
    assert speaker_hints(DiarizationOptions(setting=telephonic)) == {"min_speakers": 1, "max_speakers": 2}
    assert speaker_hints(DiarizationOptions(min_speakers=3, setting=telephonic)) == {"min_speakers": 3}
    assert speaker_hints(DiarizationOptions(min_speakers=2, max_speakers=5)) == {"min_speakers": 2, "max_speakers": 5}
    with pytest.raises(ValueError, match="min_speakers must not exceed max_speakers"):
        DiarizationOptions(min_speakers=3, max_speakers=2)


class FakePipeline(DiarizationPipeline):
    """The diarize step without models: the clustering without a count finds `found` speakers; the counting
    clustering finds what it is asked."""

    def __init__(self, found: int, counting_finds: int | None = None) -> None:
        self.found = found
        self.counting_finds = counting_finds
        self.counting_clustering = CountingClustering(THRESHOLD)
        self.resegmentation = ResegmentationConfig(enabled=False)
        self.runs: list[dict[str, int]] = []

    @staticmethod
    def _speakers(count: int) -> Annotation:
        annotation = Annotation()
        for speaker in range(count):
            annotation[Segment(speaker, speaker + 1)] = f"SPEAKER_{speaker}"
        return annotation

    def annotate(self, samples: np.ndarray, **hints: int) -> tuple[Annotation, Annotation]:
        self.runs.append(hints)
        found = self._speakers(self.found)
        return found, found

    def annotate_counting(self, samples: np.ndarray, hints: dict[str, int]) -> tuple[Annotation, Annotation]:
        self.runs.append({"counting": 1, **hints})
        asked = hints.get("num_speakers", hints.get("min_speakers", 1))
        counted = self._speakers(asked if self.counting_finds is None else self.counting_finds)
        return counted, counted


@pytest.mark.parametrize(
    ("hints", "second_run"),
    [
        ({"num_speakers": 2}, False),
        ({"min_speakers": 1, "max_speakers": 3}, False),
        ({"num_speakers": 3}, True),
        ({"min_speakers": 3}, True),
        ({"max_speakers": 1}, True),
    ],
)
def test_a_count_the_service_finds_anyway_changes_nothing(hints: dict[str, int], second_run: bool) -> None:
    """Two speakers found without a count: a count or bounds that two meets keep that answer (one run, no
    hints); any other runs the counting clustering with the hints."""
    pipeline = FakePipeline(found=2)
    diarization = pipeline.diarize(np.zeros(16_000, np.float32), DiarizationOptions(**hints))
    assert pipeline.runs[0] == {}
    assert len(pipeline.runs) == 1 + second_run
    speakers = len({turn.speaker for turn in diarization.turns})
    assert speakers == 2 or (second_run and pipeline.runs[1]["counting"] == 1)


def test_a_counting_run_short_of_the_count_too_is_not_taken() -> None:
    pipeline = FakePipeline(found=2, counting_finds=3)
    diarization = pipeline.diarize(np.zeros(16_000, np.float32), DiarizationOptions(num_speakers=4))
    assert len(pipeline.runs) == 2 and len({turn.speaker for turn in diarization.turns}) == 2
