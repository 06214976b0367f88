"""A job's submission, whatever protocol it came in by: the key's running-job cap checked before a long upload
is read for nothing, the request read into an `Intake`, what can be refused now refused now (a non-public audio
URL, a callback address that may not be called), the job handed to the tracker with the spooled input.

    job = await submit_job(services, key, read, callback_url=..., too_many=...)

Every protocol's job is capped, checked and queued alike; what differs is passed in: how its request is read
(`read`, into a `Submission`), where its callback is named and how it is checked, and its 429's words. The
protocol renders the job it gets back.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException

from deployments.jobs.records import Job
from deployments.jobs.tracker import TooManyJobsError
from serve_app.callbacks.target import check_callback_url
from serve_app.common.auth import ApiKey
from serve_app.common.dependencies import price_of
from serve_app.common.errors import too_many_jobs
from serve_app.common.intake import AudioRequest, Intake
from serve_app.common.services import Services

CallbackCheck = Callable[[str], Awaitable[None]]
"""Refuses (an HTTPException) a callback address the job may not be submitted with."""


@dataclass(frozen=True)
class Submission:
    """A job's request as the protocol read it."""

    work: AudioRequest
    render: dict[str, Any]
    """The protocol's rendering choices, which the job stores and returns as given (`JobRequest.render`)."""
    callback_url: str | None = None
    """A callback named in the body read (a form field): checked once read, after the audio's URL."""


async def submit_job(
    services: Services,
    key: ApiKey,
    read: Callable[[Intake], Awaitable[Submission]],
    *,
    callback_url: str | None = None,
    check_callback: CallbackCheck | None = None,
    too_many: Callable[[int], HTTPException] = too_many_jobs,
) -> Job:
    """Queue `key`'s job at its price, read by `read`; the job as the tracker wrote it. `callback_url` is a
    callback named beside the body (its query string, a JSON body already read): checked before the body is
    read. `check_callback` checks either (default: `check_callback_url` under the config's rules; each attempt
    checks again). `too_many` is the 429 of a key at its cap of running jobs."""
    config = services.config
    check = check_callback or (lambda url: check_callback_url(url, config.callbacks))
    max_running = key.max_running_jobs or config.jobs.max_running_jobs_per_key
    if not await services.tracker.has_room.remote(key.owner, max_running):  # before reading a long upload for nothing
        raise too_many(max_running)
    if callback_url is not None:
        await check(callback_url)
    with Intake(config, price_of(key, config)) as intake:
        submission = await read(intake)
        if submission.work.url is not None:  # refuse a non-public URL now; the job checks again when it fetches
            await services.pipeline.check_url.remote(submission.work.url)
        if submission.callback_url is not None:  # refused now, not at the job's end
            await check(submission.callback_url)
        callback = submission.callback_url if submission.callback_url is not None else callback_url
        job_request = intake.job_request(submission.work, submission.render, callback)
        try:
            job: Job = await services.tracker.submit.remote(key.owner, job_request, intake.request_id, max_running)
        except TooManyJobsError as error:
            raise too_many(error.args[0]) from None
        intake.hand_over()  # the job removes the spooled file when it is done
    return job
