"""This service's HTTP app: the plumbing every protocol shares (`serve_app.common.factory`) over the routers of
each client protocol it speaks. A protocol is a package of its own (its routes, schemas and sessions); adding one
is that package and a line in `ROUTERS`."""

from fastapi import APIRouter, FastAPI

from serve_app.admin import routes as admin
from serve_app.common import factory
from serve_app.common.services import Services
from serve_app.live import route as live
from serve_app.realtime import route as realtime
from serve_app.rest import routes as rest
from serve_app.web import route as web

ROUTERS: tuple[APIRouter, ...] = (
    rest.router,  # the nexara/OpenAI REST API
    web.router,  # the try-it page
    live.router,  # the nexara live WebSocket
    realtime.router,  # OpenAI realtime transcription sessions
    admin.router,  # API keys managed at run time
)


def create_app(services: Services) -> FastAPI:
    return factory.create_app(services, ROUTERS)
