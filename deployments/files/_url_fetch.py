"""Download a client's `url` to a file, without letting it reach what the service itself can reach.

Server-side request forgery is refused at every hop: the host is resolved, every address it resolves to
must be public (not loopback, private, link-local, multicast, reserved or unspecified, in IPv4 or IPv6),
unless an allow-list names its network. The connection then goes to the checked address itself, with the
original Host header and TLS server name, so DNS cannot answer differently between check and connect.
Redirects are followed by hand, a bounded number of times, each one checked the same way.
"""

import asyncio
import ipaddress
import socket
from pathlib import Path

import httpx

from deployments.config import UrlInputConfig
from deployments.errors import UrlRejectedError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def is_forbidden(address: IPAddress, allowed: list[IPNetwork]) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address in network for network in allowed):
        return False
    return address.is_multicast or not address.is_global  # is_global is False for every special range


async def resolve(host: str, port: int) -> list[IPAddress]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise UrlRejectedError(f"the URL's host {host!r} could not be resolved") from None
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))


async def checked_address(url: httpx.URL, allowed: list[IPNetwork]) -> IPAddress:
    if url.scheme not in ("http", "https"):
        raise UrlRejectedError("the URL must start with http:// or https://")
    if not url.host:
        raise UrlRejectedError("the URL has no host")
    addresses = await resolve(url.host, url.port or (443 if url.scheme == "https" else 80))
    if not addresses or any(is_forbidden(address, allowed) for address in addresses):
        raise UrlRejectedError(
            f"the URL's host {url.host!r} resolves to a private, loopback or otherwise non-public address,"
            " which this service does not fetch"
        )
    return addresses[0]


def allowed_networks(config: UrlInputConfig) -> list[IPNetwork]:
    return [ipaddress.ip_network(network, strict=False) for network in config.allowed_networks]


async def check_url(url: str, config: UrlInputConfig) -> None:
    """Refuse `url` now if it cannot be fetched safely (a redirect is checked again when fetched)."""
    await checked_address(httpx.URL(url), allowed_networks(config))


async def fetch_to_file(url: str, path: Path, max_bytes: int, config: UrlInputConfig) -> None:
    """Stream `url` into `path`, enforcing `max_bytes` while reading; on any failure `path` is removed."""
    allowed = allowed_networks(config)
    timeout = httpx.Timeout(config.read_timeout_s, connect=config.connect_timeout_s)
    current = httpx.URL(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            for _ in range(config.max_redirects + 1):
                address = await checked_address(current, allowed)
                pinned = current.copy_with(host=str(address))
                headers = {"Host": current.netloc.decode("ascii"), "Accept": "audio/*, video/*, */*"}
                extensions = {"sni_hostname": current.host} if current.scheme == "https" else {}
                request = client.build_request("GET", pinned, headers=headers, extensions=extensions)
                response = await client.send(request, stream=True)
                try:
                    if response.is_redirect and "location" in response.headers:
                        current = current.join(response.headers["location"])
                        continue
                    if response.status_code >= 400:
                        raise UrlRejectedError(f"the URL answered HTTP {response.status_code}; check that it is right")
                    await _save(response, path, max_bytes)
                    return
                finally:
                    await response.aclose()
        raise UrlRejectedError(f"the URL redirected more than {config.max_redirects} times")
    except httpx.TimeoutException:
        path.unlink(missing_ok=True)
        raise UrlRejectedError("the URL timed out: the server did not answer in time") from None
    except httpx.HTTPError as error:
        path.unlink(missing_ok=True)
        raise UrlRejectedError(f"the URL could not be fetched ({type(error).__name__})") from None
    except BaseException:
        path.unlink(missing_ok=True)
        raise


async def _save(response: httpx.Response, path: Path, max_bytes: int) -> None:
    too_large = UrlRejectedError(f"the file at the URL is larger than the limit of {max_bytes} bytes", status=413)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise too_large
    received = 0
    with path.open("wb") as file:
        async for piece in response.aiter_bytes(1 << 20):
            received += len(piece)
            if received > max_bytes:
                raise too_large
            file.write(piece)
    if received == 0:
        raise UrlRejectedError("the file at the URL is empty")
