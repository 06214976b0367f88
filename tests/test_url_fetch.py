"""URL input: SSRF refusal at every hop, limits while reading, and clear reasons (serve_app/url_fetch.py)."""

import asyncio
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from deployments.addresses import is_forbidden
from deployments.config import UrlInputConfig
from deployments.errors import UrlRejectedError
from deployments.files._url_fetch import fetch_to_file
from devkit.media_server import media_server

LOOPBACK_ALLOWED = UrlInputConfig(allowed_networks=["127.0.0.0/8"], read_timeout_s=1, max_redirects=3)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with media_server() as base_url:
        yield base_url


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
     "224.0.0.1", "240.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "ff02::1",
     "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2001:db8::1"],
)  # fmt: skip
def test_non_public_addresses_are_forbidden(address: str) -> None:
    assert is_forbidden(ipaddress.ip_address(address), [])


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert not is_forbidden(ipaddress.ip_address(address), [])


def test_the_allow_list_opens_only_its_networks() -> None:
    allowed = [ipaddress.ip_network("10.0.0.0/8")]
    assert not is_forbidden(ipaddress.ip_address("10.9.9.9"), allowed)
    assert is_forbidden(ipaddress.ip_address("192.168.0.1"), allowed)


def _fetch(url: str, path: Path, config: UrlInputConfig = LOOPBACK_ALLOWED, max_bytes: int = 1 << 20) -> None:
    asyncio.run(fetch_to_file(url, path, max_bytes, config))


def test_a_file_is_fetched_through_a_redirect(server: str, tmp_path: Path) -> None:
    target = tmp_path / "spool"
    _fetch(f"{server}/redirect-to-speech", target)
    assert target.read_bytes()[:3] in (b"ID3", b"\xff\xfb", b"\xff\xf3")


@pytest.mark.parametrize(
    ("path", "config", "status", "phrase"),
    [
        ("/speech.mp3", UrlInputConfig(), 400, "non-public address"),  # loopback, no allow-list
        ("/redirect-to-metadata", LOOPBACK_ALLOWED, 400, "non-public address"),  # checked on every hop
        ("/redirect-loop", LOOPBACK_ALLOWED, 400, "redirected more than 3 times"),
        ("/missing", LOOPBACK_ALLOWED, 400, "HTTP 404"),
        ("/slow", LOOPBACK_ALLOWED, 400, "timed out"),
        ("/big.wav", LOOPBACK_ALLOWED, 413, "larger than the limit"),
        ("/empty.wav", LOOPBACK_ALLOWED, 400, "empty"),
    ],
)
def test_refusals_say_why_and_leave_no_file(
    server: str, tmp_path: Path, path: str, config: UrlInputConfig, status: int, phrase: str
) -> None:
    target = tmp_path / "spool"
    with pytest.raises(UrlRejectedError) as refused:
        _fetch(f"{server}{path}", target, config)
    assert refused.value.status == status and phrase in str(refused.value)
    assert not target.exists()


@pytest.mark.parametrize(
    ("url", "phrase"),
    [
        ("ftp://example.com/a.mp3", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("http://10.0.0.1/a.mp3", "non-public address"),
        ("http://[::1]/a.mp3", "non-public address"),
        ("http://169.254.169.254/latest/meta-data/", "non-public address"),
        ("http://no-such-host.invalid/a.mp3", "could not be resolved"),
    ],
)
def test_urls_refused_before_any_connection(tmp_path: Path, url: str, phrase: str) -> None:
    with pytest.raises(UrlRejectedError, match=phrase):
        _fetch(url, tmp_path / "spool", UrlInputConfig())
