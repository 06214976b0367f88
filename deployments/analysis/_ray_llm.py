"""The Ray Serve LLM backend: chat completions from a `ray.serve.llm` (vLLM) deployment in the same application,
called through its DeploymentHandle, with `response_format={"type": "json_schema", ...}` for schemas (vLLM's
guided decoding). No HTTP hop, and Serve balances the calls over the LLM's replicas.

`complete` runs in a worker thread (the Analyzer runs analyses with `asyncio.to_thread`), so it iterates the
handle's response synchronously. `LLMServer.chat` is an async generator: the call needs `stream=True`, and a
request that does not stream yields one `ChatCompletionResponse`, or an `ErrorResponse`.
"""

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from deployments.analysis.backends import Completion, Message
from deployments.analysis.errors import AnalysisTimeout, LLMBackendError
from deployments.config import AnalysisConfig

CHARS_PER_TOKEN = 3
"""The handle does not tokenize for us: the same conservative estimate as the OpenAI-compatible backend's."""


def _chat_completion_request() -> Callable[..., Any]:
    """vLLM's request model, which the LLMServer's engine requires (a dict is not accepted); importable only
    where `ray[llm]` is installed: in the Analyzer's replica on the cluster."""
    from ray.serve.llm.openai_api_models import ChatCompletionRequest

    return ChatCompletionRequest


class RayLLMBackend:
    def __init__(self, config: AnalysisConfig, handle: Any, request_type: Callable[..., Any] | None = None) -> None:
        self.context_tokens = config.context_tokens
        self.model = config.model
        self.timeout_s = config.request_timeout_s
        self.handle = handle.options(stream=True)
        self.request_type = request_type or _chat_completion_request()

    def count_tokens(self, text: str) -> int:
        return len(text) // CHARS_PER_TOKEN + 1

    def complete(self, messages: list[Message], json_schema: dict[str, Any] | None, max_tokens: int) -> Completion:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": 0}
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": json_schema, "strict": True},
            }
        try:
            request = self.request_type(**body)
        except Exception as error:  # the request model refused it (e.g. a schema it cannot take)
            raise LLMBackendError(f"the LLM deployment cannot take this request: {error}") from error
        answers = self.handle.chat.remote(request)
        gave_up = threading.Event()

        def give_up() -> None:  # a call that never returns would hold the Analyzer's lock: cancel it
            gave_up.set()
            answers.cancel()

        timer = threading.Timer(self.timeout_s, give_up)
        timer.daemon = True
        timer.start()
        try:
            received = list(_flatten(answers))  # one answer: the request does not stream
        except (Exception, asyncio.CancelledError) as error:  # a cancelled call raises either
            if gave_up.is_set():
                raise AnalysisTimeout(f"the LLM deployment did not answer in {self.timeout_s:g} s") from error
            raise LLMBackendError(f"the LLM deployment failed: {type(error).__name__}: {error}") from error
        finally:
            timer.cancel()
        return self._completion(received[0] if received else None)

    def _completion(self, answer: Any) -> Completion:
        if answer is None:
            raise LLMBackendError("the LLM deployment answered nothing")
        error = getattr(answer, "error", None)
        if error is not None:  # an ErrorResponse: {"error": {"message", "type", "code"}}
            message, code = getattr(error, "message", error), getattr(error, "code", "")
            raise LLMBackendError(f"the LLM deployment answered an error {code}: {str(message)[:300]}")
        try:
            text = answer.choices[0].message.content or ""
            usage = answer.usage
        except (AttributeError, IndexError, TypeError) as failure:
            raise LLMBackendError(f"the LLM deployment's answer is not a chat completion: {failure}") from failure
        return Completion(
            text.strip(),
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or self.count_tokens(text)),
        )

    def close(self) -> None:
        """Nothing to release: the handle belongs to Serve."""


def _flatten(answers: Any) -> Any:
    """The answers one by one: a streamed response with batching yields lists of them."""
    for answer in answers:
        if isinstance(answer, list):
            yield from answer
        else:
            yield answer
