"""A test-only code location: two jobs whose single step needs the `gpu` pool and holds it for a while."""
import os
import time

from dagster import Definitions, asset, define_asset_job

HOLD_S = float(os.environ.get("BENCH_TEST_GPU_HOLD_S", "4"))


@asset(pool="gpu")
def gpu_step_a() -> int:
    time.sleep(HOLD_S)
    return 1


@asset(pool="gpu")
def gpu_step_b() -> int:
    time.sleep(HOLD_S)
    return 2


defs = Definitions(assets=[gpu_step_a, gpu_step_b],
                   jobs=[define_asset_job("gpu_a", selection=["gpu_step_a"]),
                         define_asset_job("gpu_b", selection=["gpu_step_b"])])
