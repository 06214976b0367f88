"""Upload handling through the running service: the size limit enforced while a chunked body streams in, no
files left, and the documented form. (413 with Content-Length and 415 are tested in-process: tests/test_http.py.)"""

from pathlib import Path

import httpx
import pytest

from tests.conftest import UPLOAD_LIMIT_BYTES, Service

ROUTES = ["/v1/audio/transcriptions", "/v1/audio/transcriptions/async"]


def _leftovers(service: Service) -> list[Path]:
    folders = [service.process.workdir / "state" / "spool"]
    return [path for folder in folders if folder.exists() for path in folder.iterdir()]


def _chunks(total: int, size: int = 256 * 1024):
    sent = 0
    while sent < total:
        yield b"\x00" * min(size, total - sent)
        sent += size


@pytest.mark.parametrize("route", ROUTES)
def test_oversize_chunked_upload_is_cut_off_while_streaming(service: Service, route: str) -> None:
    """No Content-Length: the limit is enforced as the bytes arrive, not after the whole body."""
    boundary = "b0undary"
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n'.encode()

    def body():
        yield head
        yield from _chunks(4 * UPLOAD_LIMIT_BYTES)
        yield f"\r\n--{boundary}--\r\n".encode()

    with service.client() as client:
        try:
            response = client.post(
                route, content=body(), headers={"content-type": f"multipart/form-data; boundary={boundary}"}
            )
        except httpx.HTTPError:  # the server may close the connection before the client finished sending
            response = None
    if response is not None:
        assert response.status_code == 413
    assert _leftovers(service) == []


def test_openapi_documents_the_multipart_form(service: Service) -> None:
    with service.client() as client:
        schema = client.get("/openapi.json").json()
    for route in ROUTES:
        body = schema["paths"][route]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
        assert body["properties"]["file"]["anyOf"][0] == {"type": "string", "format": "binary"}
        assert "timestamp_granularities[]" in body["properties"]
        assert {"413", "415", "422"} <= set(schema["paths"][route]["post"]["responses"])
