"""Errors that say what is wrong with a client's input. The HTTP edge turns them into a 4xx `detail`; a job
ends in `error` with the same words.

They cross Ray process boundaries: Ray re-raises a replica's exception as a subclass of both `RayTaskError`
and the original class, with the original in `.cause`. `client_error` recovers it.
"""


class InputRejectedError(ValueError):
    """The input cannot be processed; `str(error)` is the `detail` the client gets, `status` its HTTP status.

    Both travel in `args`, so the status survives pickling across processes.
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message, status)

    @property
    def status(self) -> int:
        return self.args[1]

    def __str__(self) -> str:
        return self.args[0]


class AudioRejectedError(InputRejectedError):
    """The audio cannot be decoded, or is too short or too long."""


class UrlRejectedError(InputRejectedError):
    """A client's `url` cannot be fetched (or may not be: non-public addresses)."""


def client_error(error: BaseException) -> InputRejectedError | None:
    """The InputRejectedError behind `error`, also when Ray wrapped it; None if there is none."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, InputRejectedError):
        return cause
    if isinstance(error, InputRejectedError) and cause is None:
        return error
    return None


def original_message(error: BaseException) -> str:
    """The original message of an exception that may have crossed a Ray process boundary."""
    cause = getattr(error, "cause", None)
    return str(cause if isinstance(cause, BaseException) else error)
