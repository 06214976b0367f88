"""What a client asks of the Analyzer (an LLM's answer, roles, emotions) and what it found. Part of
`deployments.types`, which exports it."""

from typing import Any, Literal

from pydantic import BaseModel, Field


class AnalysisOptions(BaseModel):
    """What a client asked the LLM to do with a transcript (deployments/analysis/)."""

    prompt: str | None = Field(None, description="An instruction the LLM answers over the transcript.")
    json_schema: dict[str, Any] | None = Field(
        None, description="A parsed JSON Schema the answer to `prompt` must satisfy; the answer is then an object."
    )
    roles: Literal["auto"] | list[str] | dict[str, str] | None = Field(
        None,
        description="Tag each diarized speaker with a role: 'auto' (short labels the LLM chooses), a list of role"
        " names, or a dict of role name -> description; 'unknown' is always allowed.",
    )
    emotions: bool = Field(False, description="Label each segment angry, sad, neutral or positive.")
    timeout_s: float | None = Field(
        None, gt=0, description="A budget shorter than `analysis.timeout_s` (a synchronous request's); None: that."
    )
    max_output_tokens: int | None = Field(
        None, ge=1, description="A shorter longest answer to `prompt` than `analysis.max_output_tokens`; None: that."
    )

    @property
    def wanted(self) -> bool:
        return self.prompt is not None or self.roles is not None or self.emotions


class Emotion(BaseModel):
    """One segment's emotion: its label, how sure the judge is, and the probability of each label."""

    label: Literal["angry", "sad", "neutral", "positive"]
    confidence: float = Field(ge=0, le=1)
    probs: dict[str, float] = Field(description="One entry per label of EMOTION_LABELS; they sum to 1.")


class Analysis(BaseModel):
    """What the Analyzer found in a transcript; fields the request did not ask for stay empty."""

    llm_output: str | dict[str, Any] | None = Field(
        None, description="The answer to `prompt`: text, or with `json_schema` an object valid against it."
    )
    roles: dict[str, str] = Field(default_factory=dict, description="Speaker label -> role.")
    emotions: list[Emotion | None] = Field(
        default_factory=list, description="One per transcript segment, in order; None where none was judged."
    )
    llm_input_tokens: int = 0
    llm_output_tokens: int = 0
