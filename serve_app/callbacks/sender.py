"""The sender each ingress replica runs: every `poll_interval_s` it claims the callbacks that are due (with a
lease, so replicas share the work and a dead one's claims expire), renders each job as its poll would answer
it, signs and POSTs it, and records the outcome: delivered (a 2xx within `timeout_s`), the next attempt after
a backoff, or failed. It runs beside the routes, never in the tracker or a pipeline worker: a slow or dead
receiver holds up no job and no request."""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

import httpx

from deployments.callbacks.store import CallbackState, Claim
from deployments.config import CallbacksConfig
from deployments.errors import StorageError, UrlRejectedError
from deployments.jobs.reader import JobReader
from deployments.jobs.records import Job
from serve_app.callbacks.signing import JOB_ID_HEADER, SIGNATURE_HEADER, signature
from serve_app.callbacks.target import post
from serve_app.common.edge import PROTOCOL_KEY, CallbackFormat, Delivery
from serve_app.rendering.job_answer import job_answer

logger = logging.getLogger("ray.serve")  # where Ray shows a replica's log lines

SecretOf = Callable[[str], Awaitable[bytes | None]]
"""A job owner's callback secret (its key's, else the service's); None: neither is set."""


class CallbackSender:
    def __init__(
        self,
        reader: JobReader,
        config: CallbacksConfig,
        secret_of: SecretOf,
        formats: Mapping[str, CallbackFormat] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`formats`: how other protocols' jobs are delivered, by the protocol their render dict names (see
        `serve_app.common.edge`); jobs of ours are the signed job object."""
        self.reader, self.config, self.secret_of, self.clock = reader, config, secret_of, clock
        self.formats = dict(formats or {})
        self.outbox = reader.callbacks
        self.client = httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=config.timeout_s)
        self.sending: set[asyncio.Task[CallbackState | None]] = set()

    def start(self) -> asyncio.Task[None]:
        """Run on the current event loop until the replica ends."""
        return asyncio.get_running_loop().create_task(self.run_forever())

    async def run_forever(self) -> None:
        while True:
            try:
                await self.run_once()
            except StorageError as error:  # the database is down: the rows wait
                logger.warning("callbacks: the outbox cannot be read now: %s", error)
            except Exception:
                logger.exception("callbacks: a round failed; trying again in %.1f s", self.config.poll_interval_s)
            await asyncio.sleep(self.config.poll_interval_s)

    async def run_once(self) -> list[asyncio.Task[CallbackState | None]]:
        """Claim what is due (up to the room left by sends still under way) and start sending each."""
        room = self.config.max_in_flight - len(self.sending)
        if room <= 0:
            return []
        claims = await asyncio.to_thread(self.outbox.claim, room)
        started = []
        for claim in claims:
            task = asyncio.get_running_loop().create_task(self.deliver(claim))
            self.sending.add(task)
            task.add_done_callback(self.sending.discard)
            started.append(task)
        return started

    async def deliver(self, claim: Claim) -> CallbackState | None:
        """One attempt, recorded; None when the outcome could not be recorded (the lease then expires and the
        row is sent again)."""
        try:
            return await self._attempt(claim)
        except Exception:
            logger.exception("callbacks: job %s: the attempt could not be recorded", claim.job_id)
            return None

    async def _attempt(self, claim: Claim) -> CallbackState:
        job = await asyncio.to_thread(self.reader.get, claim.job_id, claim.owner)
        delivery = self.delivery(job, claim) if job is not None else None
        secret = await self.secret_of(claim.owner) if delivery is not None and delivery.signed else b""
        if delivery is None or secret is None:  # expired, or no secret to sign it with any more
            logger.warning("callbacks: job %s: given up (%s)", claim.job_id,
                           "the job is gone" if delivery is None else "no callback secret")  # fmt: skip
            return await asyncio.to_thread(self.outbox.give_up, claim, claim.last_status)
        body, headers = delivery.body, dict(delivery.headers)
        if delivery.signed:
            headers |= {JOB_ID_HEADER: claim.job_id, SIGNATURE_HEADER: signature(secret, body, int(self.clock()))}
        answered: int | None = None
        try:
            answered = await post(self.client, claim.url, body, headers, self.config)
        except Exception as error:  # refused, unreachable, timed out, or a URL that cannot be sent: an attempt failed
            logger.info("callbacks: job %s: attempt %d: %s", claim.job_id, claim.attempts + 1,
                        error if isinstance(error, UrlRejectedError) else type(error).__name__)  # fmt: skip
        if answered is not None and 200 <= answered < 300:
            return await asyncio.to_thread(self.outbox.delivered, claim, answered)
        return await asyncio.to_thread(self.outbox.attempt_failed, claim, answered)

    def delivery(self, job: Job, claim: Claim) -> Delivery:
        """The POST `job`'s callback sends: in the format of the protocol that submitted it, else our signed
        job object."""
        protocol = job.request.render.get(PROTOCOL_KEY)
        if protocol is None or protocol not in self.formats:
            return Delivery(job_answer(job, claim.state()), signed=True)
        return self.formats[protocol](job, claim.state())

    async def close(self) -> None:
        await self.client.aclose()
