"""Where a callback may go, and the one POST of an attempt. A `callback_url` follows the `url` input's rule
(deployments/addresses.py): refused at submission when its host resolves to a non-public address, unless
`callbacks.allowed_networks` names the network; checked again at every attempt (DNS may have changed since),
and the connection goes to the address checked (the original Host and TLS name sent), so DNS cannot answer
differently between check and connect. Redirects are not followed, and at most `max_response_bytes` of the
answer is read: a receiver cannot make a sender wait, follow, or hold its memory."""

import asyncio

import httpx
from fastapi import HTTPException, status

from deployments.addresses import checked_address, networks, pinned_request
from deployments.config import CallbacksConfig
from deployments.errors import UrlRejectedError

MAX_URL_LENGTH = 2048


async def check_callback_url(url: str, config: CallbacksConfig) -> None:
    """400 naming `callback_url` when the address may not be called back."""
    if len(url) > MAX_URL_LENGTH:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, f"callback_url: longer than {MAX_URL_LENGTH} characters")
    try:
        await checked_address(httpx.URL(url), networks(config.allowed_networks))
    except (UrlRejectedError, httpx.InvalidURL, ValueError) as error:  # ValueError: a host IDNA cannot encode
        raise HTTPException(status.HTTP_400_BAD_REQUEST, f"callback_url: {error}") from None


async def post(
    client: httpx.AsyncClient, url: str, body: bytes, headers: dict[str, str], config: CallbacksConfig
) -> int:
    """POST `body` to `url`; the answer's status. Raises UrlRejectedError (the address is no longer allowed),
    httpx.HTTPError or TimeoutError (no answer within `timeout_s`, reading the capped answer included)."""
    target = httpx.URL(url)
    address = await checked_address(target, networks(config.allowed_networks))
    request = pinned_request(client, "POST", target, address, {"Content-Type": "application/json", **headers}, body)
    async with asyncio.timeout(config.timeout_s):
        response = await client.send(request, stream=True)
        try:
            received = 0
            async for piece in response.aiter_raw():
                received += len(piece)
                if received >= config.max_response_bytes:
                    break
        finally:
            await response.aclose()
    return response.status_code
