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


class AudioEmotionsUnavailable(AnalysisError):
    """The operator's audio emotion classifier (`analysis.audio_emotion_model`) could not be loaded. The edge
    answers 502."""


class AnalysisTimeout(AnalysisError, TimeoutError):
    """The analysis ran past `analysis.timeout_s` (or one LLM call past `request_timeout_s`). The edge answers
    as nexara does for a synchronous request (413: resubmit as a job)."""


def analysis_failure(error: BaseException) -> AnalysisError | None:
    """The AnalysisError behind `error`, also when Ray wrapped it (once per process boundary); None if none."""
    while error is not None:
        cause = getattr(error, "cause", None)
        if isinstance(cause, BaseException):
            error = cause
            continue
        return error if isinstance(error, AnalysisError) else None
    return None


def analysis_error_message(error: AnalysisError) -> str:
    """What a client is told (the HTTP `detail`, a job's `error`): the failure in plain words, no internals."""
    if isinstance(error, AnalysisTimeout):
        return (
            "the LLM analysis did not finish within the time budget; the transcription succeeded: submit the same"
            " request as a job (POST /v1/audio/transcriptions/async), where the analysis has more time"
        )
    if isinstance(error, AudioEmotionsUnavailable):
        return "the audio emotion classifier is unavailable (the service's log says why); try again later"
    if isinstance(error, LLMOutputInvalid):
        return f"{error}, also when asked again: simplify the schema or try again"[:500]
    return "the LLM backend failed (the service's log says why); try again later"
