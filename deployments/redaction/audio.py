"""The redacted audio (AssemblyAI's `redact_pii_audio`): the recording, 16 kHz mono, with a 1 kHz tone in place
of every redacted word, written as MP3 or WAV by PyAV. Read from the run's decoded copy, a window at a time, so a
long file never sits in memory whole."""

from pathlib import Path

import av
import numpy as np

from deployments.types import SAMPLE_RATE, PipelineResult

TONE_HZ = 1000.0
TONE_LEVEL = 0.25
PAD_S = 0.05
"""Each redacted word's span widened by this much on either side: Whisper's word times are about that loose."""
WINDOW = SAMPLE_RATE * 30
CODECS = {"mp3": ("mp3", "libmp3lame", "s16p"), "wav": ("wav", "pcm_s16le", "s16")}


def redacted_spans(before: PipelineResult, after: PipelineResult) -> list[tuple[float, float]]:
    """The times of the words redaction changed (a word that took in the rest of its entity, its new end), merged
    where they touch."""
    written = {word.start: word.word for word in before.words}
    spans: list[tuple[float, float]] = []
    for word in after.words:
        if written.get(word.start) == word.word:
            continue
        start, end = max(0.0, word.start - PAD_S), word.end + PAD_S
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return spans


def beeped(samples: np.ndarray, offset: int, spans: list[tuple[float, float]]) -> np.ndarray:
    """`samples` (starting `offset` samples into the recording) with the spans' samples replaced by the tone."""
    out = samples.copy()
    for start_s, end_s in spans:
        start = max(int(start_s * SAMPLE_RATE) - offset, 0)
        end = min(int(end_s * SAMPLE_RATE) - offset, len(out))
        if start < end:
            at = np.arange(start + offset, end + offset) / SAMPLE_RATE
            out[start:end] = TONE_LEVEL * np.sin(2 * np.pi * TONE_HZ * at)
    return out


def write_redacted_audio(decoded: Path, spans: list[tuple[float, float]], target: Path, audio_format: str) -> None:
    """The decoded copy (float32 16 kHz mono) with the tone over `spans`, encoded to `target`."""
    container_format, codec, sample_format = CODECS[audio_format]
    samples = np.memmap(decoded, dtype=np.float32, mode="r")
    partial = target.with_name(target.name + ".part")
    with av.open(str(partial), "w", format=container_format) as output:
        stream = output.add_stream(codec, rate=SAMPLE_RATE, layout="mono")
        assert isinstance(stream, av.AudioStream)
        resampler = av.AudioResampler(format=sample_format, layout="mono", rate=SAMPLE_RATE)
        for offset in range(0, len(samples), WINDOW):
            window = beeped(np.asarray(samples[offset : offset + WINDOW]), offset, spans)
            frame = av.AudioFrame.from_ndarray(window.reshape(1, -1).astype(np.float32), format="flt", layout="mono")
            frame.sample_rate = SAMPLE_RATE
            for converted in resampler.resample(frame):
                output.mux(stream.encode(converted))
        for converted in resampler.resample(None):
            output.mux(stream.encode(converted))
        output.mux(stream.encode(None))
    partial.replace(target)
