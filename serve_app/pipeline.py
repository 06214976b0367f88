"""The transcription pipeline: decode, check limits, transcribe, composed from DeploymentHandles.

Routes (and, later, background jobs) call this; it holds no model code of its own.
"""

from ray.serve.handle import DeploymentHandle

from deployments.audio_decoder import AudioDecodeError
from deployments.types import DecodedAudio, Transcript, TranscriptionOptions
from serve_app.config import LimitsConfig


class AudioRejectedError(ValueError):
    """The audio cannot be processed; the message is the `detail` the client gets (HTTP 400)."""


class TranscriptionPipeline:
    def __init__(self, decoder: DeploymentHandle, transcriber: DeploymentHandle, limits: LimitsConfig) -> None:
        self.decoder = decoder
        self.transcriber = transcriber
        self.limits = limits

    async def decode(self, source: bytes | str) -> DecodedAudio:
        """Decode and enforce the duration limits."""
        try:
            audio: DecodedAudio = await self.decoder.decode.remote(source)
        except AudioDecodeError as error:  # Ray re-raises the replica's exception as a subclass of it
            raise AudioRejectedError(f"audio processing failed: {original_message(error)}") from None
        if audio.duration < self.limits.min_duration_s:
            raise AudioRejectedError(
                f"audio is too short ({audio.duration:.2f} s): the minimum is {self.limits.min_duration_s} s"
            )
        if audio.duration > self.limits.max_duration_s:
            raise AudioRejectedError(
                f"audio is too long ({audio.duration:.0f} s): the maximum is {self.limits.max_duration_s:.0f} s"
            )
        return audio

    async def transcribe(self, source: bytes | str, options: TranscriptionOptions) -> Transcript:
        audio = await self.decode(source)
        return await self.transcriber.transcribe.remote(audio.samples, options)


def original_message(error: Exception) -> str:
    """The original message of an exception that may have crossed a Ray process boundary."""
    cause = getattr(error, "cause", None)
    return str(cause if isinstance(cause, Exception) else error)
