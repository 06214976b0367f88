"""Keys files and the token bucket behind the request-rate limit."""

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from starlette.requests import HTTPConnection

from deployments.billing.rate_limiter import RequestRateLimiter
from serve_app.common.auth import ApiKeys, load_keys_file, presented_key
from serve_app.common.request_leases import RequestLeases
from tests.fakes import Actor


def test_keys_files_in_json_or_yaml_list_or_object(tmp_path: Path) -> None:
    (tmp_path / "keys.json").write_text(json.dumps({"keys": [{"key": "sk-a", "balance_seconds": 60}]}))
    (tmp_path / "keys.yaml").write_text("- key: sk-b\n  name: team b\n  requests_per_second: 3\n")
    [a] = load_keys_file(tmp_path / "keys.json")
    [b] = load_keys_file(tmp_path / "keys.yaml")
    assert (a.balance_seconds, a.name, b.requests_per_second, b.balance_seconds) == (60, "", 3, None)
    assert "sk-a" not in repr(a) and "sk-a" not in str(a.model_dump())  # a key never shows in logs or dumps


def test_a_bad_keys_file_fails_loudly(tmp_path: Path) -> None:
    (tmp_path / "keys.yaml").write_text("- key: sk-c\n  balance_seconds: -5\n")
    with pytest.raises(ValidationError):
        load_keys_file(tmp_path / "keys.yaml")


def test_lookup_finds_the_matching_key_only(tmp_path: Path) -> None:
    (tmp_path / "keys.yaml").write_text("- key: sk-one\n- key: sk-two\n  name: two\n")
    keys = ApiKeys(load_keys_file(tmp_path / "keys.yaml"))
    two = keys.lookup("sk-two")
    assert two is not None and two.name == "two"
    assert keys.lookup("sk-tw") is None and keys.lookup("") is None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class CountingCalls:
    """The limiter as an actor handle that counts its calls."""

    def __init__(self, limiter: RequestRateLimiter) -> None:
        self.actor, self.calls = Actor(limiter), 0

    def __getattr__(self, name: str) -> object:
        self.calls += 1
        return getattr(self.actor, name)


def test_a_key_gets_its_rate_with_a_one_second_burst_and_a_retry_time() -> None:
    clock = Clock()
    limiter = RequestRateLimiter(clock)
    assert [limiter.acquire("k", 10) for _ in range(10)] == [0.0] * 10
    assert limiter.acquire("k", 10) == pytest.approx(0.1)
    clock.now += 0.25  # two and a half tokens back
    assert [limiter.acquire("k", 10) > 0 for _ in range(3)] == [False, False, True]
    assert limiter.acquire("other", 10) == 0.0  # keys do not share buckets


def test_a_replica_leases_a_tenth_of_a_seconds_worth_of_a_high_rate_and_lets_what_it_left_lapse() -> None:
    clock = Clock()
    limiter = RequestRateLimiter(clock)
    counting = CountingCalls(limiter)
    leases = RequestLeases(clock)
    taken = [asyncio.run(leases.take(counting, "k", 1000)) for _ in range(250)]  # type: ignore[arg-type]
    assert taken == [0.0] * 250 and counting.calls == 3  # lots of 100: one actor call per lot
    assert limiter.buckets["k"].tokens == 700  # three lots left the bucket; the replica holds 50 of them
    clock.now += 0.2  # those 50 lapse: the next request leases a new lot from the bucket, refilled by 200
    assert asyncio.run(leases.take(counting, "k", 1000)) == 0.0  # type: ignore[arg-type]
    assert counting.calls == 4 and limiter.buckets["k"].tokens == pytest.approx(800)
    slow = RequestLeases(clock)
    results = [asyncio.run(slow.take(counting, "slow", 10)) for _ in range(11)]  # type: ignore[arg-type]
    assert results[:10] == [0.0] * 10 and results[10] == pytest.approx(0.1)  # under 20/s: one token a call


@pytest.mark.parametrize(
    ("headers", "presented"),
    [
        ({"authorization": "Bearer sk-a"}, "sk-a"),  # OpenAI, nexara
        ({"authorization": "Token sk-a"}, "sk-a"),  # Deepgram
        ({"authorization": "token  sk-a "}, "sk-a"),
        ({"authorization": "sk-a"}, "sk-a"),  # AssemblyAI: the key alone
        ({"authorization": "Basic dXNlcjpwYXNz extra"}, None),  # another scheme is no key
        ({}, None),
    ],
)
def test_the_key_is_read_as_each_client_sends_it(headers: dict[str, str], presented: str | None) -> None:
    scope = {"type": "http", "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}
    assert presented_key(HTTPConnection(scope)) == presented


@pytest.mark.parametrize("offered", ["bearer, sk-a", "token, sk-a", "realtime, openai-insecure-api-key.sk-a"])
def test_a_browser_socket_offers_the_key_as_a_subprotocol(offered: str) -> None:
    scope = {"type": "websocket", "headers": [(b"sec-websocket-protocol", offered.encode())]}
    assert presented_key(HTTPConnection(scope)) == "sk-a"
