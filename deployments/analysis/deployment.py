"""Analyzer: the deployment that runs LLM analyses (prompt, roles, emotions) over a finished transcript.

The LLM backend (llama.cpp and the model, or an HTTP client) is made in the replica's constructor, not at
module level: the process that builds the application imports this module for the class alone.
"""

import asyncio
import time

from ray import serve

from deployments.analysis.errors import AnalysisTimeout
from deployments.config import AnalysisConfig
from deployments.types import Analysis, AnalysisOptions, DiarizedTranscript, Transcript


@serve.deployment(max_ongoing_requests=8)
class Analyzer:
    def __init__(self, config: AnalysisConfig) -> None:
        from deployments.analysis.backends import make_backend  # here, not at the top: see the docstring

        self.config = config
        self.backend = make_backend(config)
        self.lock = asyncio.Lock()  # the embedded model runs one generation at a time; queue here, not in a thread

    async def analyze(self, transcript: Transcript | DiarizedTranscript, options: AnalysisOptions) -> Analysis:
        """What `options` asks of `transcript`. Raises LLMBackendError (LLMOutputInvalid for a schema the answer
        never met), or AnalysisTimeout."""
        from deployments.analysis.analyzer import analyze

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
        """Serve's health check: the backend exists (the constructor raised otherwise)."""
