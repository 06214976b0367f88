"""A full disk under `storage.state_dir`, end to end: while it is full, new work is refused with a JSON 507
naming the cause and the service keeps answering; the jobs that were running complete once space returns,
and new work is served again. (The test service's state_dir is a tmpfs of its own where the machine
allows the mount; elsewhere this test is skipped. The tracker's side is also tested without Ray in
tests/test_job_tracker.py, with a store that raises ENOSPC.)"""

import errno
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from deployments.files.decoding import decode_audio
from devkit.media import encode, pyannote_sample
from tests.conftest import Service
from tests.test_jobs_service import ASYNC, _submit, _wait

SYNC = "/v1/audio/transcriptions"


class DiskFiller:
    """Keeps the filesystem of `path` full: whatever space is freed (a finished job's spool) is taken again
    at once, so every write of the service's fails until `stop`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stopped = threading.Event()
        self.file = path.open("wb", buffering=0)
        self._fill()
        self.thread = threading.Thread(target=self._keep_full, daemon=True)
        self.thread.start()

    def _fill(self) -> None:
        for size in (1 << 20, 1 << 12):
            try:
                while True:
                    self.file.write(b"\0" * size)
            except OSError as error:
                assert error.errno == errno.ENOSPC

    def _keep_full(self) -> None:
        while not self.stopped.wait(0.02):
            self._fill()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.file.close()
        self.path.unlink()


@pytest.mark.slow
def test_a_full_disk_mid_job_is_a_507_and_every_job_completes_when_space_returns(service: Service) -> None:
    if not service.state_on_own_filesystem:
        pytest.skip("the test service's state_dir is not a filesystem of its own here (mounting a tmpfs needs root)")
    samples = decode_audio(pyannote_sample()).samples
    call = encode(samples, "wav")  # 30 s
    # 2 minutes each: the third job (two run at once) cannot have finished before the disk is full
    long_call = encode(np.tile(samples, 4), "wav")
    jobs = [_submit(service, long_call)["job_id"] for _ in range(3)]
    filler = DiskFiller(service.state_dir / "filler")  # the disk fills while the jobs run, and stays full
    try:
        with service.client() as client:
            sync = client.post(SYNC, files={"file": ("call.wav", call)})
            job = client.post(ASYNC, files={"file": ("call.wav", call)})
            assert client.get("/v1/models").status_code == 200  # still answering
            polled = [client.get(f"{ASYNC}/{job_id}").status_code for job_id in jobs]
        for refused in (sync, job):
            assert refused.status_code == 507, refused.text
            assert refused.json()["detail"].startswith("insufficient storage: the service's disk is full")
        assert polled == [200, 200, 200]
        time.sleep(5)  # the jobs meet the full disk: the last one cannot even write its decoded audio
        with service.client() as client:
            waiting = client.get(f"{ASYNC}/{jobs[-1]}").json()
        assert waiting["status"] == "in_progress", waiting  # waits for space rather than failing
    finally:
        filler.stop()
    finished = [_wait(service, job_id, timeout_s=120) for job_id in jobs]
    assert [job["status"] for job in finished] == ["complete"] * 3, finished
    assert all("chicago" in job["result"]["text"].lower() for job in finished)
    with service.client() as client:
        assert client.post(SYNC, files={"file": ("call.wav", call)}).status_code == 200
    assert list((service.state_dir / "spool").iterdir()) == []  # every spooled input removed in the end
