"""Counts every HTTP answer by route template, method and status (`stt_http_requests`).

The route is the matched route's template (`/v1/audio/transcriptions/async/{job_id}`), never the raw path,
so that the metric's label values stay few whatever clients send.
"""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deployments.metrics import HttpMetrics

UNMATCHED = "unmatched"


class RequestMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.metrics = HttpMetrics()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # unless a response starts: an error that escapes is answered 500 further out

        async def send_and_note_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note_status)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", UNMATCHED)
            tags = {"route": template, "method": scope["method"], "status": str(status)}
            self.metrics.requests.inc(tags=tags)
