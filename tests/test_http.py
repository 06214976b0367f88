"""Tier 1: the HTTP layer's rules in-process (`create_app` with fake handles, no Ray): auth, rate, funds,
validation, limits, media types, SSRF refusals, error shapes, and rendering of what the pipeline returns.
The capabilities themselves are tested end to end through `serve run` in the *_service.py modules."""

import errno
import time

import pytest
import srt
from ray import exceptions as ray_errors

from deployments.errors import StorageError
from deployments.jobs.records import owner_of
from tests.fakes import Remote
from tests.inprocess import BROKE_KEY, KEY, LIMITED_KEY, UPLOAD_LIMIT, call
from tests.test_job_tracker import TRANSCRIPT

ROUTES = ["/v1/audio/transcriptions", "/v1/audio/transcriptions/async"]
AUDIO = {"file": ("a.wav", b"RIFF....WAVEfmt audio")}


@pytest.mark.parametrize("key", [None, "wrong-key", KEY + "x"])
def test_a_bad_or_missing_key_is_401_on_every_endpoint(inprocess, key) -> None:
    for method, path in [("GET", "/v1/models"), ("GET", "/models"), ("GET", "/v1/audio/transcriptions/async/x")]:
        response = call(inprocess, method, path, key=key)
        assert response.status_code == 401
        assert response.json() == {"detail": "authentication credentials were not provided or are invalid"}
        assert response.headers["www-authenticate"] == "Bearer"
    for path in ROUTES:
        assert call(inprocess, "POST", path, key=key, files=AUDIO).status_code == 401
    assert inprocess.spooled() == []


def test_health_needs_no_key(inprocess) -> None:
    assert call(inprocess, "GET", "/health", key=None).json() == {"status": "ok"}


def test_over_the_rate_is_429_with_retry_after(inprocess) -> None:
    codes = [call(inprocess, "GET", "/v1/models", key=LIMITED_KEY).status_code for _ in range(4)]
    assert codes == [200, 200, 429, 429]
    refused = call(inprocess, "GET", "/v1/models", key=LIMITED_KEY)
    assert refused.json() == {"detail": "request limit exceeded"} and int(refused.headers["Retry-After"]) >= 1
    time.sleep(0.6)
    assert call(inprocess, "GET", "/v1/models", key=LIMITED_KEY).status_code == 200


@pytest.mark.parametrize("path", ROUTES)
def test_no_funds_is_402_before_the_upload_is_read(inprocess, path) -> None:
    response = call(inprocess, "POST", path, key=BROKE_KEY, files=AUDIO)
    assert response.status_code == 402 and response.json()["detail"].startswith("insufficient funds")
    assert inprocess.pipeline.requests == [] and inprocess.spooled() == []


@pytest.mark.parametrize("path", ROUTES)
def test_an_upload_over_the_limit_is_413_and_nothing_is_kept(inprocess, path) -> None:
    response = call(inprocess, "POST", path, files={"file": ("big.wav", b"\x00" * (UPLOAD_LIMIT + 1))})
    assert response.status_code == 413
    assert response.json() == {"detail": f"file is too large: the limit is {UPLOAD_LIMIT} bytes"}
    assert inprocess.spooled() == []


@pytest.mark.parametrize("path", ROUTES)
def test_a_body_that_is_not_a_form_is_415(inprocess, path) -> None:
    response = call(inprocess, "POST", path, json={"file": "a.wav"})
    assert response.status_code == 415 and "multipart/form-data" in response.json()["detail"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("response_format", "xml"), ("temperature", "2"), ("language", "xx"), ("task", "sing")],
)
def test_invalid_fields_are_422_with_their_location(inprocess, field, value) -> None:
    response = call(inprocess, "POST", ROUTES[0], files=AUDIO, data={field: value})
    assert response.status_code == 422
    issue = response.json()["detail"][0]
    assert issue["loc"][:2] == ["body", field] and set(issue) == {"loc", "msg", "type"}
    assert inprocess.spooled() == []


def test_an_empty_file_is_400(inprocess) -> None:
    response = call(inprocess, "POST", ROUTES[0], files={"file": ("a.wav", b"")})
    assert response.status_code == 400 and response.json() == {"detail": "the uploaded file is empty"}


@pytest.mark.parametrize("url", ["http://10.0.0.1/a.mp3", "http://[::1]/a.mp3", "http://169.254.169.254/"])
def test_a_non_public_url_is_refused_when_a_job_is_submitted(inprocess, url) -> None:
    response = call(inprocess, "POST", ROUTES[1], data={"url": url})
    assert response.status_code == 400 and "non-public address" in response.json()["detail"]


def test_what_the_pipeline_refuses_is_a_400_with_its_reason(inprocess) -> None:
    response = call(inprocess, "POST", ROUTES[0], files={"file": ("a.mp3", b"not audio")})
    assert response.status_code == 400
    assert response.json()["detail"].startswith("audio processing failed: the file is not a readable")
    assert inprocess.spooled() == []  # the spooled upload is removed after the request
    assert inprocess.ledger.usage("placeholder") == 0.0


def test_the_sync_route_sends_a_path_not_audio_and_charges_once(inprocess) -> None:
    response = call(inprocess, "POST", ROUTES[0], files=AUDIO, data={"response_format": "srt"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    assert [cue.content for cue in srt.parse(response.text)] == ["Hello there."]
    (request,) = inprocess.pipeline.requests
    assert request.source_path.startswith(str(inprocess.state_dir / "spool"))  # one spool for both modes
    assert inprocess.spooled() == []
    with inprocess.ledger.engine.connect() as connection:
        (charged,) = connection.exec_driver_sql("SELECT audio_seconds FROM charges").all()
    assert tuple(charged) == (2.5,)


def test_a_job_is_rendered_in_its_format_when_polled(inprocess) -> None:
    created = call(
        inprocess,
        "POST",
        ROUTES[1],
        files=AUDIO,
        data={"response_format": "verbose_json", "timestamp_granularities[]": "word"},
    )
    assert created.status_code == 200
    job_id = created.json()["job_id"]
    for _ in range(100):
        job = call(inprocess, "GET", f"{ROUTES[1]}/{job_id}").json()
        if job["status"] != "in_progress":
            break
    assert job["status"] == "complete" and job["progress"] == 1.0
    assert job["result"]["language"] == "english" and job["result"]["text"] == "Hello there."
    assert [word["word"] for word in job["result"]["words"]] == ["Hello", "there."]
    assert call(inprocess, "GET", f"{ROUTES[1]}/{job_id}", key=BROKE_KEY).status_code == 404  # another key's job


def test_the_per_key_job_cap_is_429(inprocess) -> None:
    inprocess.pipeline.transcribe_streaming = _Never()
    codes = [call(inprocess, "POST", ROUTES[1], files=AUDIO).status_code for _ in range(3)]
    assert codes == [200, 200, 429]


class _Never:
    def options(self, stream: bool) -> "_Never":
        return self

    async def remote(self, request):
        import asyncio

        await asyncio.Event().wait()
        yield None


@pytest.mark.parametrize(
    ("number", "status", "start"),
    [(errno.ENOSPC, 507, "insufficient storage"), (errno.EROFS, 503, "storage unavailable")],
)
def test_a_job_record_the_disk_refuses_is_a_json_507_or_503_and_nothing_is_kept(
    inprocess,
    number,
    status,
    start,
) -> None:
    def refuse(job) -> None:
        raise StorageError(number, "the job store could not be written (database or disk is full)")

    inprocess.tracker.store.save = refuse
    response = call(inprocess, "POST", ROUTES[1], files=AUDIO)
    assert response.status_code == status and response.json()["detail"].startswith(start)
    assert status != 503 or response.headers["Retry-After"] == "30"
    assert inprocess.spooled() == []


def test_a_synchronous_request_whose_pipeline_replica_died_is_retried_once_then_503(inprocess, monkeypatch) -> None:
    monkeypatch.setattr("deployments.retry.asyncio.sleep", _no_wait)
    answer = inprocess.pipeline._transcribe
    deaths: list[int] = []

    async def dies(times: int, request):
        if len(deaths) < times:
            deaths.append(1)
            lost = ray_errors.ActorDiedError()
            raise ray_errors.RayTaskError("transcribe", "Traceback ...", lost).as_instanceof_cause()
        return await answer(request)

    inprocess.pipeline.transcribe = Remote(lambda request: dies(1, request))
    response = call(inprocess, "POST", "/v1/audio/transcriptions", files=AUDIO)
    assert response.status_code == 200 and len(deaths) == 1  # sent again, once, inside the service

    deaths.clear()
    inprocess.pipeline.transcribe = Remote(lambda request: dies(2, request))
    response = call(inprocess, "POST", "/v1/audio/transcriptions", files=AUDIO)
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    assert response.json() == {
        "detail": "service unavailable: the worker handling this request stopped (a restart or redeploy); send it again"
    }
    assert inprocess.spooled() == []
    assert inprocess.ledger.usage(owner_of(KEY)) == TRANSCRIPT.duration  # only the request that succeeded


async def _no_wait(seconds: float) -> None:
    return None
