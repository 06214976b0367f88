"""The service's REST API as `stt wyoming` uses it: its models, and one utterance transcribed, its text
streamed as the service's server-sent events (`stream=true`) deliver it."""

import json
from collections.abc import AsyncIterator

import httpx

from stt_cli.api import TRANSCRIPTIONS, SttApi
from stt_cli.wire import ModelList


class TranscriptionFailedError(RuntimeError):
    """The service refused or failed the utterance; the message is its `detail`."""


class Service:
    def __init__(self, base_url: str, api_key: str, timeout_s: float = 120) -> None:
        self.base_url, self.api_key, self.timeout_s = base_url, api_key, timeout_s

    def models(self) -> ModelList:
        with SttApi(self.base_url, self.api_key, self.timeout_s) as api:
            return api.models()

    async def transcribe(self, wav: bytes, form: dict[str, str]) -> AsyncIterator[str]:
        """The utterance's text in pieces, in order, as the service finishes them; joined they are the text."""
        headers = {"Authorization": f"Bearer {self.api_key}"}
        files = {"file": ("utterance.wav", wav, "audio/wav")}
        data = {**form, "response_format": "json", "stream": "true"}
        async with (
            httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=self.timeout_s) as http,
            http.stream("POST", TRANSCRIPTIONS, data=data, files=files) as response,
        ):
            if not response.is_success:
                await response.aread()
                SttApi._checked(response)
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line.removeprefix("data: "))
                if event.get("type") == "transcript.text.delta":
                    yield str(event["delta"])
                elif event.get("type") == "error":
                    raise TranscriptionFailedError(str(event.get("error", {}).get("message", event)))
