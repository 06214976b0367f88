"""Every request of the hostile corpus gets a 4xx JSON detail on both endpoints; the service keeps
serving, and no spooled file is left behind."""

import http.client
from pathlib import Path

import httpx
import pytest

from tests.conftest import Service
from tests.hostile_inputs import HostileRequest, corpus
from tests.test_jobs_service import _wait

CORPUS = corpus()
ENDPOINTS = ["/v1/audio/transcriptions", "/v1/audio/transcriptions/async"]


def _send(client: httpx.Client, path: str, bad: HostileRequest) -> httpx.Response:
    if "Content-Length" in bad.headers:  # a declared size that the body does not have: httpx would refuse
        return _send_raw(str(client.base_url), path, bad, client.headers["Authorization"])
    if bad.content is not None:
        return client.post(path, content=bad.content, headers=bad.headers)
    return client.post(path, files=bad.files, data=bad.data, headers=bad.headers)


def _send_raw(base_url: str, path: str, bad: HostileRequest, authorization: str) -> httpx.Response:
    url = httpx.URL(base_url)
    connection = http.client.HTTPConnection(url.host, url.port, timeout=30)
    try:
        connection.putrequest("POST", path)
        for name, value in {**bad.headers, "Authorization": authorization}.items():
            connection.putheader(name, value)
        connection.endheaders(bad.content or b"")
        answer = connection.getresponse()
        return httpx.Response(answer.status, headers=answer.getheaders(), content=answer.read())
    finally:
        connection.close()


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("bad", CORPUS, ids=[bad.name for bad in CORPUS])
def test_hostile_request_gets_a_4xx_json_detail(service: Service, path: str, bad: HostileRequest) -> None:
    with service.client(api_key="test-key-fuzz") as client:
        response = _send(client, path, bad)
    if path.endswith("async") and bad.in_the_audio:  # accepted; the job then fails, with the reason
        assert response.status_code == 200, response.text
        job = _wait(service, response.json()["job_id"], api_key="test-key-fuzz")
        assert job["status"] == "error" and job["error"]
        return
    assert response.status_code == bad.status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str | list) and detail


def test_service_keeps_serving_and_leaves_no_file(service: Service) -> None:
    workdir = Path(service.process.workdir)
    with service.client() as client:
        assert client.get("/v1/models").status_code == 200
    leftovers = list((workdir / "state" / "spool").glob("*"))
    assert leftovers == []
    assert not Path("/tmp/stt-pwned.wav").exists()
