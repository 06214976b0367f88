"""One analysis of one transcript: the prompt, roles and emotions a request asked for, over one backend.
Synchronous and Ray-free, so tests drive it with any backend; the `Analyzer` deployment runs it in a thread."""

import time

from deployments.analysis import emotions, prompt, roles
from deployments.analysis._calls import Session
from deployments.analysis.backends import LLMBackend
from deployments.config import AnalysisConfig
from deployments.types import Analysis, AnalysisOptions, DiarizedTranscript, Transcript


def analyze(
    backend: LLMBackend, config: AnalysisConfig, transcript: Transcript | DiarizedTranscript, options: AnalysisOptions
) -> Analysis:
    budget = min(config.timeout_s, options.timeout_s or config.timeout_s)
    session = Session(backend, deadline=time.monotonic() + budget)
    result = Analysis()
    if options.prompt is not None:  # also over an empty transcript: the client gets an answer of the asked shape
        max_tokens = min(options.max_output_tokens or config.max_output_tokens, config.max_output_tokens)
        result.llm_output = prompt.answer(session, transcript, options.prompt, options.json_schema, max_tokens)
    if options.roles is not None and isinstance(transcript, DiarizedTranscript):
        result.roles = roles.assign(session, transcript, options.roles)
    if options.emotions:
        result.emotions = emotions.judge(session, transcript, config.emotion_batch)
    result.llm_input_tokens = session.input_tokens
    result.llm_output_tokens = session.output_tokens
    return result
