"""The header limits of Serve's proxy (serve_app/proxy_limits.py), on a real uvicorn server in this process:
the contract with uvicorn (its protocol registry, the httptools protocol it subclasses) and the behaviour."""

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
import uvicorn.config
from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from serve_app.proxy_limits import HeaderLimitedProtocol, ProxyLimits, install


async def _app(scope, receive, send) -> None:
    assert scope["type"] == "http"
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = str(size).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def server_port() -> Iterator[int]:
    HeaderLimitedProtocol.limits = ProxyLimits(headers_timeout_s=1.0, linger_s=0.5)
    config = uvicorn.Config(_app, http=HeaderLimitedProtocol, log_level="error", lifespan="off")
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(5)
    HeaderLimitedProtocol.limits = ProxyLimits.model_construct()


def _exchange(port: int, request: bytes, responses: int = 1) -> list[bytes]:
    """Send `request`, and read until `responses` answers or the close."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # refused before all of it was sent
            client.sendall(request)
        received = b""
        while received.count(b"HTTP/1.1 ") < responses:
            try:
                data = client.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not data:
                break
            received += data
    return [b"HTTP/1.1 " + part for part in received.split(b"HTTP/1.1 ")[1:]]


def _get(headers: bytes = b"", body: bytes = b"") -> bytes:
    return b"POST /v1/x HTTP/1.1\r\nhost: t\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), headers, body)


def test_install_makes_it_uvicorns_default_protocol_over_httptools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(uvicorn.config.HTTP_PROTOCOLS, "auto", uvicorn.config.HTTP_PROTOCOLS["auto"])
    monkeypatch.setattr(HeaderLimitedProtocol, "limits", HeaderLimitedProtocol.limits)
    monkeypatch.setenv("STT_PROXY_MAX_HEADER_BYTES", "32768")
    assert AutoHTTPProtocol is HttpToolsProtocol  # what "auto" meant before: the class we extend
    assert install() == []  # Serve's proxy callback: no middlewares
    config = uvicorn.Config(_app)
    config.load()
    assert config.http_protocol_class is HeaderLimitedProtocol
    assert HeaderLimitedProtocol.limits.max_header_bytes == 32768


def test_headers_over_the_limit_get_431_with_a_json_detail_and_reach_no_app(server_port: int) -> None:
    (answer,) = _exchange(server_port, _get(b"x-big: " + b"a" * 100_000 + b"\r\n"))
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert answer.endswith(b'{"detail": "request headers too large: at most 64 KB"}')


def test_a_header_sent_forever_is_dropped_not_kept(server_port: int) -> None:
    """64 MB of one header: answered 431 after the first 64 KB, and the rest is never buffered."""
    with socket.create_connection(("127.0.0.1", server_port), timeout=5) as client:
        client.sendall(b"GET / HTTP/1.1\r\nhost: t\r\nx-big: ")
        started, sent = time.monotonic(), 0
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            while sent < 64 * 1024**2:
                sent += client.send(b"a" * 65536)
        assert time.monotonic() - started < 10


def test_headers_under_the_limit_and_large_bodies_pass(server_port: int) -> None:
    (answer,) = _exchange(server_port, _get(b"x-fine: " + b"a" * 40_000 + b"\r\n"))
    assert answer.startswith(b"HTTP/1.1 200 ")
    (answer,) = _exchange(server_port, _get(body=b"b" * 1_000_000))  # the first reads hold headers and body
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"1000000")


def test_the_limit_is_per_request_on_a_kept_alive_connection(server_port: int) -> None:
    request = _get(b"x-fine: " + b"a" * 40_000 + b"\r\n")
    answers = _exchange(server_port, request * 3, responses=3)
    assert [answer[:12] for answer in answers] == [b"HTTP/1.1 200"] * 3


def test_headers_that_trickle_in_get_408_and_the_connection_closes(server_port: int) -> None:
    started = time.monotonic()
    (answer,) = _exchange(server_port, b"GET / HTTP/1.1\r\nhost: t\r\nx-slow: a")  # and nothing more
    assert answer.startswith(b"HTTP/1.1 408 ") and b"request headers not received within 1 s" in answer
    assert 0.9 < time.monotonic() - started < 5
