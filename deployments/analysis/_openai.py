"""The OpenAI-compatible backend: `/v1/chat/completions` on any server (vLLM, llama.cpp's llama-server, OpenAI),
with `response_format={"type": "json_schema", ...}` for schemas. Plain httpx: one POST per completion."""

import os
from typing import Any

import httpx

from deployments.analysis.backends import Completion, Message
from deployments.analysis.errors import AnalysisTimeout, LLMBackendError
from deployments.config import AnalysisConfig

CHARS_PER_TOKEN = 3
"""A server does not tokenize for us: a conservative estimate (most tokenizers average 3-4 characters)."""


class OpenAIBackend:
    def __init__(self, config: AnalysisConfig) -> None:
        self.context_tokens = config.context_tokens
        self.model = config.model
        api_key = os.environ.get(config.api_key_env, "")  # read once, here; never logged
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(
            base_url=config.base_url.rstrip("/"), headers=headers, timeout=config.request_timeout_s
        )

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
            response = self.client.post("/chat/completions", json=body)
        except httpx.TimeoutException as error:
            raise AnalysisTimeout(f"LLM server did not answer in time: {error}") from error
        except httpx.HTTPError as error:
            raise LLMBackendError(f"LLM server unreachable: {error}") from error
        if response.status_code != 200:
            raise LLMBackendError(f"LLM server answered {response.status_code}: {response.text[:300]}")
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"] or ""
            usage = data.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise LLMBackendError(f"LLM server's answer is not a chat completion: {error}") from error
        return Completion(
            text.strip(),
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or self.count_tokens(text)),
        )

    def close(self) -> None:
        self.client.close()
