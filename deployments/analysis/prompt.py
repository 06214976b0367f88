"""The client's prompt answered over the transcript: text, or with a JSON schema an object valid against it."""

import json
from typing import Any

from deployments.analysis._calls import Session
from deployments.analysis._transcript import fit, lines
from deployments.types import DiarizedTranscript, Transcript

SYSTEM = (
    "You read a conversation transcript and follow the user's instruction about it."
    " Answer in the language of the instruction, from the transcript only."
)


def answer(
    session: Session,
    transcript: Transcript | DiarizedTranscript,
    prompt: str,
    json_schema: dict[str, Any] | None,
    max_tokens: int,
) -> str | dict[str, Any]:
    overhead = session.backend.count_tokens(SYSTEM + prompt + json.dumps(json_schema or {})) + 64
    budget = session.backend.context_tokens - overhead - max_tokens
    text = fit(lines(transcript), max(budget, 64), session.backend.count_tokens)
    user = f"Transcript:\n{text}\n\nInstruction: {prompt}"
    if json_schema is None:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
        return session.complete(messages, None, max_tokens).text
    user += f"\n\nAnswer with JSON valid against this JSON Schema:\n{json.dumps(json_schema, ensure_ascii=False)}"
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    structured: dict[str, Any] = session.complete_json(messages, json_schema, max_tokens)
    return structured
