"""Job callbacks: the delay from a job's end (its `completed_at`) to the callback's arrival at a receiver.

Starts a local service (the tiny embedded model, callbacks to loopback allowed, the default
`callbacks.poll_interval_s` unless --poll-interval), a receiver on loopback (devkit/callback_receiver.py), and
submits --jobs short jobs (5 s of speech) with a callback_url; prints the delay's p50, p99 and max. The service
and the receiver share the machine's clock.

    .venv/bin/python -m scripts.bench_callbacks [--jobs 20] [--poll-interval 1.0]
"""

import argparse
import json
import tempfile
import time
from datetime import datetime
from pathlib import Path

from deployments.files.decoding import decode_audio
from devkit.callback_receiver import callback_receiver
from devkit.jobs import JobClient
from devkit.local_service import LocalService
from devkit.media import encode, pyannote_sample
from devkit.percentiles import percentile

KEY = "bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--poll-interval", type=float, default=None, help="callbacks.poll_interval_s")
    args = parser.parse_args()
    callbacks: dict[str, object] = {"allowed_networks": ["127.0.0.0/8"]}
    if args.poll_interval is not None:
        callbacks["poll_interval_s"] = args.poll_interval
    clip = encode(decode_audio(pyannote_sample()).samples[6 * 16_000 : 11 * 16_000], "wav")
    with (
        tempfile.TemporaryDirectory() as workdir,
        LocalService(
            Path(workdir), [KEY], unthrottled=True, callbacks=callbacks, env={"STT_CALLBACK_SECRET": "bench"}
        ) as service,
        callback_receiver() as receiver,
        JobClient(service.base_url, KEY, timeout_s=60) as jobs,
    ):
        ids = [jobs.submit(clip, "a.wav", callback_url=receiver.url)["job_id"] for _ in range(args.jobs)]
        received = receiver.wait_for(len(ids), timeout_s=60 + 15 * len(ids))
    delays: dict[str, float] = {}
    for request in received:
        body = json.loads(request.body)
        delays.setdefault(body["job_id"], request.arrived_at - datetime.fromisoformat(body["completed_at"]).timestamp())
    missing = set(ids) - set(delays)
    ms = [delay * 1000 for delay in delays.values()]
    print(f"jobs {len(ids)}, callbacks received {len(received)} (missing {len(missing)})")
    print(f"delay after completed_at: p50 {percentile(ms, 0.5):.0f} ms, p99 {percentile(ms, 0.99):.0f} ms,"
          f" max {max(ms, default=float('nan')):.0f} ms")  # fmt: skip
    print(time.strftime("measured %Y-%m-%d %H:%M UTC", time.gmtime()))


if __name__ == "__main__":
    main()
