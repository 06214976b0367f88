"""A corpus of hostile and broken requests for the transcription endpoints, built in code so that it is
reproducible and needs no binary files: each entry is the multipart parts (or raw body) of one request,
and the 4xx status it must get."""

import io
import os
import wave
from dataclasses import dataclass, field
from fractions import Fraction

import av
import numpy as np

from deployments.files.decoding import decode_audio
from devkit.media import encode, pyannote_sample


@dataclass
class HostileRequest:
    name: str
    status: int
    in_the_audio: bool = False
    """The form is fine and only decoding fails: an async job is accepted and then ends in `error`."""
    files: dict | list | None = None
    data: dict | None = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


def video_without_audio() -> bytes:
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=5)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for index in range(10):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), index * 20, dtype=np.uint8), format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, 5)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return buffer.getvalue()


def _zero_sample_wav() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16_000)
    return buffer.getvalue()


def corpus() -> list[HostileRequest]:
    speech = decode_audio(pyannote_sample()).samples[6 * 16_000 : 13 * 16_000]
    mp3 = encode(speech, "mp3")
    junk = os.urandom(4096)
    boundary = "hostile-boundary"
    return [
        HostileRequest("truncated mp3 (headers only)", 400, True, files={"file": ("a.mp3", mp3[:400])}),
        *[
            HostileRequest(f"random bytes named .{ext}", 400, True, files={"file": (f"a.{ext}", junk)})
            for ext in ("mp3", "wav", "m4a", "flac", "ogg", "mp4", "mkv")
        ],
        HostileRequest("video without an audio track", 400, True, files={"file": ("a.mp4", video_without_audio())}),
        HostileRequest("empty file", 400, files={"file": ("a.wav", b"")}),
        HostileRequest("zero-sample wav", 400, True, files={"file": ("a.wav", _zero_sample_wav())}),
        HostileRequest("too short (0.1 s)", 400, True, files={"file": ("a.wav", encode(speech[:1600], "wav"))}),
        HostileRequest(
            "huge declared size",
            413,
            content=b"--x\r\n",
            headers={"Content-Type": "multipart/form-data; boundary=x", "Content-Length": str(10**12)},
        ),
        HostileRequest("text/plain body", 415, content=b"file=a.wav", headers={"Content-Type": "text/plain"}),
        HostileRequest("json body", 415, content=b'{"file": "a"}', headers={"Content-Type": "application/json"}),
        HostileRequest(
            "multipart without a boundary", 400, content=b"xx", headers={"Content-Type": "multipart/form-data"}
        ),
        HostileRequest(
            "malformed multipart",
            400,
            content=f"--{boundary}\r\nContent-Disposition: form-data\r\n\r\nno name\r\n--{boundary}--".encode()
            + b"\r\n--garbage",
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        ),
        HostileRequest(
            "non-UTF-8 filename",
            400,
            True,
            content=(
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="'.encode()
                + b'\xff\xfe\xfa.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n'
                + junk
                + f"\r\n--{boundary}--\r\n".encode()
            ),
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        ),
        HostileRequest("path-traversal filename", 400, True, files={"file": ("../../../../etc/passwd", junk)}),
        HostileRequest("absolute filename", 400, True, files={"file": ("/tmp/stt-pwned.wav", junk)}),
        HostileRequest("two files", 400, files=[("file", ("a.wav", junk)), ("file", ("b.wav", junk))]),
        HostileRequest("file in another field", 400, files={"audio": ("a.wav", junk)}),
        HostileRequest("100 KB prompt", 413, files={"file": ("a.mp3", mp3)}, data={"prompt": "x" * 100_000}),
        HostileRequest("5000-character prompt", 422, files={"file": ("a.mp3", mp3)}, data={"prompt": "x" * 5000}),
        HostileRequest("too many fields", 400, files={"file": ("a.mp3", mp3)}, data={f"f{i}": "1" for i in range(40)}),
        *[
            HostileRequest(f"num_speakers={value}", 422, files={"file": ("a.mp3", mp3)}, data={"num_speakers": value})
            for value in ("NaN", "-1", "0", "1e309", "2.5", "999")
        ],
        HostileRequest("temperature=inf", 422, files={"file": ("a.mp3", mp3)}, data={"temperature": "inf"}),
        HostileRequest("unknown language", 422, files={"file": ("a.mp3", mp3)}, data={"language": "xx-evil"}),
        HostileRequest("javascript: url", 422, data={"url": "javascript:alert(1)"}),
        HostileRequest("file:// url", 422, data={"url": "file:///etc/passwd"}),
        HostileRequest("url to a private address", 400, data={"url": "http://192.168.0.1/a.mp3"}),
        HostileRequest("3000-character url", 422, data={"url": "https://example.com/" + "a" * 3000}),
        HostileRequest("neither file nor url", 422, data={"model": "whisper-1"}),
    ]
