"""The callback's signature: `X-STT-Signature: t=<unix seconds>,v1=<hex>`, v1 being HMAC-SHA256 over
`"<t>.<raw body>"`. The time is signed with the body so that a receiver can refuse replays of old deliveries
(docs/api/rest.md shows a receiver that refuses those older than 5 minutes)."""

import hashlib
import hmac

SIGNATURE_HEADER = "X-STT-Signature"
JOB_ID_HEADER = "X-STT-Job-Id"


def signature(secret: bytes, body: bytes, timestamp: int) -> str:
    """The header's value for `body` sent at `timestamp` (Unix seconds)."""
    digest = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(secret: bytes, body: bytes, header: str, now: float, tolerance_s: float = 300) -> bool:
    """What a receiver checks: the signature matches and its time is within `tolerance_s` of `now`."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    if not parts.get("t", "").isdigit() or "v1" not in parts:
        return False
    timestamp = int(parts["t"])
    expected = signature(secret, body, timestamp).partition(",v1=")[2]
    return abs(now - timestamp) <= tolerance_s and hmac.compare_digest(expected, parts["v1"])
