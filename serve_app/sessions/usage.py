"""The session's audio by the byte: how much the key's money left pays for, how much came, and the charge
at the end (seconds received times the channels transcribed), once per session, in the same ledger as files."""

import logging
from typing import Any

from ray.actor import ActorProxy

from deployments.billing import pricing
from deployments.billing.ledger import ChargeDetails
from deployments.billing.pricing import Funds
from deployments.live.events import BYTES_PER_SAMPLE, SessionSettings

logger = logging.getLogger(__name__)


class SessionMeter:
    def __init__(self, settings: SessionSettings, funds: Funds) -> None:
        self.price = funds.price
        self.sample_rate = settings.sample_rate
        self.channels_transcribed = settings.channels_transcribed
        self.bytes_per_frame = BYTES_PER_SAMPLE[settings.encoding] * settings.channels
        self.bytes_allowed = funds.audio_s(self.channels_transcribed) * settings.sample_rate * self.bytes_per_frame
        """The money left when the session opened, as bytes of audio (inf: unlimited)."""
        self.bytes_received = 0

    def admit(self, frame: bytes) -> bytes:
        """The part of `frame` the money left pays for (all of it while there is room), counted as received."""
        room = self.bytes_allowed - self.bytes_received
        if len(frame) > room:
            frame = frame[: max(0, int(room))]
        self.bytes_received += len(frame)
        return frame

    @property
    def billed_s(self) -> float:
        """The audio received, times the channels transcribed."""
        return self.bytes_received / self.bytes_per_frame / self.sample_rate * self.channels_transcribed


async def charge_session(ledger: ActorProxy[Any], session_id: str, owner: str, model: str, meter: SessionMeter) -> None:
    """Charge what the session heard, priced as an HTTP request's charge is (`intake.charge_details`)."""
    billed = meter.billed_s
    if billed <= 0:
        return
    details = ChargeDetails(
        task="realtime", model=model, bytes=meter.bytes_received, rate_per_min=meter.price.rate_per_min
    )
    try:
        await pricing.charge(ledger, session_id, owner, billed, details)
    except Exception:  # the session is over; a failed charge must be seen in the log, not by the client
        logger.exception("could not charge live session %s (%.1f s)", session_id, billed)
