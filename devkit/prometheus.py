"""Reading the service's own metrics off Ray's Prometheus endpoint, for tests and benchmarks."""

import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
"""Each series' value by its name and the labels kept."""


def scrape(url: str, labels: set[str], prefix: str = "ray_stt_") -> Samples:
    """Every series of the service's metrics (`prefix`), summed over the labels not in `labels` (replicas,
    workers...). Ray's metrics agent may still be starting on a loaded machine: tried for 30 s."""
    for attempt in range(30):
        try:
            text = httpx.get(url, timeout=10).text
            break
        except httpx.ConnectError:
            if attempt == 29:
                raise
            time.sleep(1)
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith(prefix):
                kept = frozenset((k, v) for k, v in sample.labels.items() if k in labels)
                samples[(sample.name, kept)] = samples.get((sample.name, kept), 0.0) + sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (sample, series), v in samples.items() if sample == name and wanted <= series)


def settled(url: str, labels: set[str], quiet_s: float, timeout_s: float = 60) -> Samples:
    """The metrics once two scrapes `quiet_s` apart agree: what was done before the call has been exported."""
    deadline = time.monotonic() + timeout_s
    last = scrape(url, labels)
    while True:
        time.sleep(quiet_s)
        now = scrape(url, labels)
        if now == last or time.monotonic() > deadline:
            return now
        last = now
