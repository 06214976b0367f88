"""Ingress: the HTTP entry deployment. It wires handles into the FastAPI app and holds no model code and no
audio: uploads go to the spool on disk, and the pipeline deployment reads them from there; live audio frames
are forwarded to the LiveTranscriber as they arrive."""

from typing import Any

from fastapi import FastAPI
from ray import serve
from ray.serve.handle import DeploymentHandle

from deployments.billing.ledger import get_or_create_ledger
from deployments.billing.rate_limiter import get_or_create_rate_limiter
from deployments.jobs.reader import JobReader
from deployments.jobs.tracker import get_or_create_tracker
from deployments.keys.store import KeyStore
from deployments.transcriber.languages import whisper_language_names
from deployments.voices.store import VoiceStore
from serve_app.callbacks.sender import CallbackSender
from serve_app.common.auth import AdminKeys, ApiKeys, configured_keys
from serve_app.common.services import Services
from serve_app.config import AppConfig, SecretSettings
from serve_app.http_app import CALLBACK_FORMATS, create_app


# Requests spend their time awaiting other deployments, so one replica holds many at once; Serve's default
# of 5 would queue the rest in the proxy and starve the Transcriber's batches.
@serve.deployment(max_ongoing_requests=256)
@serve.ingress()
class Ingress:
    async def __init__(  # type: ignore[misc]  # Serve awaits an async constructor
        self, pipeline: DeploymentHandle[Any], live: DeploymentHandle[Any], config: AppConfig
    ) -> None:
        secrets = SecretSettings()
        static_keys = configured_keys(secrets)  # first: no keys, no service
        ledger = get_or_create_ledger(config.storage)
        tracker = get_or_create_tracker(config.jobs, config.storage, pipeline, ledger)
        rate_limiter = get_or_create_rate_limiter(config.storage)
        # The tracker is detached and outlives a redeploy: hand it this deployment's config and handles.
        await tracker.reconfigure.remote(config.jobs, pipeline, ledger)
        await ledger.__ray_ready__.remote()  # not ready to serve until the actors are
        await rate_limiter.__ray_ready__.remote()
        key_store = KeyStore(config.storage)  # the admin API's keys, re-read when they change
        jobs = JobReader(config.jobs, config.storage, callbacks=config.callbacks)  # after the tracker made the schema
        self.services = services = Services(
            config=config,
            api_keys=ApiKeys(static_keys, key_store),
            pipeline=pipeline,
            tracker=tracker,
            jobs=jobs,
            ledger=ledger,
            rate_limiter=rate_limiter,
            live=live,
            admin_keys=AdminKeys(secrets.admin_key_list()),
            key_store=key_store,
            voice_store=VoiceStore(config.storage),
            callback_secret=secrets.callback_secret,
            asr_webservice_key=secrets.asr_webservice_key,
        )
        # Every replica sends job callbacks that are due; claims with a lease keep two from sending one at once.
        sender = CallbackSender(jobs, config.callbacks, services.callback_secret_for, CALLBACK_FORMATS)
        self.callbacks = sender.start()
        whisper_language_names()  # read now, so that the first request with a `language` does not wait for it

    def __serve_build_asgi_app__(self) -> FastAPI:
        return create_app(self.services)
