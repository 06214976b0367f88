"""The key store's contract (deployments/keys/store.py) on both backends, SQLite and a real PostgreSQL server
(tests/postgres.py): keys stored by hash only, each change with its audit row and a raised version in one
transaction, credits as ledger rows, changes from several replicas at once."""

import threading

import pytest
from sqlalchemy import select, text

from deployments.billing.ledger import UsageLedger
from deployments.config import StorageConfig
from deployments.jobs.records import owner_of
from deployments.keys.store import KeyStore, RevokedKeyError
from deployments.storage.database import api_keys, charges, key_audit


def test_a_key_is_stored_by_its_hash_and_read_back(storage: StorageConfig) -> None:
    store = KeyStore(storage)
    start = store.version()
    made = store.create("admin #1", "team a", callback_secret="cb", balance=3.0, currency="RUB", max_running_jobs=2)
    stored = made.stored
    assert stored.key_hash == owner_of(made.key) and stored.prefix == made.key[:7] and stored.callback_secret == "cb"
    assert (stored.balance, stored.currency, stored.max_running_jobs, stored.rate_per_min) == (3.0, "RUB", 2, None)
    assert store.version() == start + 1
    assert KeyStore(storage).get(stored.key_id) == stored  # another opener (replica) reads the same
    assert store.get("key_missing") is None
    with store.engine.connect() as connection:  # the key itself is in no column of any row
        rows = [*connection.execute(select(api_keys)).all(), *connection.execute(select(key_audit)).all()]
    assert made.key not in repr(rows) and made.key[7:] not in repr(rows)
    version, active = store.active()
    assert version == start + 1 and [key.key_id for key in active] == [stored.key_id]


def test_changes_are_audited_and_raise_the_version(storage: StorageConfig) -> None:
    store = KeyStore(storage)
    made = store.create("admin #1", "a", requests_per_second=4.0).stored
    updated = store.update("admin #2", made.key_id, {"name": "b", "requests_per_second": None, "callback_secret": "x"})
    assert updated is not None and (updated.name, updated.requests_per_second) == ("b", None)
    assert store.credit("admin #1", made.key_id, 1.5, "welcome") is not None
    revoked = store.revoke("admin #1", made.key_id)
    assert revoked is not None and revoked.revoked
    assert store.revoke("admin #1", made.key_id) == revoked  # twice: nothing changes
    assert store.update("admin", "key_missing", {"name": "x"}) is None and store.revoke("a", "key_missing") is None
    with pytest.raises(RevokedKeyError):
        store.update("admin", made.key_id, {"name": "c"})
    with pytest.raises(RevokedKeyError):
        store.credit("admin", made.key_id, 1.0)
    assert store.version() == 4 and store.active()[1] == []
    entries = store.audit_page(None, 10)
    assert [(entry.action, entry.actor) for entry in entries] == [
        ("revoke", "admin #1"), ("credit", "admin #1"), ("update", "admin #2"), ("create", "admin #1")
    ]  # fmt: skip
    assert entries[2].details == {"name": "b", "requests_per_second": None, "callback_secret": True}  # no secret
    assert entries[1].details["amount"] == 1.5 and entries[1].details["note"] == "welcome"
    assert [entry.action for entry in store.audit_page(entries[1].entry_id, 10)] == ["update", "create"]
    assert store.audit_page(None, 10, key_id="key_other") == []


def test_a_credit_is_a_ledger_row_that_balances_and_statements_see(storage: StorageConfig) -> None:
    ledger = UsageLedger(storage)
    store = KeyStore(storage)
    made = store.create("admin", "a", balance=1.0)
    owner = made.stored.key_hash
    ledger.charge("job-1", owner, 60.0)  # a minute, priced at the key's rate below
    store.credit("admin", made.stored.key_id, 2.0)
    assert ledger.spent(owner, rate_per_min=0.5) == pytest.approx(0.5 - 2.0)
    assert store.spending([owner])[owner].spent(0.5) == pytest.approx(-1.5)
    newest = ledger.usage_page(owner, None, 10)[0]
    assert (newest.task, newest.audio_seconds, newest.cost) == ("credit", 0.0, -2.0)
    assert ledger.usage(owner) == 60.0  # no audio


def test_a_change_is_all_written_or_not_at_all(storage: StorageConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    store = KeyStore(storage)
    made = store.create("admin", "a", balance=1.0).stored
    version = store.version()

    def fail(*_: object) -> None:
        raise RuntimeError("the audit row could not be written")

    monkeypatch.setattr(store, "_changed", fail)
    with pytest.raises(RuntimeError):
        store.credit("admin", made.key_id, 5.0)
    with pytest.raises(RuntimeError):
        store.revoke("admin", made.key_id)
    with store.engine.connect() as connection:
        assert connection.execute(select(charges).where(charges.c.owner == made.key_hash)).all() == []
    current = store.get(made.key_id)
    assert current is not None and not current.revoked and store.version() == version


def test_replicas_changing_keys_at_once_each_raise_the_version(storage: StorageConfig) -> None:
    stores = [KeyStore(storage) for _ in range(3)]
    errors: list[BaseException] = []

    def make(store: KeyStore) -> None:
        try:
            for n in range(5):
                store.create("admin", f"key {n}")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=make, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    version, active = stores[0].active()
    assert version == 15 and len(active) == 15
    page = stores[0].page(None, 10)
    assert len(page) == 10 and [key.seq for key in stores[0].page(page[-1].seq, 10)] == [key.seq for key in active][10:]
    with stores[0].engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM key_audit")).scalar() == 15
