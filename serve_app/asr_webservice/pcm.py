"""`encode=false`: the upload is raw 16 kHz mono s16le PCM (Bazarr pipes ffmpeg's output so), which has no
container for the decoder to read. It is framed as a WAV file in the spool, copied a block at a time in a
thread, so the ingress never holds the audio."""

import struct
from pathlib import Path

from fastapi import HTTPException, status

SAMPLE_RATE = 16_000
BYTES_PER_SAMPLE = 2
COPY_BLOCK_BYTES = 1024 * 1024


def wav_header(data_bytes: int) -> bytes:
    """A canonical 44-byte header of 16-bit mono PCM at SAMPLE_RATE holding `data_bytes` of samples."""
    rate = SAMPLE_RATE * BYTES_PER_SAMPLE
    fmt = struct.pack("<HHIIHH", 1, 1, SAMPLE_RATE, rate, BYTES_PER_SAMPLE, 8 * BYTES_PER_SAMPLE)
    return (
        b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE"
        + b"fmt " + struct.pack("<I", len(fmt)) + fmt
        + b"data" + struct.pack("<I", data_bytes)
    )  # fmt: skip


def frame_as_wav(path: Path, max_seconds: float | None = None) -> None:
    """Rewrite the raw PCM at `path` as a WAV file (whole samples; with `max_seconds`, only the first that many
    seconds). No samples: 400."""
    data_bytes = path.stat().st_size // BYTES_PER_SAMPLE * BYTES_PER_SAMPLE
    if max_seconds is not None:
        data_bytes = min(data_bytes, int(max_seconds * SAMPLE_RATE) * BYTES_PER_SAMPLE)
    if data_bytes == 0:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the uploaded audio has no samples (encode=false: raw PCM)")
    framed = path.with_name(path.name + ".wav-part")
    try:
        with path.open("rb") as raw, framed.open("wb") as wav:
            wav.write(wav_header(data_bytes))
            left = data_bytes
            while left > 0:
                block = raw.read(min(COPY_BLOCK_BYTES, left))
                wav.write(block)
                left -= len(block)
        framed.replace(path)
    finally:
        framed.unlink(missing_ok=True)
