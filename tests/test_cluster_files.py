"""The Kubernetes manifest, the container recipe and the Grafana dashboard, checked without a cluster (none
is reachable here): the RayService's embedded Serve config is valid for Ray Serve and for the application,
equals gpu.yaml's, and asks for what the cluster needs (GPU workers, autoscaling, shared storage for uploads,
PostgreSQL for jobs and the ledger, a fault-tolerant head, metrics port); the dashboard charts the metrics the
service records."""

import json
import re
from pathlib import Path

import yaml
from ray.serve.schema import ServeDeploySchema
from sqlalchemy.engine import make_url

from deployments.config import StorageConfig
from serve_app.http_app import AppArgs
from serve_app.proxy_limits import CALLBACK as PROXY_CALLBACK
from serve_app.proxy_limits import CALLBACK_ENV as PROXY_CALLBACK_ENV

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "configs" / "kuberay-rayservice.yaml"


def _documents() -> dict[str, dict]:
    return {document["kind"]: document for document in yaml.safe_load_all(MANIFEST.read_text())}


def test_the_embedded_serve_config_is_valid_and_is_gpu_yaml() -> None:
    serve_config = yaml.safe_load(_documents()["RayService"]["spec"]["serveConfigV2"])
    ServeDeploySchema.model_validate(serve_config)
    application = serve_config["applications"][0]
    assert application["import_path"] == "serve_app.app:build_app"
    AppArgs.model_validate(application["args"])
    assert serve_config == yaml.safe_load((ROOT / "configs" / "gpu.yaml").read_text())


def test_the_cluster_has_gpu_workers_autoscaling_shared_job_storage_and_metrics() -> None:
    documents = _documents()
    spec = documents["RayService"]["spec"]
    cluster = spec["rayClusterConfig"]
    serve_config = yaml.safe_load(spec["serveConfigV2"])
    application = serve_config["applications"][0]
    transcriber = next(d for d in application["deployments"] if d["name"] == "Transcriber")

    assert cluster["enableInTreeAutoscaling"] is True
    assert cluster["rayVersion"] == __import__("ray").__version__  # the image's Ray is the one tested here
    gpu_group = next(group for group in cluster["workerGroupSpecs"] if group["groupName"] == "gpu")
    gpu_container = gpu_group["template"]["spec"]["containers"][0]
    assert gpu_container["resources"]["limits"]["nvidia.com/gpu"] == 1 == transcriber["ray_actor_options"]["num_gpus"]
    assert gpu_group["maxReplicas"] >= transcriber["autoscaling_config"]["max_replicas"]

    claim = documents["PersistentVolumeClaim"]
    assert "ReadWriteMany" in claim["spec"]["accessModes"]  # pods on every node read and write jobs
    state_dir = Path(application["args"]["storage"]["state_dir"])
    pods = [cluster["headGroupSpec"]["template"]["spec"], gpu_group["template"]["spec"]]
    for pod in pods:
        volume = next(v for v in pod["volumes"] if v["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"])
        mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == volume["name"])
        assert state_dir.is_relative_to(mount["mountPath"])
        assert pod["containers"][0]["envFrom"][0]["secretRef"]["name"] == "stt-api-keys"

    for group in [cluster["headGroupSpec"], gpu_group]:
        assert group["rayStartParams"]["metrics-export-port"] == "8080"


def _pods(cluster: dict) -> list[dict]:
    return [cluster["headGroupSpec"]["template"]["spec"]] + [g["template"]["spec"] for g in cluster["workerGroupSpecs"]]


def test_the_head_keeps_the_gcs_state_in_redis_so_a_lost_head_pod_loses_no_application() -> None:
    cluster = _documents()["RayService"]["spec"]["rayClusterConfig"]
    options = cluster["gcsFaultToleranceOptions"]
    host, port = options["redisAddress"].rsplit(":", 1)
    assert host and int(port) > 0
    secret = options["redisPassword"]["valueFrom"]["secretKeyRef"]  # the password from a Secret, never inline
    assert secret["name"] and secret["key"]
    assert "redis-password" not in cluster["headGroupSpec"]["rayStartParams"]  # KubeRay sets it from the options
    assert "stt-redis" in MANIFEST.read_text().split("apiVersion:")[0]  # the header says how to make the secret


def test_jobs_and_the_ledger_are_in_postgresql_with_the_password_from_a_secret_in_every_pod() -> None:
    cluster = _documents()["RayService"]["spec"]["rayClusterConfig"]
    applications = {
        "kuberay": yaml.safe_load(_documents()["RayService"]["spec"]["serveConfigV2"])["applications"][0],
        **{name: yaml.safe_load((ROOT / "configs" / name).read_text())["applications"][0]
           for name in ("gpu.yaml", "backfill.yaml")},
    }  # fmt: skip
    for name, application in applications.items():
        storage = StorageConfig.model_validate(application["args"]["storage"])
        assert storage.database_url is not None, name
        url = make_url(storage.database_url)
        assert url.get_backend_name() == "postgresql" and url.password is None, name  # no password in a config
    password_env = StorageConfig.model_validate(applications["kuberay"]["args"]["storage"]).database_password_env
    for pod in _pods(cluster):  # every pod may run the tracker, the ledger or an ingress replica
        env = {item["name"]: item for item in pod["containers"][0].get("env", [])}
        assert env[password_env]["valueFrom"]["secretKeyRef"]["key"], pod["containers"][0]["name"]


def test_the_image_installs_this_package_on_the_tested_ray_release() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    ray_version = __import__("ray").__version__
    assert f"FROM rayproject/ray:{ray_version}-py311" in dockerfile
    assert f'"ray[serve]=={ray_version}" .' in dockerfile
    for package in ("deployments", "serve_app"):
        assert f"COPY --chown=ray:users {package} ./{package}" in dockerfile
    assert f"ENV {PROXY_CALLBACK_ENV}={PROXY_CALLBACK}\n" in dockerfile  # header limits in every node's proxy


def test_the_grafana_dashboard_charts_only_metrics_the_service_records() -> None:
    """Every `ray_stt_*` series a panel queries is one that deployments/metrics.py defines."""
    source = (ROOT / "deployments" / "metrics.py").read_text()
    defined = set(re.findall(r'"(stt_[a-z_]+)"', source))
    dashboard = json.loads((ROOT / "configs" / "grafana-dashboard.json").read_text())
    queried = {
        re.sub(r"_(total|bucket|sum|count)$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"ray_(stt_[a-z_]+)", target["expr"])
    }
    assert queried and queried <= defined, queried - defined
    assert defined <= queried  # and every metric has a panel
