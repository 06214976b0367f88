"""Job callbacks in process: the `callback_url` field and its refusals, the signature, the poll's `callback`, and
one edge sender delivering to a real loopback receiver (the outbox on both databases: test_storage_contract.py;
the whole service: test_callbacks_service.py)."""

import json
import time
from pathlib import Path

import pytest

from deployments.callbacks.store import CallbackState, CallbackStatus
from deployments.config import CallbacksConfig
from devkit.callback_receiver import callback_receiver
from serve_app.callbacks.sender import CallbackSender
from serve_app.callbacks.signing import signature, verify
from tests.inprocess import CALLBACK_KEY, CALLBACK_SECRET, call
from tests.test_http import AUDIO, ROUTES

TRANSLATIONS = "/v1/audio/translations"
PUBLIC_HOOK = "http://93.184.216.34/hook"
"""A public address, written as one: no DNS is asked (nothing is sent to it in these tests)."""


def test_callback_url_is_refused_where_there_is_no_job(inprocess) -> None:
    data = {"callback_url": PUBLIC_HOOK}
    synchronous = call(inprocess, "POST", ROUTES[0], key=CALLBACK_KEY, files=AUDIO, data=data)
    assert synchronous.status_code == 400 and "callback_url is for jobs" in synchronous.json()["detail"]
    translation = call(inprocess, "POST", TRANSLATIONS, key=CALLBACK_KEY, files=AUDIO, data=data)
    assert translation.status_code == 400 and "'callback_url'" in translation.json()["detail"]


def test_callback_url_needs_a_secret(inprocess) -> None:
    refused = call(inprocess, "POST", ROUTES[1], files=AUDIO, data={"callback_url": PUBLIC_HOOK})
    assert refused.status_code == 400
    assert "STT_CALLBACK_SECRET" in refused.json()["detail"] and "secret" in refused.json()["detail"]
    assert inprocess.spooled() == []


@pytest.mark.parametrize(
    "url",
    [
        "http://10.1.2.3/hook",
        "http://192.168.0.7:8080/x",
        "http://[fd00::1]/hook",
        "http://169.254.169.254/",
        "ftp://x/",
        "no url",
        "http://" + "é" * 70 + ".com/",
        "http://x:99999/",
    ],
)
def test_a_non_public_callback_url_is_a_400_naming_it(inprocess, url: str) -> None:
    refused = call(inprocess, "POST", ROUTES[1], key=CALLBACK_KEY, files=AUDIO, data={"callback_url": url})
    assert refused.status_code == 400, refused.text
    assert refused.json()["detail"].startswith("callback_url: ")
    assert inprocess.spooled() == []


def test_the_signature_is_hmac_sha256_over_the_time_and_the_body() -> None:
    body = b'{"job_id":"j"}'
    header = signature(b"secret", body, 1_700_000_000)
    assert header == (
        "t=1700000000,v1=" + __import__("hmac").new(b"secret", b"1700000000." + body, "sha256").hexdigest()
    )
    assert verify(b"secret", body, header, now=1_700_000_100)
    assert not verify(b"other", body, header, now=1_700_000_100)  # a wrong secret does not verify
    assert not verify(b"secret", body + b" ", header, now=1_700_000_100)
    assert not verify(b"secret", body, header, now=1_700_000_000 + 301)  # too old: a replay


def test_the_receiver_in_the_docs_verifies_a_signature_and_refuses_old_ones() -> None:
    text = (Path(__file__).parents[1] / "docs" / "api" / "rest.md").read_text()
    snippet = text.split("A receiver checks the signature", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(snippet, namespace)
    body, now = b'{"job_id":"j"}', int(time.time())
    assert namespace["verified"](b"secret", body, signature(b"secret", body, now))
    assert not namespace["verified"](b"wrong", body, signature(b"secret", body, now))
    assert not namespace["verified"](b"secret", body, signature(b"secret", body, now - 301))


def _finished(inprocess, job_id: str, key: str) -> dict:
    for _ in range(200):
        job = call(inprocess, "GET", f"{ROUTES[1]}/{job_id}", key=key).json()
        if job["status"] != "in_progress":
            return job
        inprocess.loop.run_until_complete(__import__("asyncio").sleep(0.01))
    raise AssertionError("the job never ended")


def test_a_job_without_a_callback_has_no_callback_field(inprocess) -> None:
    job_id = call(inprocess, "POST", ROUTES[1], files=AUDIO).json()["job_id"]
    assert "callback" not in _finished(inprocess, job_id, key="inprocess-key")


def test_the_sender_retries_then_delivers_the_poll_answer_signed(inprocess) -> None:
    with callback_receiver() as receiver:
        receiver.fail_next(1)
        created = call(inprocess, "POST", ROUTES[1], key=CALLBACK_KEY, files=AUDIO, data={"callback_url": receiver.url})
        assert created.status_code == 200, created.text
        job_id = created.json()["job_id"]
        ended = _finished(inprocess, job_id, CALLBACK_KEY)
        assert ended["callback"] == {"status": "pending", "attempts": 0, "last_status": None}
        assert inprocess.services is not None and inprocess.services.jobs is not None
        services = inprocess.services
        sender = CallbackSender(services.jobs, inprocess.config.callbacks, services.callback_secret_for)
        outcomes: list[CallbackState | None] = []
        deadline = time.monotonic() + 10
        while len(outcomes) < 2 and time.monotonic() < deadline:
            tasks = inprocess.loop.run_until_complete(sender.run_once())
            outcomes += [inprocess.loop.run_until_complete(task) for task in tasks]
            time.sleep(0.05)
        assert all(state is not None for state in outcomes)
        assert [state.status for state in outcomes if state] == [CallbackStatus.pending, CallbackStatus.delivered]
        assert [state.last_status for state in outcomes if state] == [500, 200]
        _, second = receiver.requests
        assert second.headers["X-STT-Job-Id"] == job_id and second.headers["Content-Type"] == "application/json"
        assert verify(CALLBACK_SECRET.encode(), second.body, second.headers["X-STT-Signature"], now=time.time())
        sent = json.loads(second.body)
        assert sent["callback"] == {"status": "pending", "attempts": 1, "last_status": 500}  # as polled when sent
        polled = call(inprocess, "GET", f"{ROUTES[1]}/{job_id}", key=CALLBACK_KEY).json()
        assert polled["callback"] == {"status": "delivered", "attempts": 2, "last_status": 200}
        assert {**sent, "callback": None} == {**polled, "callback": None}
        assert inprocess.loop.run_until_complete(sender.run_once()) == []  # nothing due any more
        inprocess.loop.run_until_complete(sender.close())


def test_a_callback_url_that_became_private_is_not_sent(inprocess) -> None:
    """Checked again at each attempt: an allow-list narrowed since submission (or DNS changed) sends nothing."""
    with callback_receiver() as receiver:
        created = call(inprocess, "POST", ROUTES[1], key=CALLBACK_KEY, files=AUDIO, data={"callback_url": receiver.url})
        _finished(inprocess, created.json()["job_id"], CALLBACK_KEY)
        assert inprocess.services is not None and inprocess.services.jobs is not None

        async def any_secret(owner: str) -> bytes:
            return b"s"

        sender = CallbackSender(inprocess.services.jobs, CallbacksConfig(), any_secret)
        tasks = inprocess.loop.run_until_complete(sender.run_once())
        (state,) = [inprocess.loop.run_until_complete(task) for task in tasks]
        assert state is not None and state.status == CallbackStatus.pending and state.last_status is None
        assert receiver.requests == []
        inprocess.loop.run_until_complete(sender.close())


def test_the_openapi_schema_documents_the_field_and_the_polls_callback(inprocess) -> None:
    schema = call(inprocess, "GET", "/openapi.json").json()
    callback = schema["components"]["schemas"]["JobObject"]["properties"]["callback"]
    assert {"$ref": "#/components/schemas/CallbackObject"} in callback["anyOf"] and callback["description"]
    states = schema["components"]["schemas"]["CallbackObject"]["properties"]["status"]["enum"]
    assert states == ["pending", "delivered", "failed"]
    form = json.dumps(schema["paths"]["/v1/audio/transcriptions/async"]["post"]["requestBody"])
    assert "callback_url" in form
