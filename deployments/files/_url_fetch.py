"""Download a client's `url` to a file, without letting it reach what the service itself can reach.

Server-side request forgery is refused at every hop by the rule of `deployments/addresses.py` (public
addresses only, unless an allow-list names the network; the connection goes to the checked address).
Redirects are followed by hand, a bounded number of times, each one checked the same way.
"""

from pathlib import Path

import httpx

from deployments.addresses import IPNetwork, checked_address, networks, pinned_request
from deployments.config import UrlInputConfig
from deployments.errors import UrlRejectedError


def allowed_networks(config: UrlInputConfig) -> list[IPNetwork]:
    return networks(config.allowed_networks)


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
                headers = {"Accept": "audio/*, video/*, */*"}
                request = pinned_request(client, "GET", current, address, headers)
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
