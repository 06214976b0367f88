"""A protocol's error shape: every failure on its paths (a route's HTTPException, a validation error, a
refused input, an unexpected error) answers in its shape; ours keep `{"detail": ...}`."""

from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.testclient import TestClient

from deployments.errors import InputRejectedError
from serve_app.common.edge import Edge, ErrorShape
from serve_app.common.factory import create_app

theirs = APIRouter()
ours = APIRouter()


@theirs.get("/v9/thing")
async def their_thing(n: int) -> dict[str, int]:
    if n == 1:
        raise HTTPException(401, "bad key", headers={"WWW-Authenticate": "Token"})
    if n == 2:
        raise InputRejectedError("the audio cannot be decoded")
    if n == 3:
        raise RuntimeError("boom")
    return {"n": n}


@ours.get("/v1/thing")
async def our_thing() -> None:
    raise HTTPException(404, "not here")


def their_body(status: int, message: str) -> dict[str, Any]:
    return {"err_code": status, "err_msg": message}


def client() -> TestClient:
    edges = [Edge(ours), Edge(theirs, errors=ErrorShape(("/v9/thing",), their_body))]
    return TestClient(create_app(None, edges), raise_server_exceptions=False)  # type: ignore[arg-type]


def test_errors_on_a_protocols_paths_take_its_shape() -> None:
    with client() as http:
        unauthorized = http.get("/v9/thing", params={"n": 1})
        assert unauthorized.status_code == 401 and unauthorized.json() == {"err_code": 401, "err_msg": "bad key"}
        assert unauthorized.headers["www-authenticate"] == "Token"
        invalid = http.get("/v9/thing", params={"n": "x"})
        assert invalid.status_code == 400 and invalid.json()["err_msg"].startswith("invalid request: n: ")
        rejected = http.get("/v9/thing", params={"n": 2})
        assert rejected.status_code == 400 and "cannot be decoded" in rejected.json()["err_msg"]
        failed = http.get("/v9/thing", params={"n": 3})
        assert failed.status_code == 500 and set(failed.json()) == {"err_code", "err_msg"}
        assert http.get("/v9/thing", params={"n": 4}).json() == {"n": 4}


def test_our_paths_keep_detail() -> None:
    with client() as http:
        missing = http.get("/v1/thing")
        assert missing.status_code == 404 and missing.json() == {"detail": "not here"}
        assert http.get("/v1/nowhere").json() == {"detail": "Not Found"}
