"""The service's HTTP API as the CLI uses it: one httpx client, the client's own models of the answers
(stt_cli.wire), and the server's `detail` carried in every error."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx

from stt_cli.wire import (
    AdminKey,
    AdminKeyPage,
    Balance,
    CreatedKey,
    CreditResult,
    JobCreated,
    JobObject,
    ModelList,
    Voice,
    VoiceList,
)

TRANSCRIPTIONS = "/v1/audio/transcriptions"


class ApiError(RuntimeError):
    """An answer other than 2xx: `detail` is the server's own explanation."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


class Upload(NamedTuple):
    """Audio already in memory, uploaded as a file named `filename`."""

    filename: str
    data: bytes


def is_url(source: str | Upload) -> bool:
    return isinstance(source, str) and source.startswith(("http://", "https://"))


class SttApi:
    def __init__(self, base_url: str, api_key: str, timeout_s: float = 600) -> None:
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout_s)

    def __enter__(self) -> "SttApi":
        return self

    def __exit__(self, *_: object) -> None:
        self.http.close()

    def submit(self, source: str | Upload, form: dict[str, str]) -> JobCreated:
        """An async job for a local file or audio in memory (uploaded), or a URL (fetched by the service)."""
        return JobCreated.model_validate(self.submit_json(source, form))

    def submit_json(self, source: str | Upload, form: dict[str, str]) -> dict[str, Any]:
        """`submit`'s answer as the service wrote it, for callers that check the wire itself."""
        created: dict[str, Any] = self._post(TRANSCRIPTIONS + "/async", source, form).json()
        return created

    def transcribe(self, source: str, form: dict[str, str]) -> str | dict[str, Any]:
        """A synchronous transcription: the body as the response format gives it."""
        response = self._post(TRANSCRIPTIONS, source, form)
        is_json = response.headers.get("content-type", "").startswith("application/json")
        return response.json() if is_json else response.text

    def job(self, job_id: str) -> JobObject:
        return JobObject.model_validate(self.job_json(job_id))

    def job_json(self, job_id: str) -> dict[str, Any]:
        """`job`'s answer as the service wrote it."""
        job: dict[str, Any] = self._checked(self.http.get(f"{TRANSCRIPTIONS}/async/{job_id}")).json()
        return job

    def models(self) -> ModelList:
        return ModelList.model_validate(self._checked(self.http.get("/v1/models")).json())

    def balance(self) -> Balance:
        return Balance.model_validate(self._checked(self.http.get("/v1/billing/balance")).json())

    def add_voice(self, name: str, clip: Path) -> Voice:
        with clip.open("rb") as upload:
            answer = self.http.post("/v1/voices", data={"name": name}, files={"file": (clip.name, upload)})
        return Voice.model_validate(self._checked(answer).json())

    def voices(self) -> Iterator[Voice]:
        """Every voice of this key, page after page."""
        after: str | None = None
        while True:
            params: dict[str, str | int] = {"limit": 100} | ({"after": after} if after else {})
            page = VoiceList.model_validate(self._checked(self.http.get("/v1/voices", params=params)).json())
            yield from page.data
            if not page.has_more or page.last_id is None:
                return
            after = page.last_id

    def remove_voice(self, voice_id: str) -> None:
        self._checked(self.http.delete(f"/v1/voices/{voice_id}"))

    def _post(self, path: str, source: str | Upload, form: dict[str, str]) -> httpx.Response:
        if isinstance(source, Upload):
            return self._checked(self.http.post(path, data=form, files={"file": (source.filename, source.data)}))
        if is_url(source):
            return self._checked(self.http.post(path, data={**form, "url": source}))
        with Path(source).open("rb") as upload:
            return self._checked(self.http.post(path, data=form, files={"file": (Path(source).name, upload)}))

    @staticmethod
    def _checked(response: httpx.Response) -> httpx.Response:
        if response.is_success:
            return response
        try:
            detail = response.json()["detail"]
        except (ValueError, KeyError, TypeError):
            detail = response.text or response.reason_phrase
        if not isinstance(detail, str):  # a validation error's list: field and message of each
            detail = "; ".join(f"{'.'.join(map(str, e.get('loc', [])))}: {e.get('msg')}" for e in detail)
        raise ApiError(response.status_code, detail)


class AdminApi:
    """The admin API (`/v1/admin/keys`), with an admin key (STT_ADMIN_KEYS on the server)."""

    def __init__(self, base_url: str, admin_key: str, timeout_s: float = 60) -> None:
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {admin_key}"}, timeout=timeout_s)

    def __enter__(self) -> "AdminApi":
        return self

    def __exit__(self, *_: object) -> None:
        self.http.close()

    def create_key(self, settings: dict[str, Any]) -> CreatedKey:
        return CreatedKey.model_validate(SttApi._checked(self.http.post("/v1/admin/keys", json=settings)).json())

    def list_keys(self) -> Iterator[AdminKey]:
        """Every key, page after page."""
        cursor: str | None = None
        while True:
            params: dict[str, str | int] = {"limit": 100} | ({"cursor": cursor} if cursor else {})
            page = AdminKeyPage.model_validate(SttApi._checked(self.http.get("/v1/admin/keys", params=params)).json())
            yield from page.items
            if not page.has_more or page.next_cursor is None:
                return
            cursor = page.next_cursor

    def revoke(self, key_id: str) -> None:
        SttApi._checked(self.http.delete(f"/v1/admin/keys/{key_id}"))

    def credit(self, key_id: str, amount: float, note: str | None) -> CreditResult:
        body: dict[str, Any] = {"amount": amount} | ({"note": note} if note else {})
        answer = self.http.post(f"/v1/admin/keys/{key_id}/credit", json=body)
        return CreditResult.model_validate(SttApi._checked(answer).json())
