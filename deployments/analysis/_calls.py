"""What the analyses share: a running total of tokens, the deadline, JSON answers checked against their
schema with one retry, and label probabilities where the backend can score."""

import json
import time
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from deployments.analysis.backends import Completion, LabelScorer, LLMBackend, Message
from deployments.analysis.errors import AnalysisTimeout, LLMOutputInvalid


@dataclass
class Session:
    """One analysis's calls to the backend: their tokens add up, and none starts past the deadline."""

    backend: LLMBackend
    deadline: float
    input_tokens: int = 0
    output_tokens: int = 0
    calls: list[Completion] = field(default_factory=list)

    def complete(self, messages: list[Message], json_schema: dict[str, Any] | None, max_tokens: int) -> Completion:
        if time.monotonic() > self.deadline:
            raise AnalysisTimeout("the analysis ran out of time")
        completion = self.backend.complete(messages, json_schema, max_tokens)
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens
        self.calls.append(completion)
        return completion

    @property
    def can_score(self) -> bool:
        return isinstance(self.backend, LabelScorer)

    def score(self, messages: list[Message], continuations: list[str]) -> list[float]:
        """Each continuation's log-probability as the answer (the backend must be a LabelScorer); billed as input."""
        if time.monotonic() > self.deadline:
            raise AnalysisTimeout("the analysis ran out of time")
        assert isinstance(self.backend, LabelScorer)
        scores = self.backend.score(messages, continuations)
        self.input_tokens += scores.input_tokens
        return scores.logprobs

    def complete_json(self, messages: list[Message], schema: dict[str, Any], max_tokens: int, attempts: int = 2) -> Any:
        """The answer parsed and valid against `schema`; an invalid one is asked again once (the retry tells
        the model what was wrong), then LLMOutputInvalid."""
        problem = ""
        for _ in range(attempts):
            asked = messages
            if problem:
                asked = [
                    *messages,
                    {
                        "role": "user",
                        "content": f"Your previous answer was invalid ({problem})."
                        " Answer again with JSON only, valid against the schema.",
                    },
                ]
            text = self.complete(asked, schema, max_tokens).text
            try:
                value = json.loads(text)
                jsonschema.validate(value, schema)
                return value
            except json.JSONDecodeError as error:
                problem = f"not JSON: {error.msg}"
            except jsonschema.ValidationError as error:
                problem = f"schema: {error.message[:200]}"
        raise LLMOutputInvalid(f"the LLM's answer is not valid against the JSON schema ({problem})")
