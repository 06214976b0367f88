"""The admin API on the real service (two ingress replicas): a key made, used, topped up and revoked while a
client calls with it, the audit trail, and the key in neither the service's log nor its database."""

import threading
import time

import httpx
import pytest
from typer.testing import CliRunner
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from stt_cli.main import app as cli
from tests.conftest import ADMIN_KEY, Service

PROPAGATION_S = 2.0
"""A revoked key is refused by every replica this long after the DELETE's answer (the issue's bound)."""


def admin_client(service: Service) -> httpx.Client:
    return service.client(api_key=ADMIN_KEY, timeout=30)


def test_a_key_is_made_used_credited_and_revoked_while_in_use(service: Service, speech_wav: bytes) -> None:
    with admin_client(service) as admin:
        made = admin.post("/v1/admin/keys", json={"name": "team a", "balance": 1.0, "rate_per_min": 0.6,
                                                  "requests_per_second": 100})  # fmt: skip
        assert made.status_code == 201, made.text
        key, key_id = made.json()["key"], made.json()["id"]
        time.sleep(1.5)  # the other ingress replica re-reads the key store at most every second
        # an API key cannot use the admin API, an admin key cannot transcribe
        with service.client(api_key=key, timeout=30) as user:
            assert user.get("/v1/admin/keys").status_code == 403
        assert admin.post("/v1/audio/transcriptions", files={"file": ("a.wav", speech_wav)}).status_code == 401

        with service.client(api_key=key) as user:
            answer = user.post("/v1/audio/transcriptions", files={"file": ("a.wav", speech_wav)})
            assert answer.status_code == 200, answer.text
            assert answer.json()["text"].strip()
            spent_balance = user.get("/v1/billing/balance").json()["balance"]
            assert 0 < spent_balance < 1.0

            credited = admin.post(f"/v1/admin/keys/{key_id}/credit", json={"amount": 2.0, "note": "top-up"})
            assert credited.status_code == 200, credited.text
            assert abs(credited.json()["balance"]["remaining"] - (spent_balance + 2.0)) < 1e-6
            assert abs(user.get("/v1/billing/balance").json()["balance"] - (spent_balance + 2.0)) < 1e-6
            tasks = [(item["task"], item["cost"]) for item in user.get("/v1/billing/usage").json()["items"]]
            assert tasks[0] == ("credit", -2.0) and tasks[1][0] == "transcribe"

        sent = call_at_10_rps_while(lambda: admin.delete(f"/v1/admin/keys/{key_id}"), key, service.base_url)
        revoked_at, answers = sent
        # answered before the revocation was sent (one sent just before it may be answered after it: 401)
        before = [status for _, answered, status in answers if answered < revoked_at[0]]
        late = [status for sent_at, _, status in answers if sent_at >= revoked_at[1] + PROPAGATION_S]
        assert before and set(before) == {200}
        assert len(late) >= 15 and set(late) == {401}, answers

        with pytest.raises(InvalidStatus) as refused:  # nor does it open a live session
            connect(service.base_url.replace("http", "ws") + "/v1/transcribe",
                    additional_headers={"Authorization": f"Bearer {key}"}, open_timeout=10)  # fmt: skip
        assert refused.value.response.status_code == 401

        audit = admin.get("/v1/admin/audit", params={"key_id": key_id}).json()["items"]
        assert [item["action"] for item in audit] == ["revoke", "credit", "create"]
        assert all(item["actor"].startswith("admin #1") and ADMIN_KEY not in item["actor"] for item in audit)
        assert admin.get(f"/v1/admin/keys/{key_id}").json()["revoked_at"] is not None

    log = service.process.log_path.read_bytes()
    assert key.encode() not in log and ADMIN_KEY.encode() not in log
    database = b"".join(path.read_bytes() for path in service.state_dir.glob("jobs.sqlite3*"))
    assert database and key.encode() not in database and ADMIN_KEY.encode() not in database


def call_at_10_rps_while(action, key: str, base_url: str) -> tuple[tuple[float, float], list[tuple[float, float, int]]]:
    """(when `action` was sent and answered, [(when each request was sent, when answered, its status)]): a client
    sends 10 requests a second with `key` for 1 s before `action` and 4 s after."""
    answers: list[tuple[float, float, int]] = []
    done = threading.Event()

    def send() -> None:
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as client:
            next_at = time.monotonic()
            while not done.is_set():
                at = time.monotonic()
                status = client.get("/v1/models").status_code
                answers.append((at, time.monotonic(), status))
                next_at += 0.1
                time.sleep(max(0.0, next_at - time.monotonic()))

    sender = threading.Thread(target=send)
    sender.start()
    time.sleep(1.0)
    sent = time.monotonic()
    assert action().status_code == 204
    answered = time.monotonic()
    time.sleep(PROPAGATION_S + 2.0)
    done.set()
    sender.join()
    return (sent, answered), answers


def test_the_cli_makes_lists_and_revokes_keys(service: Service) -> None:
    env = {"STT_BASE_URL": service.base_url, "STT_ADMIN_KEY": ADMIN_KEY, "COLUMNS": "300"}  # rich wraps no line
    runner = CliRunner()
    made = runner.invoke(cli, ["admin", "keys", "create", "cli team", "--balance", "3"], env=env)
    assert made.exit_code == 0, made.output
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("sk-")
    listed = runner.invoke(cli, ["admin", "keys", "list"], env=env)
    assert listed.exit_code == 0 and "cli team" in listed.stdout and key not in listed.stdout
    with admin_client(service) as admin:
        key_id = next(item["id"] for item in admin.get("/v1/admin/keys", params={"limit": 100}).json()["items"]
                      if item["name"] == "cli team")  # fmt: skip
    credited = runner.invoke(cli, ["admin", "keys", "credit", key_id, "1.5"], env=env)
    assert credited.exit_code == 0 and "4.5000" in credited.stdout, credited.output
    assert runner.invoke(cli, ["admin", "keys", "revoke", key_id], env=env).exit_code == 0
    refused = runner.invoke(cli, ["admin", "keys", "revoke", "static-42"], env=env)
    assert refused.exit_code == 1 and "keys file" in refused.output
    unauthorised = runner.invoke(cli, ["admin", "keys", "list", "--admin-key", "not-an-admin"], env=env)
    assert unauthorised.exit_code == 1 and "401" in unauthorised.output
    assert key.encode() not in service.process.log_path.read_bytes()
