"""Bearer API keys: every API route depends on `require_api_key`."""

import hmac

from fastapi import HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

INVALID_CREDENTIALS = "authentication credentials were not provided or are invalid"

_bearer = HTTPBearer(auto_error=False, description="An API key from STT_API_KEYS.")


class ApiKeys:
    """The set of valid keys, compared in constant time so timing reveals nothing about a key."""

    def __init__(self, keys: list[str]) -> None:
        self._keys = [key.encode() for key in keys]

    def is_valid(self, candidate: str) -> bool:
        given = candidate.encode()
        matches = [hmac.compare_digest(given, key) for key in self._keys]  # no early exit, on purpose
        return any(matches)


async def require_api_key(request: Request) -> str:
    """Return the caller's key, or answer 401."""
    credentials: HTTPAuthorizationCredentials | None = await _bearer(request)
    api_keys: ApiKeys = request.app.state.api_keys
    if credentials is None or not api_keys.is_valid(credentials.credentials):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            detail=INVALID_CREDENTIALS,
            headers={"WWW-Authenticate": "Bearer"},
        )
    return credentials.credentials
