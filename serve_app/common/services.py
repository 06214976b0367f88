"""What the HTTP app is built over: the config, the keys, and the handles of the workers it calls.

The Ingress builds one from its deployment's handles; the in-process tests build one from fakes that answer
the same `.method.remote()` calls. Routes reach its parts through `serve_app.common.dependencies`.
"""

from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr
from ray.actor import ActorProxy
from ray.serve.handle import DeploymentHandle

from deployments.jobs.reader import JobReader
from deployments.keys.store import KeyStore
from deployments.voices.store import VoiceStore
from serve_app.common.auth import AdminKeys, ApiKey, ApiKeys
from serve_app.common.finished_jobs import FinishedJobs
from serve_app.common.request_leases import RequestLeases
from serve_app.config import AppConfig


@dataclass(frozen=True)
class Services:
    config: AppConfig
    api_keys: ApiKeys
    pipeline: DeploymentHandle[Any]
    """The TranscriptionPipeline: files, synchronous or streamed, and URL checks."""
    tracker: ActorProxy[Any]
    """The JobTracker: async jobs (submitting; it writes and schedules them)."""
    jobs: JobReader | None
    """Job records read from the store, for polls (None where the app serves no jobs)."""
    ledger: ActorProxy[Any]
    """The UsageLedger: charges, balances and usage statements."""
    rate_limiter: ActorProxy[Any]
    """The RequestRateLimiter: each key's request rate and open live sessions."""
    request_leases: RequestLeases = field(default_factory=RequestLeases)
    """This replica's lots of the keys' request rates, leased from `rate_limiter` (`common/request_leases.py`)."""
    live: DeploymentHandle[Any] | None = None
    """The LiveTranscriber: live sessions (None where the app serves none)."""
    admin_keys: AdminKeys = field(default_factory=lambda: AdminKeys([]))
    """The keys of the admin API (none: it answers 401)."""
    key_store: KeyStore | None = None
    """The keys the admin API manages (None: no admin API; `api_keys` reads the same store)."""
    voice_store: VoiceStore | None = None
    """Enrolled voices (`/v1/voices`, and `voices` on requests); None: none are kept."""
    finished_jobs: FinishedJobs = field(default_factory=FinishedJobs)
    """Poll answers of finished jobs, kept by this replica (see `serve_app.common.finished_jobs`)."""
    callback_secret: SecretStr | None = None
    """STT_CALLBACK_SECRET: signs the callbacks of keys without a callback_secret of their own."""
    asr_webservice_key: SecretStr | None = None
    """STT_ASR_WEBSERVICE_KEY: what the whisper-asr-webservice routes are charged to (serve_app.asr_webservice)."""

    async def callback_secret_for(self, owner: str) -> bytes | None:
        """What signs the job callbacks of the key whose SHA-256 is `owner`, in the key store's current state
        (a secret set through the admin API after the job was submitted signs its callback)."""
        await self.api_keys.refresh()
        return self.callback_secret_of(self.api_keys.by_owner(owner))

    def callback_secret_of(self, key: ApiKey | None) -> bytes | None:
        """What signs `key`'s job callbacks: its own secret, else the service's; None: neither is set."""
        secret = (key.callback_secret if key is not None else None) or self.callback_secret
        return secret.get_secret_value().encode() if secret is not None else None
