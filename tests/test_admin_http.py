"""The admin API in-process (`tests/inprocess.py`, the real key store on SQLite): who may call it, the bodies
of every route, the key shown once, paging, the errors; and a replica's view of the store refreshed."""

import asyncio
from pathlib import Path

import httpx

from deployments.config import StorageConfig
from deployments.keys.store import KeyStore
from serve_app.common.auth import ApiKeys
from tests.inprocess import ADMIN_KEY, KEY, InProcessService, call


def admin(service: InProcessService, method: str, path: str, **kwargs) -> httpx.Response:
    return call(service, method, path, key=ADMIN_KEY, **kwargs)


def create(service: InProcessService, **body) -> dict:
    made = admin(service, "POST", "/v1/admin/keys", json={"name": "team a", **body})
    assert made.status_code == 201, made.text
    return made.json()


def test_only_admin_keys_pass(inprocess) -> None:
    assert call(inprocess, "GET", "/v1/admin/keys", key=None).status_code == 401
    assert call(inprocess, "GET", "/v1/admin/keys", key="sk-nobody").status_code == 401
    refused = call(inprocess, "GET", "/v1/admin/keys", key=KEY)
    assert refused.status_code == 403 and "admin key" in refused.json()["detail"]
    assert admin(inprocess, "GET", "/v1/admin/audit").status_code == 200
    # an admin key is no API key
    assert admin(inprocess, "GET", "/v1/billing/balance").status_code == 401


def test_a_key_made_is_shown_once_and_works_at_once(inprocess) -> None:
    made = create(inprocess, balance=2.0, rate_per_min=0.5, currency="RUB", requests_per_second=5,
                  max_running_jobs=1, callback_secret="shh-callbacks")  # fmt: skip
    key = made["key"]
    assert key.startswith("sk-") and len(key) > 40 and made["prefix"] == key[:7]
    assert made["id"].startswith("key_") and made["static"] is False and made["revocable"] is True
    assert made["balance"] == {"initial": 2.0, "remaining": 2.0, "currency": "RUB"}
    assert (made["rate_per_min"], made["requests_per_second"], made["max_running_jobs"]) == (0.5, 5, 1)
    assert made["callback_secret_set"] is True and "shh-callbacks" not in str(made)
    balance = call(inprocess, "GET", "/v1/billing/balance", key=key)
    assert balance.status_code == 200 and balance.json()["balance"] == 2.0
    for path in ("/v1/admin/keys", f"/v1/admin/keys/{made['id']}", "/v1/admin/audit"):
        answer = admin(inprocess, "GET", path)
        assert answer.status_code == 200 and key not in answer.text and "shh-callbacks" not in answer.text
    # the store kept the hash, not the key
    assert inprocess.services is not None and inprocess.services.key_store is not None
    stored = inprocess.services.key_store.get(made["id"])
    assert stored is not None and key not in repr(stored) and stored.key_hash != key


def test_credit_tops_the_balance_up_as_a_usage_row(inprocess) -> None:
    made = create(inprocess, balance=1.0, currency="EUR")
    credited = admin(inprocess, "POST", f"/v1/admin/keys/{made['id']}/credit", json={"amount": 2.5, "note": "top"})
    assert credited.status_code == 200, credited.text
    assert credited.json() == {"id": made["id"], "credited": 2.5,
                               "balance": {"initial": 1.0, "remaining": 3.5, "currency": "EUR"}}  # fmt: skip
    assert call(inprocess, "GET", "/v1/billing/balance", key=made["key"]).json()["balance"] == 3.5
    [row] = call(inprocess, "GET", "/v1/billing/usage", key=made["key"]).json()["items"]
    assert (row["task"], row["seconds"], row["cost"]) == ("credit", 0, -2.5)
    assert admin(inprocess, "GET", f"/v1/admin/keys/{made['id']}").json()["balance"]["remaining"] == 3.5
    for body in ({"amount": 0}, {"amount": -1}, {}, {"amount": 1, "extra": 1}):
        assert admin(inprocess, "POST", f"/v1/admin/keys/{made['id']}/credit", json=body).status_code == 422
    unlimited = create(inprocess)
    refused = admin(inprocess, "POST", f"/v1/admin/keys/{unlimited['id']}/credit", json={"amount": 1})
    assert refused.status_code == 409 and "unlimited" in refused.json()["detail"]


def test_patch_changes_only_what_is_sent(inprocess) -> None:
    made = create(inprocess, requests_per_second=5)
    path = f"/v1/admin/keys/{made['id']}"
    changed = admin(inprocess, "PATCH", path, json={"name": "team b", "rate_per_min": 0.1})
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["name"], body["rate_per_min"], body["requests_per_second"]) == ("team b", 0.1, 5)
    cleared = admin(inprocess, "PATCH", path, json={"requests_per_second": None}).json()
    assert cleared["requests_per_second"] is None and cleared["name"] == "team b"
    assert admin(inprocess, "PATCH", path, json={}).status_code == 400
    for bad in ({"name": None}, {"name": ""}, {"balance": 3}, {"currency": "USD"}, {"requests_per_second": 0}):
        answer = admin(inprocess, "PATCH", path, json=bad)
        assert answer.status_code == 422 and "detail" in answer.json(), bad


def test_revoked_keys_are_refused_at_once_and_stay_listed(inprocess) -> None:
    made = create(inprocess)
    path = f"/v1/admin/keys/{made['id']}"
    assert call(inprocess, "GET", "/v1/billing/balance", key=made["key"]).status_code == 200
    assert admin(inprocess, "DELETE", path).status_code == 204
    assert call(inprocess, "GET", "/v1/billing/balance", key=made["key"]).status_code == 401
    shown = admin(inprocess, "GET", path).json()
    assert shown["revoked_at"] is not None and shown["revocable"] is False
    assert admin(inprocess, "DELETE", path).status_code == 204  # again: nothing changes
    assert admin(inprocess, "PATCH", path, json={"name": "x"}).status_code == 409
    assert admin(inprocess, "POST", path + "/credit", json={"amount": 1}).status_code == 409
    actions = [item["action"] for item in admin(inprocess, "GET", "/v1/admin/audit").json()["items"]]
    assert actions == ["revoke", "create"]


def test_unknown_ids_are_404_and_static_keys_409(inprocess) -> None:
    for method, suffix, body in (("GET", "", None), ("PATCH", "", {"name": "x"}), ("DELETE", "", None),
                                 ("POST", "/credit", {"amount": 1})):  # fmt: skip
        answer = admin(inprocess, method, f"/v1/admin/keys/key_nothere{suffix}", json=body)
        assert answer.status_code == 404 and "key_nothere" in answer.json()["detail"]
    listed = admin(inprocess, "GET", "/v1/admin/keys").json()["items"]
    static = [item for item in listed if item["static"]]
    assert len(static) == len(inprocess.services.api_keys.static) and all(
        item["revocable"] is False and item["prefix"] is None for item in static
    )
    priced = next(item for item in static if item["id"] == "static-7")
    assert priced["balance"] == {"initial": 1.0, "remaining": 1.0, "currency": "RUB"}
    refused = admin(inprocess, "DELETE", "/v1/admin/keys/static-7")
    assert refused.status_code == 409 and "keys file" in refused.json()["detail"]
    assert admin(inprocess, "GET", "/v1/admin/keys/static-7").status_code == 200
    assert admin(inprocess, "POST", "/v1/admin/keys", json={"balance": 1}).status_code == 422  # no name
    assert admin(inprocess, "POST", "/v1/admin/keys", content=b"{", headers={"content-type": "application/json"}
                 ).status_code == 422  # fmt: skip
    assert admin(inprocess, "GET", "/v1/admin/keys", params={"cursor": "zz"}).status_code == 400
    assert KEY not in admin(inprocess, "GET", "/v1/admin/keys").text


def test_lists_page_through_static_and_stored_keys(inprocess) -> None:
    made = [create(inprocess, balance=float(n))["id"] for n in range(3)]
    seen, cursor = [], None
    while True:
        page = admin(inprocess, "GET", "/v1/admin/keys", params={"limit": 3, **({"cursor": cursor} if cursor else {})})
        body = page.json()
        assert len(body["items"]) <= 3
        seen += [item["id"] for item in body["items"]]
        if not body["has_more"]:
            break
        cursor = body["next_cursor"]
    statics = len(inprocess.services.api_keys.static)
    assert len(seen) == statics + 3 and len(set(seen)) == len(seen) and seen[statics:] == made
    admin(inprocess, "DELETE", f"/v1/admin/keys/{made[0]}")
    first = admin(inprocess, "GET", "/v1/admin/audit", params={"limit": 2}).json()
    assert [item["action"] for item in first["items"]] == ["revoke", "create"] and first["has_more"]
    rest = admin(inprocess, "GET", "/v1/admin/audit", params={"cursor": first["next_cursor"]}).json()
    assert [item["key_id"] for item in rest["items"]] == made[1::-1] and not rest["has_more"]
    entry = rest["items"][0]
    assert (
        entry["actor"].startswith("admin #1") and ADMIN_KEY not in entry["actor"] and entry["details"]["balance"] == 1
    )
    only = admin(inprocess, "GET", "/v1/admin/audit", params={"key_id": made[0]}).json()["items"]
    assert [item["action"] for item in only] == ["revoke", "create"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_another_replica_sees_changes_within_its_refresh_interval(tmp_path: Path) -> None:
    store = KeyStore(StorageConfig(state_dir=str(tmp_path)))
    clock = Clock()
    replica = ApiKeys([], KeyStore(store.engine), refresh_s=1.0, clock=clock)  # another replica's view
    made = store.create("admin", "a")

    async def find() -> bool:
        return await replica.find(made.key) is not None

    assert asyncio.run(find())  # the first request reads the store
    store.revoke("admin", made.stored.key_id)
    clock.now = 0.5
    assert asyncio.run(find())  # within its interval, the view may be stale
    clock.now = 1.0
    assert not asyncio.run(find())  # no longer
    again = store.create("admin", "b")
    clock.now = 2.0
    assert asyncio.run(replica.find(again.key)) is not None
