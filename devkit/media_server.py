"""A small HTTP server on loopback that plays the parts of the web a `url` may point at."""

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np

from deployments.files.decoding import decode_audio
from devkit.media import encode, pyannote_sample


def _routes() -> dict[str, tuple[int, dict[str, str], bytes]]:
    speech = encode(decode_audio(pyannote_sample()).samples[6 * 16_000 : 13 * 16_000], "mp3")
    return {
        "/speech.mp3": (200, {"Content-Type": "audio/mpeg"}, speech),
        "/redirect-to-speech": (302, {"Location": "/speech.mp3"}, b""),
        "/redirect-to-metadata": (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""),
        "/redirect-loop": (302, {"Location": "/redirect-loop"}, b""),
        "/page.html": (200, {"Content-Type": "text/html"}, b"<html><body>not audio</body></html>"),
        "/big.wav": (200, {"Content-Type": "audio/wav"}, encode(np.zeros(16_000 * 300, np.float32), "wav")),
        "/empty.wav": (200, {"Content-Type": "audio/wav"}, b""),
    }


class _Handler(BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, dict[str, str], bytes]]] = {}

    def do_GET(self) -> None:
        if self.path == "/slow":
            time.sleep(5)
        status, headers, body = self.routes.get(self.path, (404, {}, b"not found"))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up: a limit, a time-out
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def media_server() -> Iterator[str]:
    """Yields the server's base URL, e.g. http://127.0.0.1:40123."""
    _Handler.routes = _routes()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
