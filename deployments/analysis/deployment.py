"""Analyzer: the deployment that runs LLM analyses (prompt, roles, emotions) over a finished transcript.

The LLM backend (llama.cpp and the model, or an HTTP client) is made in the replica's constructor, not at
module level: the process that builds the application imports this module for the class alone. A backend
that cannot be made (the weights' package not installed, a missing .gguf) does not stop the application:
transcription goes on, and each analysis is a 502 whose cause is in the log.
"""

import asyncio
import logging
import time
from typing import Any

from ray import serve
from ray.serve.handle import DeploymentHandle

from deployments.analysis.backends import LLMBackend
from deployments.analysis.errors import AnalysisTimeout, LLMBackendError
from deployments.config import AnalysisConfig
from deployments.types import Analysis, AnalysisOptions, DiarizedTranscript, Transcript

logger = logging.getLogger("ray.serve")


SERVER_CONCURRENCY = 8


@serve.deployment(max_ongoing_requests=SERVER_CONCURRENCY)
class Analyzer:
    def __init__(self, config: AnalysisConfig, llm: DeploymentHandle[Any] | None = None) -> None:
        """`llm`: the application's Ray Serve LLM deployment, for backend `ray_llm` (serve_app/app.py binds it)."""
        from deployments.analysis.backends import make_backend  # here, not at the top: see the docstring

        self.config = config
        self.backend: LLMBackend | None = None
        self.unavailable = ""
        try:
            self.backend = make_backend(config, llm)
        except Exception as error:  # any failure to load: the reason is logged, analyses are 502s
            self.unavailable = f"{type(error).__name__}: {error}"
            logger.error("the Analyzer has no LLM (%s); requests that ask for an analysis get 502", self.unavailable)
        # The embedded model runs one generation at a time: queue here, not in a thread. A server (openai,
        # ray_llm) batches what it is sent, so it gets as many at once as the replica takes.
        self.lock = asyncio.Semaphore(1 if config.backend == "embedded" else SERVER_CONCURRENCY)

    async def analyze(self, transcript: Transcript | DiarizedTranscript, options: AnalysisOptions) -> Analysis:
        """What `options` asks of `transcript`. Raises LLMBackendError (LLMOutputInvalid for a schema the answer
        never met), or AnalysisTimeout."""
        from deployments.analysis.analyzer import analyze

        if self.backend is None:
            raise LLMBackendError(f"no LLM: {self.unavailable}")
        if options.timeout_s is None:  # a job's: it may wait for the model as long as it takes
            async with self.lock:
                return await asyncio.to_thread(analyze, self.backend, self.config, transcript, options)
        # A synchronous request's budget counts from here: waiting for the model spends it too.
        deadline = time.monotonic() + options.timeout_s
        try:
            await asyncio.wait_for(self.lock.acquire(), timeout=options.timeout_s)
        except TimeoutError:
            raise AnalysisTimeout("the analysis waited its whole budget for the model") from None
        try:
            left = options.model_copy(update={"timeout_s": max(deadline - time.monotonic(), 0.001)})
            return await asyncio.to_thread(analyze, self.backend, self.config, transcript, left)
        finally:
            self.lock.release()

    def check_health(self) -> None:
        """Serve's health check: healthy also without a backend (its analyses are 502s; transcription goes on)."""
