"""A small OpenAI-compatible server over the embedded model, for the openai backend's tests and the benchmark
(cyllama's own servers ignore `response_format`, and llama.cpp's llama-server ships in no wheel here).

It implements what the backend uses of `/v1/chat/completions` faithfully: messages through the model's chat
template, `max_tokens`, `response_format` {"type": "json_schema", "json_schema": {"schema": ...}} as a grammar,
`usage` token counts, OpenAI's error shape for a bad request; plus `/v1/models`.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deployments.analysis.backends import LLMBackend


def serve(backend: LLMBackend, model: str = "smollm2-135m") -> ThreadingHTTPServer:
    """Start the server on a free loopback port in a daemon thread; `server.shutdown()` stops it."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self.send(200, {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "local"}]})
            else:
                self.send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self.send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                return
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                messages = [{"role": m["role"], "content": m["content"]} for m in request["messages"]]
                schema = None
                response_format = request.get("response_format") or {"type": "text"}
                if response_format["type"] == "json_schema":
                    schema = response_format["json_schema"]["schema"]
                elif response_format["type"] != "text":
                    raise ValueError(f"unsupported response_format {response_format['type']}")
            except (ValueError, KeyError, TypeError) as error:
                self.send(400, {"error": {"message": str(error), "type": "invalid_request_error"}})
                return
            completion = backend.complete(messages, schema, int(request.get("max_tokens") or 256))
            self.send(
                200,
                {
                    "id": f"chatcmpl-{time.monotonic_ns()}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": request.get("model", model),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": completion.text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": completion.input_tokens,
                        "completion_tokens": completion.output_tokens,
                        "total_tokens": completion.input_tokens + completion.output_tokens,
                    },
                },
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
