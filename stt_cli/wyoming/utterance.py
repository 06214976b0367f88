"""One utterance's audio as Wyoming sends it (`audio-chunk`s of any rate, width and channels), converted to
16 kHz 16-bit mono as it arrives and kept to be uploaded as one WAV file when `audio-stop` comes."""

import io
import wave

from wyoming.audio import AudioChunk, AudioChunkConverter

RATE, WIDTH, CHANNELS = 16_000, 2, 1
"""What Whisper reads: converting here keeps the upload small and lets chunks of mixed formats join."""


class UtteranceTooLongError(ValueError):
    """More audio than one utterance may hold."""


class Utterance:
    def __init__(self, max_seconds: float) -> None:
        self.max_bytes = int(max_seconds * RATE) * WIDTH * CHANNELS
        self.max_seconds = max_seconds
        self.converter = AudioChunkConverter(rate=RATE, width=WIDTH, channels=CHANNELS)
        self.pcm = bytearray()

    def add(self, chunk: AudioChunk) -> None:
        audio = self.converter.convert(chunk).audio
        if len(self.pcm) + len(audio) > self.max_bytes:
            raise UtteranceTooLongError(f"the utterance is longer than {self.max_seconds:g} s")
        self.pcm += audio

    @property
    def seconds(self) -> float:
        return len(self.pcm) / (RATE * WIDTH * CHANNELS)

    def wav(self) -> bytes:
        file = io.BytesIO()
        with wave.open(file, "wb") as framed:
            framed.setframerate(RATE)
            framed.setsampwidth(WIDTH)
            framed.setnchannels(CHANNELS)
            framed.writeframes(bytes(self.pcm))
        return file.getvalue()
