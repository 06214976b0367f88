"""Latency percentiles, one way for every benchmark, so that their p50s and p99s compare."""

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], share: float) -> float:
    """The value below which `share` (0 to 1) of `values` lie, interpolated linearly between the two nearest
    (numpy's default method; share 0.5 is the median); nan for no values."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
