"""The one small interface the analyses use to reach an LLM, and the factory that picks a backend from the
config. A backend turns chat messages into a `Completion`; with a JSON schema, the text it returns is meant to
be JSON valid against it (constrained decoding where the backend can), but callers still validate.

A backend that can read the model's log-probabilities also implements `LabelScorer`: closed-label decisions
(emotions, roles from a list) then compare the labels' probabilities instead of letting a small model write
its choice; without it they fall back to constrained generation."""

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from deployments.analysis.errors import LLMBackendError
from deployments.config import AnalysisConfig

Message = dict[str, str]
"""{"role": "system" | "user" | "assistant", "content": "..."}"""


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int


class LLMBackend(Protocol):
    context_tokens: int

    def complete(self, messages: list[Message], json_schema: dict[str, Any] | None, max_tokens: int) -> Completion:
        """The model's answer to `messages`; with `json_schema`, constrained to it where the backend can."""
        ...

    def count_tokens(self, text: str) -> int:
        """How many tokens `text` takes in the model's prompt (an estimate where the backend cannot tell)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Scores:
    logprobs: list[float]
    """Natural-log probability of each continuation, in the order asked."""
    input_tokens: int
    """Tokens the model read: the prompt and the continuations."""


@runtime_checkable
class LabelScorer(Protocol):
    """The optional capability: how likely each continuation is as the start of the assistant's answer."""

    def score(self, messages: list[Message], continuations: list[str]) -> Scores: ...


def make_backend(config: AnalysisConfig, llm: Any = None) -> LLMBackend:
    """The backend the config names; the embedded one loads its model here (seconds), so call it in a replica.
    `llm` is the DeploymentHandle of the application's Ray Serve LLM deployment (backend `ray_llm`)."""
    if config.backend == "embedded":
        from deployments.analysis._embedded import EmbeddedBackend

        return EmbeddedBackend(config)
    if config.backend == "ray_llm":
        from deployments.analysis._ray_llm import RayLLMBackend

        if llm is None:
            raise LLMBackendError("backend ray_llm, but the application bound no LLM deployment to the Analyzer")
        return RayLLMBackend(config, llm)
    from deployments.analysis._openai import OpenAIBackend

    return OpenAIBackend(config)
