"""This service's HTTP app: the plumbing every protocol shares (`serve_app.common.factory`) over the routers of
each client protocol it speaks. A protocol is a package of its own (its routes, schemas and sessions, and where
it needs them its error shape, callback format and settings section: `serve_app.common.edge`); adding one is that
package and a line in `EDGES` (docs/develop/adding-a-protocol.md)."""

from collections.abc import Iterable

from fastapi import FastAPI

from serve_app.admin import routes as admin
from serve_app.asr_webservice import routes as asr_webservice
from serve_app.assemblyai import routes as assemblyai
from serve_app.common import factory
from serve_app.common.edge import CallbackFormat, Edge
from serve_app.common.services import Services
from serve_app.config import AppConfig
from serve_app.deepgram import routes as deepgram
from serve_app.live import route as live
from serve_app.realtime import route as realtime
from serve_app.rest import routes as rest
from serve_app.voices import routes as voices
from serve_app.web import route as web

EDGES: tuple[Edge, ...] = (
    Edge(rest.router),  # the nexara/OpenAI REST API
    Edge(web.router),  # the try-it page
    Edge(live.router),  # the nexara live WebSocket
    Edge(realtime.router),  # OpenAI realtime transcription sessions
    Edge(admin.router),  # API keys managed at run time
    Edge(voices.router),  # enrolled voices, named in diarized transcripts
    asr_webservice.EDGE,  # whisper-asr-webservice's /asr for subtitle tools (off unless enabled)
    assemblyai.EDGE,  # AssemblyAI's API: uploads, transcripts on our jobs, LeMUR on our Analyzer
    deepgram.EDGE,  # Deepgram's /v1/listen, pre-recorded and live
)

CALLBACK_FORMATS: dict[str, CallbackFormat] = dict(edge.callbacks for edge in EDGES if edge.callbacks is not None)
"""How each protocol's job callbacks are delivered, by the name its jobs carry (`serve_app.callbacks.sender`)."""


def app_args(edges: Iterable[Edge], name: str) -> type[AppConfig]:
    """`AppConfig` with the settings section each edge names, in the edges' order."""
    return AppConfig.with_sections(name, __name__, (edge.config for edge in edges if edge.config is not None))


AppArgs = app_args(EDGES, "AppArgs")
"""The Serve config's `applications[].args`: `AppConfig` with each protocol's section, as its Edge names it. What
the application builder validates the args against, and what the configuration reference is generated from."""


def create_app(services: Services) -> FastAPI:
    return factory.create_app(services, EDGES)
