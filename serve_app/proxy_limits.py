"""Limits that Ray Serve's HTTP proxy enforces on request headers, before a request reaches any replica.

The proxy's server (uvicorn with httptools) reads request headers without a size limit or a time limit:
an unauthenticated client could send a 64 MB header, be read to the end, and leave the proxy 200 MB
larger. Serve's config has no setting for this, but the proxy calls a function named by the environment
variable `RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH` when it starts. Set to `serve_app.proxy_limits:install`,
that function makes uvicorn use `HeaderLimitedProtocol`, which:
- answers 431 with a JSON `detail` as soon as a request's headers pass `max_header_bytes` (64 KB), without
  reading them further (what arrives until the connection closes is dropped, not kept);
- answers 408 and closes a connection whose request headers are not complete after `headers_timeout_s`
  (a slow-headers client holds one socket of the proxy for that long, and never a replica).

This reaches inside uvicorn (its protocol registry and httptools protocol class), so uvicorn and httptools
are pinned in pyproject.toml and tests/test_proxy_limits.py checks the contract.
"""

import asyncio
import json
import logging
from typing import Any

import uvicorn.config
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

logger = logging.getLogger("ray.serve")

CALLBACK_ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
CALLBACK = "serve_app.proxy_limits:install"


class ProxyLimits(BaseSettings):
    """Read once, in the proxy's process, when `install` runs."""

    model_config = SettingsConfigDict(env_prefix="STT_PROXY_")

    max_header_bytes: int = Field(64 * 1024, gt=0, description="STT_PROXY_MAX_HEADER_BYTES: request line + headers.")
    headers_timeout_s: float = Field(
        30.0, gt=0, description="STT_PROXY_HEADERS_TIMEOUT_S: how long a request's headers may take to arrive."
    )
    linger_s: float = Field(
        2.0, gt=0, description="How long a refused connection stays open (input dropped) so the client reads why."
    )


class HeaderLimitedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a size and a time limit on each request's headers."""

    limits = ProxyLimits.model_construct()  # the defaults; `install` reads the environment's

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # uvicorn's own signature
        super().__init__(*args, **kwargs)
        self.reading_headers = True
        self.header_bytes = 0
        self.tail = b""  # the last bytes seen, to find a header end split between two reads
        self.headers_timer: asyncio.TimerHandle | None = None
        self.refused = False

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return  # dropped: the answer is sent, the connection closes after the linger
        if self.reading_headers:
            if self.headers_timer is None:
                self.headers_timer = self.loop.call_later(self.limits.headers_timeout_s, self._headers_too_slow)
            seen = self.tail + data
            end = seen.find(b"\r\n\r\n")
            self.header_bytes += len(data) if end < 0 else max(0, end + 4 - len(self.tail))
            self.tail = seen[-3:]
            if self.header_bytes > self.limits.max_header_bytes:
                limit_kb = self.limits.max_header_bytes // 1024
                self._refuse(
                    431, "Request Header Fields Too Large", f"request headers too large: at most {limit_kb} KB"
                )
                return
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._headers_done()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.reading_headers = True  # a next request on this connection starts with its headers
        self.header_bytes, self.tail = 0, b""

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_done()
        super().connection_lost(exc)

    def _headers_done(self) -> None:
        self.reading_headers = False
        if self.headers_timer is not None:
            self.headers_timer.cancel()
            self.headers_timer = None

    def _headers_too_slow(self) -> None:
        self.headers_timer = None
        if self.reading_headers and not self.transport.is_closing():
            self._refuse(
                408, "Request Timeout", f"request headers not received within {self.limits.headers_timeout_s:g} s"
            )

    def _refuse(self, status: int, reason: str, detail: str) -> None:
        """Answer now, drop whatever else arrives, and close after a short linger: closing at once with
        unread input would reset the connection before the client reads the answer."""
        self.refused = True
        self._headers_done()
        body = json.dumps({"detail": detail}).encode()
        head = (
            f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode() + body)
        self.loop.call_later(self.limits.linger_s, self.transport.close)
        logger.warning("refused a request with %d: %s (client %s)", status, detail, self.client)


def install() -> list[Any]:
    """The proxy's start-up callback: uvicorn's default ("auto") HTTP protocol becomes the limited one.
    Returns the ASGI middlewares the callback must return: none."""
    HeaderLimitedProtocol.limits = ProxyLimits()
    uvicorn.config.HTTP_PROTOCOLS["auto"] = f"{__name__}:HeaderLimitedProtocol"
    logger.info("request headers limited to %d bytes and %g s", HeaderLimitedProtocol.limits.max_header_bytes,
                HeaderLimitedProtocol.limits.headers_timeout_s)  # fmt: skip
    return []
