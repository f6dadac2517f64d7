"""Keeping freed blocks in glibc's heap (``models.base.retain_freed_heap``, issue 38: the offline per-shot CPU cost):
the offline embedder's activation blocks stop page-faulting anew at every batch, and every value stays bitwise
the same. Each side runs in a fresh process (glibc's thresholds are per process and cannot be put back): the
EfficientNet-Lite0 embedder with random weights of the real architecture on varied 832 x 480 frames, three times
over, and DIS flows both ways."""
from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("efficientnet_lite_pytorch")

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, resource, sys
import numpy as np, torch
sys.path.insert(0, sys.argv[3])
from bench_resources.models import base, vision
from bench_resources.models.flow import DisFlow
from test_offline_lean_embedder import random_lite0
base.RETAIN_FREED_HEAP = sys.argv[1] == "on"
rng = np.random.default_rng(4)
scene = rng.integers(0, 256, (480, 832 + 5 * 20, 3), dtype=np.uint8)
frames = [np.ascontiguousarray(scene[:, 5 * i:5 * i + 832]) for i in range(20)]
emb = vision.lite0_embedder(random_lite0(2), "cpu", torch.float32, 16, lean=True)
faults = []
for _ in range(3):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    feats = emb.embed_frames(frames)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
flows = DisFlow().flow([(frames[0], frames[3]), (frames[3], frames[0]), (frames[7], frames[9])])
np.save(sys.argv[2] + ".feats.npy", feats)
np.save(sys.argv[2] + ".flows.npy", np.stack(flows))
json.dump({"retained": base.retain_freed_heap(), "faults": faults}, open(sys.argv[2] + ".json", "w"))
"""


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    out = {}
    d = tmp_path_factory.mktemp("heap")
    for side in ("off", "on"):
        stem = str(d / side)
        subprocess.run([sys.executable, "-c", SCRIPT, side, stem, str(ROOT / "tests")], cwd=ROOT, check=True,
                       timeout=300)
        out[side] = {**json.loads(Path(stem + ".json").read_text()),
                     "feats": np.load(stem + ".feats.npy"), "flows": np.load(stem + ".flows.npy")}
    return out


def test_values_are_bitwise_the_same_with_the_heap_kept(sides):
    off, on = sides["off"], sides["on"]
    assert off["feats"].shape == (20, 1280) and on["flows"].shape == (3, 480, 832, 2)
    assert np.array_equal(off["feats"], on["feats"])
    assert np.array_equal(off["flows"], on["flows"])
    # varied frames give varied features and flows: the equality is not of constants
    assert len({round(float(x), 6) for x in on["feats"].sum(axis=1)}) == 20
    assert not np.array_equal(on["flows"][0], on["flows"][2])


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="glibc's mallopt only; elsewhere retain_freed_heap changes nothing and says so")
def test_kept_blocks_stop_the_page_faults(sides):
    off, on = sides["off"], sides["on"]
    assert off["retained"] is False and on["retained"] is True
    # the first pass maps the heap either way; afterwards glibc's defaults map every >32 MiB block afresh
    assert off["faults"][2] > 50_000, off["faults"]
    assert on["faults"][2] < 0.1 * off["faults"][2], (on["faults"], off["faults"])
    print("minor page faults per pass, glibc's defaults:", off["faults"], "kept:", on["faults"])
