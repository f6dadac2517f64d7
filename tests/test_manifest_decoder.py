"""Every benchmark's manifest names the video decoder and its versions (issue 16); a decoder change alone is recorded
but does not make two results incomparable."""
from __future__ import annotations

import importlib.metadata

import av
import pytest

from bench_assets.core import manifest as MF
from bench_resources.config import build_resources
from bench_resources.paths import BenchPaths, PROJECT_ROOT


def _check(decoder: dict) -> None:
    assert decoder["decoder"] == "pyav"
    assert decoder["pyav"] == av.__version__ == importlib.metadata.version("av")
    assert decoder["ffmpeg"] and decoder["libavcodec"]  # the FFmpeg build the wheel bundles


def test_build_manifest_records_the_decoder_and_comparability_ignores_its_version():
    base = dict(benchmark="b", protocol="p1", models={}, judge={}, constants={"k": 1})
    m = MF.build_manifest(**base)
    _check(m["decoder"])
    other = {**m, "decoder": {**m["decoder"], "ffmpeg": "0.0.0-other"}}
    assert MF.comparability(m, other) == (True, [])
    assert MF.protocol_digest(m) == MF.protocol_digest(other)
    assert MF.comparability(m, {**m, "constants": {"k": 2}})[0] is False  # the check itself still bites


def test_a_broken_decoder_still_yields_a_manifest_with_the_reason(monkeypatch):
    from bench_assets.core import media

    def broken():
        raise ImportError("no module named av")

    monkeypatch.setattr(media, "decoder_info", broken)
    m = MF.build_manifest(benchmark="b", protocol="p", models={}, judge={}, constants={})
    assert m["decoder"] == {"decoder": "unknown", "reason": "ImportError: no module named av"}


@pytest.fixture(scope="module")
def res(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    paths = BenchPaths(data_root=str(PROJECT_ROOT / "data"), generators_root=str(PROJECT_ROOT / "data" / "generators"))
    return build_resources(paths=paths, store_root=str(root))


def test_every_benchmark_manifest_names_the_decoder(res):
    from bench_assets.entitybench.manifest import entitybench_manifest
    from bench_assets.locot2v import assets as LA
    from bench_assets.narrativetrack import manifest as NA
    from bench_assets.vistorybench.manifest import vistorybench_manifest
    models, judge = res["models"], res["judge"]
    for m in (entitybench_manifest(models, judge), LA.manifest(models, judge, res["paths"]),
              NA.manifest(models, judge), vistorybench_manifest(models, judge)):
        _check(m["decoder"])
    # MBench builds its manifest inline in its leaderboard asset, through the same function
    import inspect

    from bench_assets.mbench import aggregate_assets as MA
    assert "build_manifest(" in inspect.getsource(MA.mbench_leaderboard.op.compute_fn.decorated_fn)
