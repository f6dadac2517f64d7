"""MBench streams its videos (issue 16): one decode pass per video per generator step, no whole-clip decode, only the
planned frames converted, and the same values as the whole-clip computation on the embedded clips."""
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import instance_for_test

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core import media
from bench_assets.core.generators import discover_generators
from bench_assets.core.runner import evaluate
from bench_assets.mbench import dataset as D
from bench_assets.mbench import frames as FR
from bench_assets.mbench import scoring as SC
from bench_assets.mbench import tracking as TR
from bench_assets.mbench import wiring as W
from bench_resources.config import build_resources
from bench_resources.paths import BenchPaths

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
MB = BENCHMARKS["mbench"]
GEN = "mbench_consistent"
CASES = ["a_env01", "a_obj01", "a_hum01"]     # spatial + lighting; geometry + texture; identity + appearance


@pytest.fixture(scope="module")
def streamed(tmp_path_factory):
    """The generator steps of three embedded cases, every decode pass recorded with the step that asked for it."""
    tmp = tmp_path_factory.mktemp("mbstream")
    data = tmp / "data"
    shutil.copytree(DATA / "mbench", data / "mbench")
    shutil.copytree(DATA / "generators" / GEN, data / "generators" / GEN)
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(tmp / "store"))
    gens, errors = discover_generators(paths.generators_dir, "mbench")
    assert not errors
    passes = []
    real = media.VideoSource._pass

    def recording(self, pull):
        steps = sorted({r.name.split(":")[0] for r in self._requests if r.indices})
        passes.append((Path(self.path).stem, tuple(steps)))
        return real(self, pull)

    mp = pytest.MonkeyPatch()
    mp.setattr(media.VideoSource, "_pass", recording)
    c0 = media.counters()
    try:
        with instance_for_test() as instance:
            stats = evaluate(instance, assets=MB.assets, resources=resources, partitions=MB.partitions, items=CASES,
                             generators=gens, item_assets=MB.item_assets, generator_assets=MB.generator_assets,
                             aggregate_assets=[], progress=lambda s: None)
    finally:
        mp.undo()
    c1 = media.counters()
    assert not stats.failed, stats.failed
    return {"passes": passes, "decode": {k: c1[k] - c0[k] for k in c0}, "resources": resources, "paths": paths}


def test_one_pass_per_video_per_step_and_no_whole_clip_decode(streamed):
    d, passes = streamed["decode"], streamed["passes"]
    assert d["legacy_passes"] == 0 and d["legacy_frames"] == 0, d          # no ClipCache / decode_video
    assert all(len(steps) == 1 for _, steps in passes), passes              # a pass serves one step
    per = pd.Series([(v, s[0]) for v, s in passes]).value_counts()
    assert (per == 1).all(), per                                            # one pass per video per step
    steps = {v: {s for (w, s) in per.index if w == v} for v in CASES}
    assert all("mbench_poses" in s and "mbench_scores" in s for s in steps.values()), steps
    assert "mbench_tracks" not in steps["a_env01"]       # the environment case's tracks need no frame: no pass
    assert {"mbench_tracks"} <= steps["a_obj01"] and {"mbench_tracks"} <= steps["a_hum01"]
    assert d["passes"] == len(passes)
    assert d["frames_converted"] <= 1.05 * d["frames_needed"], d
    # every frame is walked once by the pose step; the other steps convert far fewer than a whole-clip decode would
    n = {c: media.VideoSource(DATA / "generators" / GEN / f"{c}.mp4").n_frames for c in CASES}
    assert d["frames_decoded"] >= sum(n.values())


def test_streamed_values_equal_the_whole_clip_computation(streamed):
    """The stored rows (streamed: gathered frames + per-chunk reductions) equal case_scores / track_rows run on every
    frame in memory, as before streaming."""
    res, paths = streamed["resources"], streamed["paths"]
    store = res["store"]
    scores = store.query("SELECT * FROM mbench_scores")
    tracks_all = store.query("SELECT * FROM mbench_tracks")
    poses_all = store.query("SELECT * FROM mbench_poses")
    for cid in CASES:
        case = D.load_case(DATA / "mbench" / "cases" / f"{cid}.json")
        frames = list(media.decode_video(DATA / "generators" / GEN / f"{cid}.mp4").frames)
        poses = poses_all[poses_all.case_id == cid].drop(columns=["generator", "case_id", "source_sha256"])
        Rs, C, pairs = TR.trajectory(poses)
        rows = TR.track_rows(case, frames, Rs, res["models"], res["device"], C=C, init_size=W.init_size(paths, case))
        stored_t = tracks_all[tracks_all.case_id == cid]
        assert len(rows) == len(stored_t)
        for r, (_, s) in zip(rows, stored_t.iterrows()):
            assert r.get("box") == (s["box"] if isinstance(s["box"], str) else None)
            if r.get("embedding") is not None:
                assert np.allclose(r["embedding"], s["embedding"], atol=0, rtol=0)
        tracks = stored_t.drop(columns=["generator", "case_id", "source_sha256"])
        ref = SC.case_scores(GEN, case, frames, Rs, C, pairs or [], res["models"], res["device"], res["judge"], tracks)
        got = scores[scores.case_id == cid].set_index("metric_id")
        assert set(got.index) == {r["metric_id"] for r in ref}
        for r in ref:
            v = got.loc[r["metric_id"], "value"]
            assert (pd.isna(v) and r["value"] is None) or v == r["value"], (cid, r["metric_id"], v, r["value"])
            assert (got.loc[r["metric_id"], "n_eval"], got.loc[r["metric_id"], "n_skipped"]) == (r["n_eval"],
                                                                                                 r["n_skipped"])
        assert got["value"].notna().sum() >= 2, cid


def test_unplanned_frames_fail_loudly(tmp_path):
    """A metric reading a frame its plan did not state is an error naming the frame, not a second decode."""
    from tests.support.video import write_video
    path = write_video(tmp_path / "v.mp4", n=12, w=48, h=32)
    src = media.VideoSource(path)
    vf = FR.VideoFrames(src, gather=[2, 7], name="t")
    c0 = media.counters()["passes"]
    assert vf[7].shape == (32, 48, 3) and media.counters()["passes"] == c0 + 1
    with pytest.raises(IndexError, match="frame 3 was not planned"):
        vf[3]
    # a walk: frame 0 read ahead before it, every frame once, in order, and the gathered frames after it
    src = media.VideoSource(path)
    vf = FR.VideoFrames(src, gather=[5], walk=True, name="t")
    assert vf[0].shape == (32, 48, 3)
    walked = [f for f in vf]
    assert len(walked) == 12 and src.done and vf[5].shape == (32, 48, 3)
    with pytest.raises(RuntimeError, match="once"):
        list(vf)
    # a consumer that takes exactly len() frames and stops (no StopIteration): finish() closes the pass
    src = media.VideoSource(path)
    vf = FR.VideoFrames(src, walk=True, chunk=4, name="t")
    it = iter(vf)
    assert len([next(it) for _ in range(len(vf))]) == 12 and not src.done
    vf.finish()
    assert src.done and src.stats.frames_decoded == 12
