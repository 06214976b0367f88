"""What a client protocol hands the app besides its routes: the shape of its error bodies, how its jobs'
callbacks are delivered, and its settings' section of the Serve config. `serve_app/http_app.py` lists one `Edge`
per protocol; the protocols this service speaks natively need none of them (errors are `{"detail": ...}`,
callbacks are the signed job object, settings are `AppConfig`'s own)."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from deployments.callbacks.store import CallbackState
from deployments.jobs.records import Job
from serve_app.config import Section

ErrorBody = Callable[[int, str], Any]
"""The JSON body a protocol answers an error with, from the status and what went wrong (already a sentence
that tells the caller what to fix)."""


@dataclass(frozen=True)
class ErrorShape:
    """Errors on paths under `prefixes` (after the `/api` alias is removed) take `body`'s shape."""

    prefixes: tuple[str, ...]
    body: ErrorBody

    def covers(self, path: str) -> bool:
        return any(path == prefix or path.startswith(prefix.rstrip("/") + "/") for prefix in self.prefixes)


@dataclass(frozen=True)
class Delivery:
    """One callback's POST: its body and headers, and whether the service signs it (the job callbacks of our
    own API are signed; other protocols' webhooks carry what that protocol carries, e.g. a header the caller
    named)."""

    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    signed: bool = False


CallbackFormat = Callable[[Job, CallbackState], Delivery]
"""How a protocol delivers a finished job's callback. A job names its protocol by `request.render["protocol"]`
(the edge's opaque render dict); a job without one gets our own signed job object."""


@dataclass(frozen=True)
class Edge:
    """One client protocol as the app serves it."""

    router: APIRouter
    errors: ErrorShape | None = None
    callbacks: tuple[str, CallbackFormat] | None = None
    """The name jobs of this protocol carry in `render["protocol"]`, and how their callbacks are delivered."""
    config: Section[BaseModel] | None = None
    """The protocol's settings (`serve_app/<protocol>/config.py`): a section of the app's configuration, added by
    naming it here (`serve_app.http_app.AppArgs`), read by the protocol with `Section.of`."""


PROTOCOL_KEY = "protocol"
"""The key of a job's render dict that names the protocol that submitted it (absent: ours)."""
