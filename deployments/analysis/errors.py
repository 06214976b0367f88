"""What can go wrong in an analysis. Each takes one message argument, so it pickles across Ray processes
(Ray re-raises it as a subclass of both RayTaskError and this class, with the original in `.cause`)."""


class AnalysisError(RuntimeError):
    """Base of the analysis errors."""


class LLMBackendError(AnalysisError):
    """The LLM failed: the server is unreachable, answered an error, or the model could not run. The edge
    answers 502."""


class LLMOutputInvalid(LLMBackendError):
    """The LLM's answer was not valid against the client's JSON schema, even after one retry. The edge answers
    502, as the nexara API does for empty or invalid LLM output."""


class AnalysisTimeout(AnalysisError, TimeoutError):
    """The analysis ran past `analysis.timeout_s` (or one LLM call past `request_timeout_s`). The edge answers
    as nexara does for a synchronous request (413: resubmit as a job)."""
