"""Request rate, funds and per-key settings from the keys file, over HTTP against two ingress replicas."""

import contextlib
import socket
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.conftest import ADMIN_KEY, API_KEYS, KEYS_FILE, Service


def test_the_rate_limit_is_one_limit_across_ingress_replicas(service: Service) -> None:
    """test-key-limited may make 2 requests per second. The service runs two ingress replicas; a limiter
    per replica would let up to 4 of a burst through."""
    time.sleep(1.1)  # a full bucket
    with service.client(api_key="test-key-limited") as client:
        started = time.monotonic()
        responses = [client.get("/v1/models") for _ in range(8)]
        refilled = int((time.monotonic() - started) * 2)  # a loaded machine's burst takes time: tokens come back
    passed = [response.status_code for response in responses].count(200)
    assert 2 <= passed <= 2 + refilled, (passed, refilled)  # one bucket of 2, not one per replica (4)
    refused = [response for response in responses if response.status_code == 429]
    assert len(refused) == 8 - passed
    assert all(response.json() == {"detail": "request limit exceeded"} for response in refused)
    assert all(int(response.headers["Retry-After"]) >= 1 for response in refused)
    time.sleep(1.1)
    with service.client(api_key="test-key-limited") as client:
        assert client.get("/v1/models").status_code == 200  # the bucket refills


def test_polling_counts_against_the_same_limit(service: Service) -> None:
    time.sleep(1.1)
    with service.client(api_key="test-key-limited") as client:
        codes = [client.get(f"/v1/audio/transcriptions/async/{index}").status_code for index in range(4)]
    assert codes.count(404) == 2 and codes.count(429) == 2


def test_a_key_without_funds_gets_402_on_both_modes_but_may_still_list_models(
    service: Service, speech_wav: bytes
) -> None:
    with service.client(api_key="test-key-broke") as client:
        for path in ("/v1/audio/transcriptions", "/v1/audio/transcriptions/async"):
            response = client.post(path, files={"file": ("a.wav", speech_wav)})
            assert response.status_code == 402
            assert response.json()["detail"].startswith("insufficient funds")
        assert client.get("/v1/models").status_code == 200


def test_completed_work_is_charged_and_a_spent_balance_refuses_more(service: Service, speech_wav) -> None:
    """test-key-prepaid holds 5 audio seconds: a 7 s request is accepted while the balance is positive and
    charged in full; the next one is refused."""
    with service.client(api_key="test-key-prepaid") as client:
        bad = client.post("/v1/audio/transcriptions", files={"file": ("a.mp3", b"\x00" * 100)})
        assert bad.status_code == 400  # a failure is not charged...
        first = client.post("/v1/audio/transcriptions", files={"file": ("a.wav", speech_wav)})
        assert first.status_code == 200  # ...so this one still has funds
        second = client.post("/v1/audio/transcriptions", files={"file": ("a.wav", speech_wav)})
        assert second.status_code == 402  # 5 s at 0.006 EUR a minute is spent by 7 s:
        assert "balance of 0.0005 EUR is spent (0.0007 EUR used)" in second.json()["detail"]


def test_unknown_keys_are_401_before_any_rate_accounting(service: Service) -> None:
    response = httpx.get(f"{service.base_url}/v1/models", headers={"Authorization": "Bearer test-key-limited-x"})
    assert response.status_code == 401


def test_health_needs_no_key_and_reveals_nothing(service: Service) -> None:
    response = httpx.get(f"{service.base_url}/health")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_no_api_key_appears_in_any_log(service: Service) -> None:
    """The service's own output and every Ray log of the session (replicas, proxy, controller, actors)."""
    keys = [*API_KEYS, ADMIN_KEY, *(str(entry["key"]) for entry in KEYS_FILE["keys"])]
    logs = [Path(service.process.log_path), *(service.process.session_dir() / "logs").rglob("*")]
    for path in logs:
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not [key for key in keys if key in text], path


@pytest.fixture(scope="module")
def twelve_hour_bomb(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """12 hours of near-silence (real speech for 30 s, then digital silence) as FLAC: 0.6 MB."""
    from devkit.media import make_long_flac

    path = tmp_path_factory.mktemp("bomb") / "twelve-hours.flac"
    make_long_flac(path, hours=12, speech_every_s=1e9)
    return path.read_bytes()


def test_a_file_that_decodes_past_the_duration_limit_is_refused_at_once(service: Service, twelve_hour_bomb) -> None:
    started = time.monotonic()
    with service.client() as client:
        response = client.post("/v1/audio/transcriptions", files={"file": ("bomb.flac", twelve_hour_bomb)})
    assert response.status_code == 400
    assert response.json() == {"detail": "audio is too long (43200 s): the maximum is 36000 s"}
    assert time.monotonic() - started < 10  # refused without decoding 12 hours


def test_the_same_file_as_a_job_ends_in_error_with_the_limit(service: Service, twelve_hour_bomb) -> None:
    from tests.test_jobs_service import _submit, _wait

    job = _wait(service, _submit(service, twelve_hour_bomb)["job_id"], timeout_s=60)
    assert job["status"] == "error" and job["error"] == "audio is too long (43200 s): the maximum is 36000 s"


def _proxy_process(service: Service) -> psutil.Process:
    """Serve's HTTP proxy, among the processes of this service's `serve run`."""
    assert service.process.process is not None
    for process in psutil.Process(service.process.process.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if process.cmdline()[0].startswith("ray::ProxyActor"):
                return process
    raise AssertionError("no ProxyActor process")


def _send_headers(service: Service, header_bytes: int, api_key: str | None = None) -> bytes:
    """A request with one header of `header_bytes`, straight to the proxy's socket; the answer's bytes."""
    auth = f"authorization: Bearer {api_key}\r\n".encode() if api_key else b""
    with socket.create_connection(("127.0.0.1", service.process.port), timeout=30) as client:
        client.sendall(b"GET /v1/models HTTP/1.1\r\nhost: stt\r\n" + auth + b"x-padding: ")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # refused before the end: expected
            for _ in range(header_bytes // 65536):
                client.sendall(b"a" * 65536)
            client.sendall(b"\r\n\r\n")
        answer = b""
        with contextlib.suppress(ConnectionResetError, TimeoutError):
            while data := client.recv(65536):
                answer += data
    return answer


def test_oversized_request_headers_get_431_before_auth_and_cost_the_proxy_nothing(service: Service) -> None:
    proxy = _proxy_process(service)
    for key in (None, "not-a-key", API_KEYS[0]):  # the answer and its cost do not depend on the key
        answer = _send_headers(service, 128 * 1024, key)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert answer.endswith(b'{"detail": "request headers too large: at most 64 KB"}')
    before = proxy.memory_info().rss
    started = time.monotonic()
    assert _send_headers(service, 64 * 1024**2).startswith(b"HTTP/1.1 431 ")  # 64 MB, unauthenticated
    assert time.monotonic() - started < 10
    assert proxy.memory_info().rss - before < 8 * 1024**2
    with service.client() as client:  # headers under the limit still pass, and the proxy still serves
        response = client.get("/v1/models", headers={"x-padding": "a" * 32_000})
    assert response.status_code == 200
