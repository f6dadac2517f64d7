"""Where steps run: the local default, Celery workers, or Kubernetes jobs (Dagster's own engines), chosen by
BENCH_EXECUTOR at load time; and the op tags that route GPU steps to GPU capacity."""
from __future__ import annotations

import os
from typing import Optional

# On pool="gpu" assets. Celery: the step goes to the GPU host's queue (a worker there listens on it).
# Kubernetes: the step's pod (k8s_job_executor) or the run's pod asks for one GPU.
GPU_OP_TAGS = {
    "dagster-celery/queue": os.environ.get("BENCH_GPU_QUEUE", "gpu"),
    "dagster-k8s/config": {"container_config": {"resources": {"limits": {"nvidia.com/gpu": "1"}}}},
}


def executor_from_env():
    """None (Dagster's default: multiprocess for launched runs, in-process for `materialize`), or the Celery /
    k8s job executor configured from the environment."""
    kind = os.environ.get("BENCH_EXECUTOR", "default")
    if kind == "default":
        return None
    if kind == "celery":
        from dagster_celery import celery_executor
        return celery_executor.configured({"broker": {"env": "BENCH_CELERY_BROKER"},
                                           "backend": {"env": "BENCH_CELERY_BACKEND"}})
    if kind == "k8s":
        from dagster_k8s import k8s_job_executor
        return k8s_job_executor.configured({"max_concurrent": int(os.environ.get("BENCH_K8S_MAX_CONCURRENT", "16"))})
    raise ValueError(f"BENCH_EXECUTOR={kind!r}: expected default, celery or k8s")


def executor_kind() -> Optional[str]:
    return os.environ.get("BENCH_EXECUTOR", "default")
