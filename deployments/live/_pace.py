"""How often a live channel reads its buffer while someone speaks (issue 61).

Each streaming reading re-reads the whole buffer (its encoder pass and every word again), so the number of
readings is what streaming costs. A channel reads every `delay_ms` of new audio (the client's choice) but never
more often than `live.min_reading_interval_ms` (the operator's bound on that cost), and less often while its
readings come back slowly: after readings that took `t` seconds, at least `READ_SHARE` x `t` of
audio passes before the next, up to `live.max_reading_interval_ms`. A replica whose Transcriber is shared by many
sessions answers slowly, and its sessions then read less often instead of queueing readings behind each other
(each then falls further behind, reads more audio at a time, and a round of sessions that falls behind stays
behind); a replica alone with one session reads as often as the client asked. A word's latency grows by half
the interval, its words do not change (it is final when it ended `delay_ms` before the audio read, as before).
"""

from deployments.types import SAMPLE_RATE

READ_SHARE = 2.0
"""A session's readings take at most about half the time it speaks (alone on a replica, a tiny.en reading comes
back in ~0.25 s: every `delay_ms` of 480)."""
SMOOTHING = 0.3
"""Weight of the last reading's time in the running estimate."""


class ReadingPace:
    def __init__(self, delay_ms: int, most_ms: int, least_ms: int = 0) -> None:
        self.delay_ms = max(delay_ms, least_ms)
        self.most_ms = max(self.delay_ms, most_ms)
        self.reading_s = 0.0  # running estimate of a reading's time, from the call to its answer

    def took(self, seconds: float) -> None:
        self.reading_s = seconds if not self.reading_s else (1 - SMOOTHING) * self.reading_s + SMOOTHING * seconds

    @property
    def interval_ms(self) -> int:
        return int(min(self.most_ms, max(self.delay_ms, READ_SHARE * self.reading_s * 1000)))

    @property
    def interval_samples(self) -> int:
        return self.interval_ms * SAMPLE_RATE // 1000
