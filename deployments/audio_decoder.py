"""AudioDecoder: the deployment that decodes uploads (PyAV) and cuts them into chunks at silences (VAD)."""

import asyncio

from ray import serve

from deployments.audio import decode_audio
from deployments.chunking import SpeechChunker
from deployments.types import DecodedAudio
from serve_app.config import ChunkingConfig


@serve.deployment(max_ongoing_requests=16)
class AudioDecoder:
    """Decoding and voice activity detection are CPU work apart from the model, so they scale on their own."""

    def __init__(self, config: ChunkingConfig) -> None:
        self.chunker = SpeechChunker(use_vad=config.vad_filter, max_chunk_s=config.max_chunk_s)

    async def decode(self, source: bytes | str) -> DecodedAudio:
        """Decode `source` and find its chunks."""
        return await asyncio.to_thread(self._decode_and_chunk, source)

    def _decode_and_chunk(self, source: bytes | str) -> DecodedAudio:
        audio = decode_audio(source)
        return DecodedAudio(audio.samples, tuple(self.chunker.chunks(audio.samples)))
