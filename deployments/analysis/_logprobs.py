"""Log-probabilities of continuations under a llama.cpp model, for the embedded backend's `score`.

A context of its own, apart from the generation one (which clears its cache every call): it keeps the tokens of
the last prompt in its KV cache, so a next prompt that starts the same way (the same instructions, another
utterance) only decodes what differs. llama.cpp's numbers depend slightly on how tokens are batched, so a prompt
is always decoded in chunks of `PROMPT_CHUNK` from position 0 and only whole chunks are reused: a prompt's scores
are the same whatever was scored before it. The model file is mmap-ed, so a second load shares its pages with
the generation model's.
"""

from collections.abc import Sequence
from pathlib import Path

import numpy as np

N_BATCH = 512
PROMPT_CHUNK = 32


def shared_prefix(a: list[int], b: list[int]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def log_softmax(logits: Sequence[float] | np.ndarray) -> np.ndarray:
    values = np.asarray(logits, dtype=np.float64)
    normalised: np.ndarray = values - np.logaddexp.reduce(values)
    return normalised


class TokenScorer:
    def __init__(self, path: Path, context_tokens: int) -> None:
        from cyllama.llama.llama_cpp import LlamaContext, LlamaContextParams, LlamaModel, LlamaModelParams

        class Model(LlamaModel):  # type: ignore[misc]  # cyllama ships no types
            # cyllama 0.2.18's get_logits reads `model.n_vocab`, which its LlamaModel lacks.
            @property
            def n_vocab(self) -> int:
                vocabulary_size: int = self.get_vocab().n_vocab
                return vocabulary_size

        self.model = Model(str(path), LlamaModelParams())
        params = LlamaContextParams()
        params.n_ctx = context_tokens
        params.n_batch = N_BATCH
        self.context = LlamaContext(self.model, params)
        self.cached: list[int] = []  # the tokens in the KV cache's sequence 0, from position 0

    def _decode(self, tokens: list[int], start: int, every: bool, size: int = N_BATCH) -> list[np.ndarray]:
        """Decode `tokens` at positions from `start`, `size` at a time; the log-softmax after each token (`every`)
        or after the last."""
        from cyllama.llama.llama_cpp import LlamaBatch

        rows = []
        for offset in range(0, len(tokens), size):
            chunk = tokens[offset : offset + size]
            final = offset + size >= len(tokens)
            batch = LlamaBatch(n_tokens=len(chunk), embd=0, n_seq_max=1)
            for index, token in enumerate(chunk):
                batch.add(token, start + offset + index, [0], every or (final and index == len(chunk) - 1))
            self.context.decode(batch)
            if every:
                rows += [log_softmax(self.context.get_logits_ith(index)) for index in range(len(chunk))]
        return rows if every else [log_softmax(self.context.get_logits())]

    def logprobs(self, prompt: list[int], continuations: list[list[int]]) -> list[float]:
        """The log-probability of each (non-empty) token sequence right after `prompt`."""
        reuse = min(shared_prefix(self.cached, prompt), len(prompt) - 1)  # re-decode one token for its logits
        reuse -= reuse % PROMPT_CHUNK
        self.context.memory_seq_rm(0, reuse, -1)
        self.cached = self.cached[:reuse]
        (after_prompt,) = self._decode(prompt[reuse:], reuse, every=False, size=PROMPT_CHUNK)
        self.cached = list(prompt)
        result = []
        for tokens in continuations:
            rows = [after_prompt]
            if len(tokens) > 1:
                rows += self._decode(tokens[:-1], len(prompt), every=True)
                self.context.memory_seq_rm(0, len(prompt), -1)
            result.append(sum(float(row[token]) for row, token in zip(rows, tokens, strict=True)))
        return result

    def close(self) -> None:
        self.context.close()
        self.model.close()
