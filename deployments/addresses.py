"""Which addresses the service may connect to on a client's behalf: a `url` input it fetches (files/) and a
job's `callback_url` the edge posts to. One rule for both, so that neither can reach what the service itself
can reach (server-side request forgery): the host is resolved, and every address it resolves to must be public
(not loopback, private, link-local, multicast, reserved or unspecified, in IPv4 or IPv6), unless an allow-list
names its network. Callers then connect to the checked address itself, so DNS cannot answer differently
between check and connect."""

import asyncio
import ipaddress
import socket

import httpx

from deployments.errors import UrlRejectedError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(cidrs: list[str]) -> list[IPNetwork]:
    """An allow-list's CIDRs as networks (validated already by the settings)."""
    return [ipaddress.ip_network(network, strict=False) for network in cidrs]


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
    """The address to connect to for `url`; UrlRejectedError when any address of its host is not allowed."""
    if url.scheme not in ("http", "https"):
        raise UrlRejectedError("the URL must start with http:// or https://")
    if not url.host:
        raise UrlRejectedError("the URL has no host")
    addresses = await resolve(url.host, url.port or (443 if url.scheme == "https" else 80))
    if not addresses or any(is_forbidden(address, allowed) for address in addresses):
        raise UrlRejectedError(
            f"the URL's host {url.host!r} resolves to a private, loopback or otherwise non-public address,"
            " which this service does not connect to"
        )
    return addresses[0]


def pinned_request(
    client: httpx.AsyncClient,
    method: str,
    url: httpx.URL,
    address: IPAddress,
    headers: dict[str, str],
    content: bytes | None = None,
) -> httpx.Request:
    """A request for `url` sent to `address` (the checked one), with the original Host header and TLS name."""
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    return client.build_request(
        method,
        url.copy_with(host=str(address)),
        headers={"Host": url.netloc.decode("ascii"), **headers},
        content=content,
        extensions=extensions,
    )
