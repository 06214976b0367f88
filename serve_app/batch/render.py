"""A batch's result rendered as the REST API renders it, one body per asked format."""

import json

from deployments.batch.tasks import FileTask
from deployments.types import PipelineResult
from serve_app.batch.plan import EXTENSIONS
from serve_app.rendering.response_formats import RenderSpec, render_body


def render(result: PipelineResult, task: FileTask) -> dict[str, str]:
    """Output path (the task's name and the format's extension) -> the body the service would answer."""
    bodies = {}
    for response_format, stored in task.render["formats"].items():
        spec = RenderSpec.model_validate(stored)
        body = render_body(result, spec.response_format, spec.timestamp_granularities, spec.subtitles)
        text = json.dumps(body, ensure_ascii=False) if isinstance(body, dict) else body
        bodies[f"{task.name}.{EXTENSIONS[response_format]}"] = text
    return bodies
