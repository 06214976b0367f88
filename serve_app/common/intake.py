"""One upload request's intake, whatever protocol it came in by: its id, its spool file and that file's cleanup,
the form (read and checked by the protocol's reader), the request it starts (a `PipelineRequest` or a
`JobRequest`) and how it is billed.

    with Intake(config, price) as intake:
        form = await read_transcription_form(request, intake, max_file_bytes, synchronous=True, voices=...)
        result = await pipeline.transcribe.remote(intake.pipeline_request(form))
        await intake.charge(ledger, owner, form)(result)

(the protocols' flows over it: `serve_app.common.synchronous` and `serve_app.common.job_submission`).

The spooled input (the upload, known speakers' clips, a decoded copy left by a pipeline replica that died) is
removed when the block ends, on any error too, unless a stream or a job took it over (`hand_over`).
"""

import uuid
from typing import Any, Protocol, Self

from fastapi import HTTPException, Request, status
from ray.actor import ActorProxy

from deployments.billing.ledger import ChargeDetails
from deployments.billing.pricing import Price
from deployments.jobs.records import JobRequest
from deployments.storage.spool import remove_spooled
from deployments.types import AnalysisOptions, DiarizationOptions, PipelineRequest, TranscriptionOptions
from serve_app.common.charging import Charge, charge_details
from serve_app.common.upload import ReceivedForm, receive_form
from serve_app.config import AppConfig


class AudioRequest(Protocol):
    """What a protocol's validated form tells the intake: the URL (without an upload), the model, and the work."""

    @property
    def url(self) -> str | None: ...

    @property
    def model(self) -> str: ...

    def transcription_options(self) -> TranscriptionOptions: ...

    def diarization_options(self) -> DiarizationOptions | None: ...

    def analysis_options(self) -> AnalysisOptions | None: ...


class Intake:
    def __init__(self, config: AppConfig, price: Price) -> None:
        self.config, self.price = config, price
        self.request_id = str(uuid.uuid4())
        """The synchronous request's id (its charge's), or the job's."""
        self.spool_path = config.storage.spool_dir / self.request_id
        self._handed_over = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        if not self._handed_over:
            remove_spooled(self.spool_path)

    def hand_over(self) -> None:
        """The spooled input is a stream's or a job's from now on: they remove it when they end."""
        self._handed_over = True

    async def receive(self, request: Request, max_file_bytes: int, file_field: str = "file") -> ReceivedForm:
        """Stream the form in, its file (the part named `file_field`) to the spool."""
        return await receive_form(request, self.spool_path, max_file_bytes, file_field)

    def check_model(self, model: str) -> None:
        offered = self.config.model_ids
        if model not in offered:
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST,
                f"unknown model {model[:64]!r}: this service offers {', '.join(offered)} (GET /v1/models)",
            )

    def pipeline_request(self, form: AudioRequest, stream_text: bool = False) -> PipelineRequest:
        """A synchronous request's work: a client waits on the connection."""
        return PipelineRequest(
            source_path=str(self.spool_path),
            url=form.url,
            max_bytes=self.config.limits.max_sync_upload_bytes,
            options=form.transcription_options(),
            diarization=form.diarization_options(),
            stream_text=stream_text,
            interactive=True,
            analysis=form.analysis_options(),
        )

    def job_request(self, form: AudioRequest, render: dict[str, Any], callback_url: str | None = None) -> JobRequest:
        """A job's work; `render` is the protocol's rendering choices, which the job stores and returns as given;
        `callback_url` (checked) is where its end is POSTed."""
        return JobRequest(
            source_path=str(self.spool_path),
            url=form.url,
            options=form.transcription_options(),
            diarization=form.diarization_options(),
            analysis=form.analysis_options(),
            render=render,
            charge=self.charge_details(form),
            callback_url=callback_url,
        )

    def charge_details(self, form: AudioRequest) -> ChargeDetails:
        options = form.transcription_options()
        return charge_details(self.price, form.model, options, diarized=form.diarization_options() is not None)

    def charge(self, ledger: ActorProxy[Any], owner: str, form: AudioRequest) -> Charge:
        """What charges this synchronous request's result, once."""
        return Charge(ledger, self.request_id, owner, self.charge_details(form), self.spool_path)
