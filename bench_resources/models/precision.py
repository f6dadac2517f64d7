"""Inference precision (``BENCH_DTYPE``: float32 / bfloat16 / float16), granted per metric against the parity bar.

A lower precision is used for a slot only where every paper metric that reads the slot moved by no more than the
parity bar (``BAR``, 1e-4 on the metric's own scale, tests/parity/conftest.py) from its float32 value when measured
(``MEASURED``: tests/parity/test_parity_precision.py, seeded random weights of each architecture on the parity
clips, CPU). Where a metric's difference exceeds the bar the slot runs float32 and the reason says which metric,
by how much; the manifest records the precision each slot ran (``SlotRegistry.manifest``), so runs at different
precisions are never compared as equal. Embedders cast module and inputs (their classes take a dtype); RAFT, AMT-S
and MUSIQ run their forwards under ``torch.autocast`` (``autocast_dtype`` set by the registry).

TF32 and ``cudnn.benchmark`` change CUDA's arithmetic (another matmul precision; another convolution algorithm):
no GPU was at hand to measure them against the bar, so they stay off unless ``BENCH_TF32=1`` /
``BENCH_CUDNN_BENCHMARK=1`` ask for them (``configure_backends``; the device bench measures their speed)."""
from __future__ import annotations

import contextlib
import os
from typing import Optional

DTYPES = ("float32", "bfloat16", "float16")
BAR = 1e-4

# paper metric -> the slots its value reads (aesthetic reads CLIP's embedding through its head)
METRIC_SLOTS = {
    "subject_consistency": ("vbench_dino",),
    "subject_consistency_eq2": ("image_embedder",),
    "motion_smoothness": ("interpolator",),
    "dynamic_degree": ("flow",),
    "aesthetic_quality": ("aesthetic", "clip_l14"),
    "imaging_quality": ("musiq",),
}

# |value(dtype) - value(float32)| on the metric's scale (dynamic degree: its pairs' top-5 % flow magnitude in px,
# which the 0/1 verdict thresholds), measured by tests/parity/test_parity_precision.py on carphone_pristine.mp4's
# first 5 frames with seeded random weights on CPU (2026-11-29); bikes.mp4 held out. Random weights: eq2's DINOv2
# (LayerScale 1e-5) gives near-constant embeddings and the random LAION head values near 0, so those two differences
# are small by construction; re-measure with real weights on the GPU before trusting a grant.
MEASURED: dict[str, dict[str, float]] = {
    "bfloat16": {"subject_consistency": 9.21e-05, "subject_consistency_eq2": 2.49e-10, "motion_smoothness": 4.46e-05,
                 "dynamic_degree": 4.81e-02, "aesthetic_quality": 1.97e-06, "imaging_quality": 5.71e-03},
    "float16": {"subject_consistency": 2.52e-06, "subject_consistency_eq2": 2.09e-09, "motion_smoothness": 2.33e-05,
                "dynamic_degree": 1.18e-03, "aesthetic_quality": 2.80e-08, "imaging_quality": 4.40e-04},
}


def requested_dtype() -> str:
    d = os.environ.get("BENCH_DTYPE", "float32") or "float32"
    if d not in DTYPES:
        raise ValueError(f"BENCH_DTYPE={d!r}: use one of {', '.join(DTYPES)}")
    return d


def refusal(metric: str, dtype: str) -> Optional[str]:
    """None when ``metric`` may run at ``dtype``; else why not."""
    if dtype == "float32":
        return None
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} not in {DTYPES}")
    diff = MEASURED.get(dtype, {}).get(metric)
    if diff is None:
        return f"{metric}: its difference from float32 at {dtype} was never measured"
    if diff > BAR:
        return f"{metric}: {dtype} moves it by {diff:.2g} from float32, over the parity bar {BAR:g}"
    return None


def slot_dtype(slot: str, dtype: str, paper_checkpoint: bool = True) -> tuple[str, Optional[str]]:
    """(the dtype ``slot`` runs at, the refusal reason when that is float32 instead of ``dtype``). A slot no paper
    metric reads (the other benchmarks' slots, never measured) keeps float32 too, and so does a slot running another
    checkpoint than the paper's (an offline substitute, an alternative): the differences were measured on the paper
    architectures."""
    if dtype == "float32":
        return "float32", None
    if not paper_checkpoint:
        return "float32", (f"slot '{slot}': runs a substitute or alternative checkpoint; {dtype} was measured for the "
                           f"paper architectures only")
    metrics = [m for m, slots in METRIC_SLOTS.items() if slot in slots]
    if not metrics:
        return "float32", f"slot '{slot}': no paper metric's difference at {dtype} was measured for it"
    reasons = [r for r in (refusal(m, dtype) for m in metrics) if r]
    if reasons:
        return "float32", f"slot '{slot}' runs float32: " + "; ".join(reasons)
    return dtype, None


def autocast(device, dtype: Optional[str]):
    """``torch.autocast`` on ``device``'s type at ``dtype``; nothing for float32 / None."""
    if dtype in (None, "float32"):
        return contextlib.nullcontext()
    import torch
    return torch.autocast(device_type=getattr(device, "type", str(device)).split(":")[0],
                          dtype=getattr(torch, str(dtype).removeprefix("torch.")))


def configure_backends(device: str, dtype: str) -> dict:
    """CUDA's TF32 and cudnn.benchmark, off unless BENCH_TF32=1 / BENCH_CUDNN_BENCHMARK=1 (not measured against the
    bar). Returns what is set, for the manifest and the device bench."""
    import torch
    cuda = str(device).startswith("cuda") and torch.cuda.is_available()
    tf32 = cuda and os.environ.get("BENCH_TF32") == "1"
    bench = cuda and os.environ.get("BENCH_CUDNN_BENCHMARK") == "1"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = bench
    return {"tf32": tf32, "cudnn_benchmark": bench}
