"""The service on a local Ray cluster of several nodes (devkit/local_cluster.py: a head with no replicas, worker
nodes with the Transcriber autoscaled from zero), until Ctrl-C: to try by hand what tests/test_cluster_service.py
and `scripts/chaos.py --faults node,tracker-node` do.

    .venv/bin/python -m scripts.local_cluster [--workers 3] [--model embedded:tiny.en] [--key sk-local]
"""

import argparse
import contextlib
import tempfile
import threading
from pathlib import Path

from devkit.local_cluster import LocalCluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=3, help="Worker nodes (one Transcriber replica each at most).")
    parser.add_argument("--model", default="embedded:tiny.en", help="The Whisper model the service runs.")
    parser.add_argument("--key", default="sk-local", help="The API key the service accepts.")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as workdir,
        LocalCluster(Path(workdir), [args.key], workers=args.workers, model=args.model) as cluster,
    ):
        print(f"the service answers at {cluster.base_url} (key {args.key}); Ctrl-C stops the cluster", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
