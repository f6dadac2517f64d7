"""Where steps run: in the run's own process (the local default), in one process per step, on Celery workers, or in
Kubernetes jobs (Dagster's own engines), chosen by BENCH_EXECUTOR at load time; and the op tags that route GPU steps
to GPU capacity.

Why in-process is the local default: models load lazily once per process (bench_resources/models/registry.py).
Dagster's multiprocess executor starts one process per step, so a run launched from the UI, a sensor or a backfill
reloaded every model for every step of every partition, while `bench evaluate` (one process) loaded each once.
With the in-process executor a launched run loads each model once, like the CLI. BENCH_EXECUTOR=multiprocess
brings back step-level parallelism (useful only when steps are cheap and models are not involved)."""
from __future__ import annotations

import os
import warnings


def quiet_dagster_notices() -> None:
    """Hide Dagster's BetaWarning / PreviewWarning: they speak of Dagster's own API stability for features this
    code uses on purpose (``Output(data_version=...)``, sensor ``owners``), never of the data, and Dagster re-arms
    them per step, so `bench evaluate` and `bench ui` printed one per partition between the progress lines.
    Called where the code location loads (this module) and by the in-process runner. Every other warning stays."""
    from dagster import BetaWarning, PreviewWarning
    for category in (BetaWarning, PreviewWarning):
        warnings.filterwarnings("ignore", category=category)


quiet_dagster_notices()

# On pool="gpu" assets. Celery: the step goes to the GPU host's queue (a worker there listens on it).
# Kubernetes: the step's pod (k8s_job_executor) or the run's pod asks for one GPU.
GPU_OP_TAGS = {
    "dagster-celery/queue": os.environ.get("BENCH_GPU_QUEUE", "gpu"),
    "dagster-k8s/config": {"container_config": {"resources": {"limits": {"nvidia.com/gpu": "1"}}}},
}


EXECUTORS = ("default", "in_process", "multiprocess", "celery", "k8s")


def executor_from_env():
    """The executor of every job of the code location (the UI's Materialize included): in-process by default
    (``default`` / ``in_process``), Dagster's multiprocess executor, or the Celery / k8s job executor configured
    from the environment."""
    kind = executor_kind()
    if kind in ("default", "in_process"):
        from dagster import in_process_executor
        return in_process_executor
    if kind == "multiprocess":
        from dagster import multiprocess_executor
        return multiprocess_executor
    if kind == "celery":
        from dagster_celery import celery_executor
        return celery_executor.configured({"broker": {"env": "BENCH_CELERY_BROKER"},
                                           "backend": {"env": "BENCH_CELERY_BACKEND"}})
    if kind == "k8s":
        from dagster_k8s import k8s_job_executor
        return k8s_job_executor.configured({"max_concurrent": int(os.environ.get("BENCH_K8S_MAX_CONCURRENT", "16"))})
    raise ValueError(f"BENCH_EXECUTOR={kind!r}: expected one of {', '.join(EXECUTORS)}")


def executor_kind() -> str:
    return os.environ.get("BENCH_EXECUTOR", "default") or "default"
