"""The session's audio by the byte: how much the key's money left pays for, and how much came. The charge is
the LiveTranscriber's, when the session closes, on the terms `billing` states (it outlives this replica)."""

from deployments.billing.ledger import ChargeDetails
from deployments.billing.pricing import Funds
from deployments.live.events import BYTES_PER_SAMPLE, SessionBilling, SessionSettings


class SessionMeter:
    def __init__(self, settings: SessionSettings, funds: Funds) -> None:
        self.price = funds.price
        bytes_per_frame = BYTES_PER_SAMPLE[settings.encoding] * settings.channels
        self.bytes_allowed = funds.audio_s(settings.channels_transcribed) * settings.sample_rate * bytes_per_frame
        """The money left when the session opened, as bytes of audio (inf: unlimited)."""
        self.bytes_received = 0

    def admit(self, frame: bytes) -> bytes:
        """The part of `frame` the money left pays for (all of it while there is room), counted as received."""
        room = self.bytes_allowed - self.bytes_received
        if len(frame) > room:
            frame = frame[: max(0, int(room))]
        self.bytes_received += len(frame)
        return frame


def billing(owner: str, model: str, funds: Funds) -> SessionBilling:
    """Who pays for the session and at what price, priced as an HTTP request's charge is."""
    return SessionBilling(
        owner=owner, details=ChargeDetails(task="realtime", model=model, rate_per_min=funds.price.rate_per_min)
    )
