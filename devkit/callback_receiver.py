"""A job callback receiver on loopback, for the tests and scripts/bench_callbacks.py: it records every request
(its arrival time, headers and body) and answers 200, or an error status the next N times when told to. It can
be stopped and started again on the same port (a receiver that is down refuses connections)."""

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


@dataclass(frozen=True)
class Received:
    arrived_at: float
    """time.time() when the body had been read."""
    path: str
    headers: dict[str, str]
    body: bytes


class CallbackReceiver:
    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.requests: list[Received] = []
        self._failures: list[int] = []
        self._lock = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._holder: socket.socket | None = None  # keeps the port while the receiver is down
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def fail_next(self, times: int, status: int = 500) -> None:
        """Answer `status` to the next `times` requests."""
        with self._lock:
            self._failures += [status] * times

    def start(self) -> "CallbackReceiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name for it
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver._lock:
                    status = receiver._failures.pop(0) if receiver._failures else 200
                    receiver.requests.append(Received(time.time(), self.path, dict(self.headers.items()), body))
                    receiver._lock.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._release()
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Down: connections are refused until `start` again, on the same port, which a socket bound to it and not
        listening keeps meanwhile (once free, a restarted service's processes took it: `Address already in use`)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            self._holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._holder.bind(("127.0.0.1", self.port))

    def close(self) -> None:
        """Down for good: the port is free."""
        self.stop()
        self._release()

    def _release(self) -> None:
        if self._holder is not None:
            self._holder.close()
            self._holder = None

    def wait_for(self, count: int, timeout_s: float) -> list[Received]:
        """The requests once there are at least `count` (fewer after `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while len(self.requests) < count and (left := deadline - time.monotonic()) > 0:
                self._lock.wait(left)
            return list(self.requests)

    def __enter__(self) -> "CallbackReceiver":
        return self.start()

    def __exit__(self, kind: type | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.close()


@contextmanager
def callback_receiver() -> Iterator[CallbackReceiver]:
    with CallbackReceiver() as receiver:
        yield receiver
