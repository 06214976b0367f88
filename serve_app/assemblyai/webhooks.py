"""AssemblyAI's webhook: when a transcript ends, `{"transcript_id": ..., "status": "completed" | "error"}` is
POSTed to its `webhook_url` with the header the request named (`webhook_auth_header_name`/`_value`), unsigned;
the receiver then fetches the transcript. Sent by the service's callback sender (`serve_app/callbacks/`), so
it is retried, and durable, as a job's callback."""

import json

from deployments.callbacks.store import CallbackState
from deployments.jobs.records import Job
from serve_app.assemblyai.rendering import status_of
from serve_app.assemblyai.translation import Stored
from serve_app.common.edge import Delivery


def webhook(job: Job, _: CallbackState) -> Delivery:
    stored = Stored.model_validate(job.request.render)
    body = json.dumps({"transcript_id": job.job_id, "status": status_of(job)}).encode()
    return Delivery(body, headers=dict([stored.webhook_header]) if stored.webhook_header else {}, signed=False)
