"""The Ray Serve LLM backend (deployments/analysis/_ray_llm.py) over a fake DeploymentHandle, its config, and
the application builder composing the LLM deployment beside the Analyzer. No Ray cluster, no vLLM: the handle
records the request and yields what an LLMServer yields."""

import sys
import threading
import types
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from pydantic import ValidationError
from ray import serve
from ray.serve import Application, Deployment

from deployments.analysis._ray_llm import RayLLMBackend
from deployments.analysis.backends import make_backend
from deployments.analysis.errors import AnalysisTimeout, LLMBackendError
from deployments.config import AnalysisConfig
from serve_app.app import build_app

RAY_LLM = {
    "model_loading_config": {"model_id": "qwen-0.5b", "model_source": "Qwen/Qwen2.5-0.5B-Instruct"},
    "engine_kwargs": {"max_model_len": 8192},
    "deployment_config": {"autoscaling_config": {"min_replicas": 1, "max_replicas": 2}},
}
CONFIG = AnalysisConfig(backend="ray_llm", model="qwen-0.5b", ray_llm=RAY_LLM, context_tokens=8192)
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Summarize."}]


def chat_completion(text: str | None, prompt_tokens: int = 12, completion_tokens: int = 3) -> Any:
    """What LLMServer.chat yields for a request that does not stream: a ChatCompletionResponse's shape."""
    message = types.SimpleNamespace(role="assistant", content=text)
    usage = types.SimpleNamespace(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    return types.SimpleNamespace(choices=[types.SimpleNamespace(index=0, message=message)], usage=usage)


def error_response(message: str, code: int) -> Any:
    return types.SimpleNamespace(error=types.SimpleNamespace(message=message, type="BadRequestError", code=code))


@dataclass
class FakeResponses:
    """A DeploymentResponseGenerator: iterated synchronously; `block` waits until cancelled."""

    answers: list
    block: bool = False
    cancelled: threading.Event = field(default_factory=threading.Event)

    def __iter__(self):
        if self.block:
            assert self.cancelled.wait(5), "the backend never cancelled the stuck call"
            raise RuntimeError("Request was cancelled.")  # what Serve raises differs by the moment of cancelling
        for answer in self.answers:
            if isinstance(answer, BaseException):
                raise answer
            yield answer

    def cancel(self) -> None:
        self.cancelled.set()


class FakeHandle:
    """A DeploymentHandle to an LLMServer: `handle.options(stream=True).chat.remote(request)`."""

    def __init__(self, *answers: Any, block: bool = False) -> None:
        self.answers, self.block = list(answers), block
        self.options_asked: list[dict] = []
        self.requests: list[Any] = []
        self.responses: list[FakeResponses] = []
        self.chat = types.SimpleNamespace(remote=self._remote)

    def options(self, **options: Any) -> "FakeHandle":
        self.options_asked.append(options)
        return self

    def _remote(self, request: Any) -> FakeResponses:
        self.requests.append(request)
        self.responses.append(FakeResponses(self.answers, self.block))
        return self.responses[-1]


def backend(handle: FakeHandle, config: AnalysisConfig = CONFIG) -> RayLLMBackend:
    return RayLLMBackend(config, handle, request_type=dict)  # the request as a dict: vLLM's model is not here


def test_the_answer_and_its_tokens_come_from_the_chat_completion() -> None:
    handle = FakeHandle(chat_completion("  A broken order. ", prompt_tokens=40, completion_tokens=5))
    completion = backend(handle).complete(MESSAGES, None, 64)
    assert (completion.text, completion.input_tokens, completion.output_tokens) == ("A broken order.", 40, 5)
    assert handle.options_asked == [{"stream": True}]  # LLMServer.chat is a generator method
    assert handle.requests == [{"model": "qwen-0.5b", "messages": MESSAGES, "max_tokens": 64, "temperature": 0}]


def test_a_schema_asks_for_constrained_json() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    handle = FakeHandle(chat_completion('{"n": 2}'))
    assert backend(handle).complete(MESSAGES, schema, 32).text == '{"n": 2}'
    assert handle.requests[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": True},
    }


def test_batched_stream_items_and_missing_usage_are_handled() -> None:
    answer = chat_completion("four words in all", prompt_tokens=0, completion_tokens=0)
    completion = backend(FakeHandle([answer])).complete(MESSAGES, None, 16)
    assert completion.text == "four words in all" and completion.output_tokens > 0


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ([error_response("max_tokens is too large", 400)], "answered an error 400: max_tokens is too large"),
        ([], "answered nothing"),
        ([types.SimpleNamespace(choices=[])], "not a chat completion"),
        ([RuntimeError("replica died")], "RuntimeError: replica died"),
    ],
    ids=["error-response", "nothing", "no-choices", "raised"],
)
def test_failures_are_llm_backend_errors(answers: list, reason: str) -> None:
    with pytest.raises(LLMBackendError, match=reason):
        backend(FakeHandle(*answers)).complete(MESSAGES, None, 16)


def test_a_call_past_request_timeout_is_cancelled_and_is_a_timeout() -> None:
    handle = FakeHandle(block=True)
    with pytest.raises(AnalysisTimeout):
        backend(handle, CONFIG.model_copy(update={"request_timeout_s": 0.05})).complete(MESSAGES, None, 16)
    assert handle.responses[0].cancelled.is_set()


def test_a_request_the_request_model_refuses_is_an_llm_backend_error() -> None:
    def refuse(**body: Any) -> Any:
        raise ValueError("bad schema")

    with pytest.raises(LLMBackendError, match="bad schema"):
        RayLLMBackend(CONFIG, FakeHandle(), request_type=refuse).complete(MESSAGES, {"type": "object"}, 16)


def test_count_tokens_is_a_conservative_estimate() -> None:
    assert backend(FakeHandle()).count_tokens("x" * 300) >= 300 // 4


def test_make_backend_needs_the_bound_llm_deployment() -> None:
    with pytest.raises(LLMBackendError, match="no LLM deployment"):
        make_backend(CONFIG)


def test_backend_ray_llm_needs_its_settings_and_the_model_they_serve() -> None:
    with pytest.raises(ValidationError, match=r"needs analysis.ray_llm"):
        AnalysisConfig(backend="ray_llm", model="qwen-0.5b")
    with pytest.raises(ValidationError, match=r"must be ray_llm.model_loading_config.model_id"):
        AnalysisConfig(backend="ray_llm", model="Qwen/Qwen2.5-0.5B-Instruct", ray_llm=RAY_LLM)
    with pytest.raises(ValidationError, match="is for backend ray_llm"):
        AnalysisConfig(backend="openai", ray_llm=RAY_LLM)
    assert CONFIG.ray_llm == RAY_LLM


def _analyzer_args(app: Application) -> tuple:
    ingress = app._bound_deployment
    pipeline = ingress.init_args[0]._bound_deployment
    analyzer = pipeline.init_args[3]._bound_deployment
    assert analyzer.name == "Analyzer"
    return analyzer.init_args


def test_build_app_binds_no_llm_deployment_for_the_other_backends() -> None:
    config, llm = _analyzer_args(build_app({}))
    assert config.backend == "embedded" and llm is None


def test_build_app_composes_the_llm_deployment_into_the_application(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a stand-in for `ray.serve.llm` (it needs vLLM): the builder makes LLMConfig from the config's
    `ray_llm` and binds the deployment `build_llm_deployment` returns into the Analyzer."""

    @serve.deployment
    class FakeLLMServer:
        def __init__(self, llm_config: dict) -> None: ...

    built: list = []

    def build_llm_deployment(llm_config: dict) -> Application:
        built.append(llm_config)
        return cast(Deployment, FakeLLMServer).bind(llm_config)  # what @serve.deployment made of the class

    fake = types.ModuleType("ray.serve.llm")
    fake.LLMConfig = lambda **kwargs: kwargs  # type: ignore[attr-defined]
    fake.build_llm_deployment = build_llm_deployment  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray.serve.llm", fake)

    config, llm = _analyzer_args(build_app({"analysis": CONFIG.model_dump()}))
    assert built == [RAY_LLM] and config == CONFIG
    assert isinstance(llm, Application) and llm._bound_deployment.name == "FakeLLMServer"


def test_build_app_with_ray_serve_llm() -> None:
    """The real `ray.serve.llm`, where it is installed (`ray[llm]`, with vLLM): a GPU cluster's image."""
    llm_module = pytest.importorskip(
        "ray.serve.llm", exc_type=ImportError, reason="ray.serve.llm needs ray[llm] (vLLM), not installed here"
    )
    config, llm = _analyzer_args(build_app({"analysis": CONFIG.model_dump()}))
    assert isinstance(llm, Application) and llm._bound_deployment.name.startswith("LLMServer:")
    assert llm_module.LLMConfig(**RAY_LLM).model_id == config.model
