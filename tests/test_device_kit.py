"""The device kit (issue 38 item 1): the zip of what a bare torch + torchvision + numpy + OpenCV machine lacks for the
paper profile's metric path is under 60 MiB, and scripts/device_bench.py runs from it in a venv that sees only those
four distributions (and their own requirements), with seeded random weights of every paper architecture."""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"_kit_{name}", ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_projection_is_the_printed_formula():
    """generator = sum(s/shot) x shots, paper = x generators; the H200 lines = per stage FLOPs / (peak of the
    precision parity grants that stage x utilisation): at bfloat16 RAFT is refused (float32 peak), DINOv2 not."""
    bench = _script("device_bench")
    rows = [{"stage": "raft", "s_per_shot": 2.0, "items": 40, "peak_gib": None, "gflops_per_shot": 1000.0},
            {"stage": "dinov2", "s_per_shot": 0.5, "items": 81, "peak_gib": None, "gflops_per_shot": 3000.0},
            {"stage": "dino", "skipped": "ImportError"}]
    p = bench.projection(rows, shots=100, generators=4, dtype="bfloat16", tf32=False)
    assert p["measured_generator_s"] == pytest.approx(250.0) and p["measured_paper_s"] == pytest.approx(1000.0)
    assert p["flops_per_shot"] == pytest.approx(4e12)
    assert p["stage_dtype"] == {"raft": "float32", "dinov2": "bfloat16"}
    want = (1e12 / (67e12 * 0.10) + 3e12 / (989e12 * 0.10)) * 100
    assert p["h200_generator_s_at_10pct"] == pytest.approx(want)
    assert p["h200_paper_s_at_10pct"] == pytest.approx(4 * want)
    assert p["h200_by_stage_s_at_40pct"]["raft"] == pytest.approx(1e12 / (67e12 * 0.40) * 100)
    # float32 with TF32 allowed reads the TF32 peak for every stage; without, the plain float32 one
    assert bench.projection(rows, 1, 1, "float32", True)["h200_by_stage_s_at_40pct"]["raft"] == \
        pytest.approx(1e12 / (494e12 * 0.40))
    assert bench.projection(rows, 1, 1, "float32", False)["h200_peak_flops"] == 67e12


def test_kit_builds_under_60_mib_and_runs_in_a_bare_venv(tmp_path):
    kit = _script("device_kit")
    zpath = tmp_path / "kit.zip"
    info = kit.build(zpath)
    assert info["size_mib"] < kit.LIMIT_MIB, info
    with zipfile.ZipFile(zpath) as z:
        names = z.namelist()
        z.extractall(tmp_path / "kit")
    tops = {n.split("/")[1] for n in names if n.startswith("site/")}
    # none of what the issue says must stay off the device path, and nothing the bare machine already has
    for absent in ("dagster", "av", "pandas", "pyarrow", "scipy", "duckdb", "torch", "torchvision", "numpy", "cv2"):
        assert absent not in tops, absent
    assert {"timm", "open_clip", "pyiqa", "vbench", "transformers"} <= tops
    assert "device_bench.py" in names and "bench_resources/models/slot_registry.py" in names
    assert not any(n.endswith(".pyc") for n in names)

    py = kit.bare_venv(tmp_path / "venv")
    seen = kit.check_bare(py)
    assert all(seen[m] for m in ("torch", "torchvision", "numpy", "cv2")), seen
    assert not any(seen[m] for m in kit.ABSENT), seen   # the venv truly hides them

    out_json = tmp_path / "bench.json"
    r = subprocess.run([str(py), str(tmp_path / "kit" / "device_bench.py"), "--device", "cpu", "--shots", "1",
                        "--warmup", "0", "--frames", "3", "--size", "128x96", "--grounding-frames", "1",
                        "--entities", "1", "--detect-short-side", "256", "--threads", "1", "--no-flops",
                        "--json", str(out_json)],
                       capture_output=True, text=True, timeout=1500, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = json.loads(out_json.read_text())
    stages = {row["stage"]: row for row in res["rows"]}
    assert set(stages) == set(_script("device_bench").STAGES)
    assert all("s_per_shot" in row and row["s_per_shot"] > 0 for row in stages.values()), stages
    # the project's Pillar 1 code ran on the decoded shot: each metric has a finite value
    for stage in ("flicker", "raft", "amt", "dinov2", "clip_aesthetic", "musiq"):
        assert res["values"][stage] and all(v is not None and math.isfinite(v) for v in res["values"][stage]), stage
    assert "projection (measured here)" in r.stdout and "x 2491 shots" in r.stdout
    assert "NOT measured" in r.stdout


def test_bare_venv_refuses_what_it_hides(tmp_path):
    """Control for the check above: the same venv with this environment's site-packages on its path does import
    dagster, so check_bare can fail."""
    kit = _script("device_kit")
    py = kit.bare_venv(tmp_path / "venv")
    import sysconfig
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "leak.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    assert kit.check_bare(py)["dagster"] is True
    assert sys.executable != str(py)
