"""Resegmentation on a fake speaker encoder whose embedding of a window is the voices in it: the logic of
moving windows between the pipeline's speakers, with no model (the real one is measured by
scripts/bench_diarization.py and tested over HTTP on real meetings)."""

from collections.abc import Sequence

import numpy as np
from pyannote.core import Annotation, Segment

from deployments.config import ResegmentationConfig
from deployments.diarization._resegmentation import FRAMES_PER_SECOND, resegment
from deployments.diarization._voice_split import split_voices

VOICES = {"A": np.array([1.0, 0.0, 0.0]), "B": np.array([0.0, 1.0, 0.0]), "C": np.array([0.0, 0.0, 1.0])}


def voices_by_frame(truth: Sequence[tuple[float, float, str]], seconds: float) -> np.ndarray:
    """(frames, 3): who really speaks in each 10 ms frame."""
    frames = np.zeros((round(seconds * FRAMES_PER_SECOND), 3))
    for start, end, voice in truth:
        frames[round(start * FRAMES_PER_SECOND) : round(end * FRAMES_PER_SECOND)] += VOICES[voice]
    return frames


def fake_encoder(frames: np.ndarray, noise: float = 0.1):
    generator = np.random.default_rng(0)

    def embed(bounds: np.ndarray) -> np.ndarray:
        windows = np.stack([frames[start:end].mean(axis=0) for start, end in bounds])
        windows = windows + noise * generator.standard_normal(windows.shape)
        return windows / np.linalg.norm(windows, axis=1, keepdims=True)

    return embed


def annotation(turns: Sequence[tuple[float, float, str]]) -> Annotation:
    result = Annotation()
    for index, (start, end, speaker) in enumerate(turns):
        result[Segment(start, end), index] = speaker
    return result


def spans(result: Annotation, speaker: str) -> list[tuple[float, float]]:
    return [(round(s.start, 2), round(s.end, 2)) for s in result.label_timeline(speaker).support()]


def test_a_voice_swallowed_by_another_speakers_turn_goes_back_to_its_speaker() -> None:
    """The pipeline gave B's 6-10 s to A (one local speaker in its window); windows of B's voice there are
    nearer B's centroid, so those seconds return to B, with the boundary near the real change."""
    truth = [(0, 6, "A"), (6, 10, "B"), (10, 16, "B"), (16, 24, "A")]
    pipeline = [(0, 10, "A"), (10, 16, "B"), (16, 24, "A")]
    frames = voices_by_frame(truth, 24)
    turns, exclusive = resegment(
        annotation(pipeline), annotation(pipeline), len(frames), fake_encoder(frames), ResegmentationConfig()
    )
    b_spans = spans(turns, "B")
    assert len(b_spans) == 1
    assert abs(b_spans[0][0] - 6) <= 0.5 and b_spans[0][1] == 16
    assert spans(exclusive, "B") == b_spans
    assert set(turns.labels()) == {"A", "B"}


def test_right_turns_are_left_as_they_are() -> None:
    truth = [(0, 6, "A"), (6, 12, "B"), (12.5, 20, "A")]
    frames = voices_by_frame(truth, 20)
    turns, _ = resegment(
        annotation(truth), annotation(truth), len(frames), fake_encoder(frames), ResegmentationConfig()
    )
    assert spans(turns, "A") == [(0, 6), (12.5, 20)]
    assert spans(turns, "B") == [(6, 12)]


def test_overlapped_speech_keeps_both_speakers() -> None:
    truth = [(0, 8, "A"), (6, 14, "B")]
    frames = voices_by_frame(truth, 14)
    exclusive = annotation([(0, 7, "A"), (7, 14, "B")])
    turns, _ = resegment(annotation(truth), exclusive, len(frames), fake_encoder(frames), ResegmentationConfig())
    assert spans(turns, "A") == [(0, 8)]
    assert spans(turns, "B") == [(6, 14)]


def test_one_speaker_or_no_speech_is_returned_untouched() -> None:
    frames = voices_by_frame([(0, 10, "A")], 10)
    one = annotation([(0, 10, "A")])
    assert resegment(one, one, len(frames), fake_encoder(frames), ResegmentationConfig()) == (one, one)
    empty = Annotation()
    assert resegment(empty, empty, len(frames), fake_encoder(frames), ResegmentationConfig()) == (empty, empty)


def test_no_speaker_is_added_even_for_a_voice_the_pipeline_never_named() -> None:
    """C's voice was never a speaker of the pipeline: its windows go to the nearest known speaker."""
    truth = [(0, 6, "A"), (6, 12, "B"), (12, 18, "C")]
    pipeline = [(0, 6, "A"), (6, 18, "B")]
    frames = voices_by_frame(truth, 18)
    turns, _ = resegment(
        annotation(pipeline), annotation(pipeline), len(frames), fake_encoder(frames), ResegmentationConfig()
    )
    assert set(turns.labels()) <= {"A", "B"}


def test_an_enrolled_voice_merged_into_another_speaker_is_split_out_and_named() -> None:
    """One speaker A holds B's 6-12 s too (the clustering merged them); B's enrolled voice matched no speaker, so
    its windows are looked for inside A and become a speaker of their own, named by it. A stranger's voice (C)
    wins nothing."""
    truth = [(0, 6, "A"), (6, 12, "B"), (12, 20, "A")]
    pipeline = [(0, 20, "SPEAKER_00")]
    frames = voices_by_frame(truth, 20)
    turns, exclusive, names = split_voices(
        annotation(pipeline), annotation(pipeline), len(frames), fake_encoder(frames),
        {"Bob": VOICES["B"], "Carol": VOICES["C"]}, ResegmentationConfig(),
    )  # fmt: skip
    assert list(names.values()) == ["Bob"]
    (label,) = names
    b_spans = spans(exclusive, label)
    assert len(b_spans) == 1 and abs(b_spans[0][0] - 6) <= 0.5 and abs(b_spans[0][1] - 12) <= 0.5
    assert spans(turns, label) == b_spans and "SPEAKER_00" in turns.labels()
    assert split_voices(annotation(pipeline), annotation(pipeline), len(frames), fake_encoder(frames),
                        {"Carol": VOICES["C"]}, ResegmentationConfig()) == (
        annotation(pipeline), annotation(pipeline), {})  # fmt: skip
