"""The operator's audio emotion classifier (`analysis.audio_emotion_model`) on a tiny wav2vec2 checkpoint built
here (random weights: the labels say nothing, their shapes do): its labels mapped onto the four, unmapped ones
dropped, short spans not judged, clear errors for a missing or unmappable checkpoint; and the `AudioEmotions`
deployment's class without Ray, which answers 502-style errors when its checkpoint cannot be loaded; and the
application builder, which has that deployment only with the setting."""

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from deployments.analysis.audio_deployment import AudioEmotions
from deployments.analysis.audio_emotions import MAX_SECONDS, AudioEmotionClassifier, heard_span
from deployments.analysis.errors import AudioEmotionsUnavailable, analysis_error_message
from deployments.types import EMOTION_LABELS, SAMPLE_RATE
from tests.fakes import replica_class


def build_checkpoint(path: Path, labels: list[str]) -> Path:
    """A wav2vec2 audio classifier with tiny sizes and the given labels, saved as a Hugging Face checkpoint."""
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2ForSequenceClassification

    config = Wav2Vec2Config(  # type: ignore[call-arg]  # num_labels: documented, but taken from **kwargs
        vocab_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=2, classifier_proj_size=8, num_labels=len(labels),
        id2label=dict(enumerate(labels)), label2id={name: i for i, name in enumerate(labels)},
    )  # fmt: skip
    Wav2Vec2ForSequenceClassification(config).save_pretrained(path)
    Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=SAMPLE_RATE).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_checkpoint(tmp_path_factory.mktemp("emotion-model"), ["ang", "sad", "neu", "hap", "fear"])


@pytest.fixture(scope="module")
def classifier(checkpoint: Path) -> AudioEmotionClassifier:
    return AudioEmotionClassifier(checkpoint)


def noise(seconds: float) -> np.ndarray:
    return np.random.default_rng(0).normal(0, 0.1, int(seconds * SAMPLE_RATE)).astype(np.float32)


def test_labels_map_onto_the_four_and_fear_is_dropped(classifier: AudioEmotionClassifier) -> None:
    assert classifier.columns == {0: "angry", 1: "sad", 2: "neutral", 3: "positive"}  # column 4, fear: none


def test_each_span_gets_one_of_the_four_with_probs_that_sum_to_one(classifier: AudioEmotionClassifier) -> None:
    emotions = classifier.classify(noise(6.0), [(0.0, 2.0), (2.0, 2.3), (2.5, 6.0), (5.8, 6.0)])
    assert len(emotions) == 4 and emotions[1] is None and emotions[3] is None  # under 0.5 s: not judged
    for emotion in (emotions[0], emotions[2]):
        assert emotion is not None and emotion.label in EMOTION_LABELS
        assert set(emotion.probs) == set(EMOTION_LABELS) and sum(emotion.probs.values()) == pytest.approx(1, abs=1e-3)
        assert emotion.confidence == max(emotion.probs.values()) and emotion.probs[emotion.label] == emotion.confidence


def test_a_long_span_is_heard_in_its_middle(classifier: AudioEmotionClassifier) -> None:
    samples = noise(MAX_SECONDS + 10)
    start, end = heard_span(0.0, MAX_SECONDS + 10)
    assert (start, end) == (5.0, MAX_SECONDS + 5) and heard_span(1.0, 3.0) == (1.0, 3.0)
    (whole,) = classifier.classify(samples, [(0.0, MAX_SECONDS + 10)])
    (middle,) = classifier.classify_pieces([samples[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]])
    assert whole == middle


def test_a_checkpoint_whose_labels_map_onto_none_is_refused(tmp_path: Path) -> None:
    path = build_checkpoint(tmp_path, ["fear", "disgust"])
    with pytest.raises(ValueError, match=r"none of the model's labels .*'disgust', 'fear'.* maps onto"):
        AudioEmotionClassifier(path)


def test_a_missing_checkpoint_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="audio emotion model not found"):
        AudioEmotionClassifier(tmp_path / "absent")


def test_the_deployment_classifies_pieces_and_without_its_model_answers_each_request_with_an_error(
    checkpoint: Path, tmp_path: Path
) -> None:
    loaded = replica_class(AudioEmotions)(str(checkpoint))
    first, short = asyncio.run(loaded.classify([noise(1.0), noise(0.2)]))
    assert first is not None and first.label in EMOTION_LABELS and short is None
    unloaded = replica_class(AudioEmotions)(str(tmp_path / "absent"))  # the replica starts; the cause is logged
    with pytest.raises(AudioEmotionsUnavailable, match="audio emotion model not found") as raised:
        asyncio.run(unloaded.classify([noise(1.0)]))
    assert "audio emotion classifier is unavailable" in analysis_error_message(raised.value)


BUILD_APP = """
import json, sys
import yaml
from ray.serve import Application
from serve_app.app import build_app

def names(app):
    deployment = app._bound_deployment
    found = {deployment.name}
    for arg in [*deployment.init_args, *deployment.init_kwargs.values()]:
        if isinstance(arg, Application):
            found |= names(arg)
    return found

args = yaml.safe_load(open("configs/local.yaml"))["applications"][0]["args"]
args["analysis"]["audio_emotion_model"] = sys.argv[1] or None
print(json.dumps({"deployments": sorted(names(build_app(args))),
                  "loaded": [m for m in ("torch", "transformers") if m in sys.modules]}))
"""


@pytest.mark.parametrize("model", ["", "/models/emotion"])
def test_the_application_has_the_classifier_only_when_set_and_building_it_loads_no_torch(model: str) -> None:
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run(
        [sys.executable, "-c", BUILD_APP, model], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    built = json.loads(run.stdout.strip().splitlines()[-1])
    assert ("AudioEmotions" in built["deployments"]) == bool(model) and "TranscriptionPipeline" in built["deployments"]
    assert built["loaded"] == []  # the replica loads the classifier; the builder's process never imports torch
