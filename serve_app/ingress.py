"""Ingress: the HTTP entry deployment. It wires handles into the FastAPI app and holds no model code."""

from fastapi import FastAPI
from ray import serve
from ray.serve.handle import DeploymentHandle

from deployments.job_tracker import get_or_create_tracker
from deployments.rate_limiter import get_or_create_rate_limiter
from serve_app.auth import ApiKeys, configured_keys
from serve_app.config import AppConfig, SecretSettings
from serve_app.http_app import create_app
from serve_app.pipeline import TranscriptionPipeline


# Requests spend their time awaiting other deployments, so one replica holds many at once; Serve's default
# of 5 would queue the rest in the proxy and starve the Transcriber's batches.
@serve.deployment(max_ongoing_requests=256)
@serve.ingress()
class Ingress:
    async def __init__(
        self, decoder: DeploymentHandle, transcriber: DeploymentHandle, diarizer: DeploymentHandle, config: AppConfig
    ) -> None:
        self.api_keys = ApiKeys(configured_keys(SecretSettings()))
        self.pipeline = TranscriptionPipeline(
            decoder, transcriber, diarizer, config.limits, config.chunking, config.url_input
        )
        self.jobs_config = config.jobs
        self.tracker = get_or_create_tracker(config.jobs, self.pipeline)
        self.rate_limiter = get_or_create_rate_limiter(config.jobs)
        await self.tracker.__ray_ready__.remote()  # not ready to serve until the tracker is
        await self.rate_limiter.__ray_ready__.remote()

    def __serve_build_asgi_app__(self) -> FastAPI:
        return create_app(self.pipeline, self.api_keys, self.tracker, self.rate_limiter, self.jobs_config)
