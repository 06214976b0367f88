"""Revocation delay: how long after `DELETE /v1/admin/keys/{id}` answers do the service's ingress replicas
refuse the key.

Starts a local service with two ingress replicas (the tiny embedded model) and, --revocations times: makes a
key, waits until it is accepted 20 times in a row (every replica knows it), then has two clients poll
`GET /v1/models` with it every --interval-ms while it is revoked, for --after-s seconds after the DELETE's
answer. Serve's proxy spreads the polls over both replicas but does not say which answered, so two delays
are measured from the DELETE's answer: to the first 401 seen (the replica that answered the DELETE refuses at
once), and to the first 401 after the last 200 (from then on every replica refuses: the slower replica's
delay, within one poll interval). Prints p50 and p99 of each, and the largest.

    .venv/bin/python -m scripts.bench_revocation [--revocations 20] [--interval-ms 20] [--after-s 2.5]
"""

import argparse
import tempfile
import threading
import time
from pathlib import Path

import httpx

from devkit.local_service import LocalService
from devkit.percentiles import percentile

KEY = "bench-revocation"
ADMIN_KEY = "bench-admin-key-0123456789abcdef"


def _poll(base_url: str, key: str, interval_s: float, until: threading.Event, seen: list[tuple[float, int]]) -> None:
    """(when each request was sent, its status) until `until` is set."""
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as client:
        next_at = time.monotonic()
        while not until.is_set():
            sent = time.monotonic()
            seen.append((sent, client.get("/v1/models").status_code))
            next_at += interval_s
            time.sleep(max(0.0, next_at - time.monotonic()))


def _accepted_everywhere(base_url: str, key: str) -> None:
    """Until 20 requests in a row are answered 200 (a new key reaches a replica within about a second)."""
    in_a_row, deadline = 0, time.monotonic() + 30
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as client:
        while in_a_row < 20:
            if time.monotonic() > deadline:
                raise RuntimeError("the new key was not accepted within 30 s")
            in_a_row = in_a_row + 1 if client.get("/v1/models").status_code == 200 else 0
            time.sleep(0.02)


def revoke_once(base_url: str, admin: httpx.Client, interval_s: float, after_s: float) -> tuple[float, float]:
    """(seconds to the first 401, seconds to the first 401 after the last 200), from the DELETE's answer."""
    made = admin.post("/v1/admin/keys", json={"name": "bench", "requests_per_second": 10_000})
    made.raise_for_status()
    key, key_id = made.json()["key"], made.json()["id"]
    _accepted_everywhere(base_url, key)
    seen: list[tuple[float, int]] = []
    done = threading.Event()
    clients = [threading.Thread(target=_poll, args=(base_url, key, interval_s, done, seen)) for _ in range(2)]
    for client in clients:
        client.start()
    time.sleep(0.2)
    admin.delete(f"/v1/admin/keys/{key_id}").raise_for_status()
    answered = time.monotonic()
    time.sleep(after_s)
    done.set()
    for client in clients:
        client.join()
    after = sorted((sent, status) for sent, status in seen if sent >= answered)
    refused = [sent for sent, status in after if status == 401]
    last_accepted = max((sent for sent, status in after if status == 200), default=answered)
    everywhere = [sent for sent in refused if sent > last_accepted]
    if not refused or not everywhere:
        raise RuntimeError(f"the key was still accepted {after_s} s after its revocation")
    return refused[0] - answered, everywhere[0] - answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--revocations", type=int, default=20)
    parser.add_argument("--interval-ms", type=float, default=20.0, help="Each of the two clients' poll interval.")
    parser.add_argument("--after-s", type=float, default=2.5, help="How long to poll after each DELETE.")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as workdir,
        LocalService(
            Path(workdir), [KEY], ingress_replicas=2, unthrottled=True, env={"STT_ADMIN_KEYS": ADMIN_KEY}
        ) as service,  # fmt: skip
        httpx.Client(base_url=service.base_url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30) as admin,
    ):
        first, everywhere = [], []
        for n in range(args.revocations):
            one, all_ = revoke_once(service.base_url, admin, args.interval_ms / 1000, args.after_s)
            first.append(one)
            everywhere.append(all_)
            print(f"revocation {n + 1}: first 401 after {one * 1000:.0f} ms, every replica after {all_ * 1000:.0f} ms")
    print(f"\n{args.revocations} revocations, 2 ingress replicas, polls every {args.interval_ms:.0f} ms by 2 clients")
    print("| delay from the DELETE's answer | p50 | p99 | max |\n|---|---|---|---|")
    for label, values in (("first 401", first), ("every replica refuses", everywhere)):
        p50, p99 = percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000
        print(f"| {label} | {p50:.0f} ms | {p99:.0f} ms | {max(values) * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
