"""NarrativeTrack's memory is flat in video length (issue 16): the sampled frames are decoded once, kept on disk, and
every pixel stage reads them back a few at a time; what a stage holds grows with boxes and rows, never with frames.
The numbers the stages compute from the streamed frames are the ones they compute from frames held in memory."""
import gc
import os
import subprocess
import sys
import tracemalloc

import av
import numpy as np
import pytest
import supervision as sv

from bench_assets.core import media
from bench_assets.narrativetrack import frame_cache as A
from bench_assets.narrativetrack import framestore as FS
from bench_assets.narrativetrack import pipeline as PL
from bench_assets.narrativetrack import stages as S

W, H, FPS = 320, 240, 8


def _video(path, n: int, seed: int = 0) -> dict:
    """A textured background with a bright 'person' walking across it (its own path per seed)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 90, (H, W, 3), dtype=np.uint8)
    c = av.open(str(path), "w")
    s = c.add_stream("mpeg4", rate=FPS)
    s.width, s.height, s.pix_fmt, s.bit_rate = W, H, "yuv420p", 4_000_000
    for i in range(n):
        img = base.copy()
        x = 10 + (7 * i) % (W - 60)
        img[60:200, x:x + 40] = (230, 200 - (i * 3) % 120, 60 + (i * 5) % 150)  # outfit colours change over time
        for pkt in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
            c.mux(pkt)
    for pkt in s.encode():
        c.mux(pkt)
    c.close()
    return {"video_id": f"v{n}", "path": str(path), "sha256": media.sha256_file(path)}


class BrightDetector:
    """The box around pixels brighter than 200 in red: its answer follows the frame."""

    def detect(self, images):
        out = []
        for im in images:
            ys, xs = np.nonzero(im[..., 0] > 200)
            if len(xs) == 0:
                out.append(sv.Detections.empty())
                continue
            box = np.array([[xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]], np.float32)
            out.append(sv.Detections(xyxy=box, confidence=np.array([0.5 + (xs.min() % 40) / 100], np.float32)))
        return out


class MeanColourReid:
    """Mean colour and size per crop; batched like a real model (``batch_size``), every call recorded."""
    batch_size = 4

    def __init__(self):
        self.calls = []

    def embed(self, crops):
        self.calls.append(len(crops))
        return np.array([[*c.reshape(-1, 3).mean(0) / 255, c.shape[0] / 100, c.shape[1] / 100] for c in crops])


def _stages(frames, times):
    """Every pixel-reading stage of the pipeline on ``frames`` (a FrameView or a list), with the offline models."""
    dets = S.detect(frames, BrightDetector())
    reid = MeanColourReid()
    emb = S.reid_embeddings(frames, dets, reid)
    colours = S.torso_colours(frames, dets)
    own = {d["sample"]: d["box"] for d in dets}
    seg = {"samples": sorted(own)}
    ctx = S.offline_context(frames, times, seg, {k: [b] for k, b in own.items()}, own)
    best = PL.canonical_best((d["sample"], PL.crop(frames[d["sample"]], d["box"])) for d in dets)
    return {"shots": PL.shot_ids(frames), "dets": dets, "emb": emb, "colours": colours, "ctx": ctx,
            "best": (best[0], best[1].tobytes()), "reid_calls": reid.calls}


def _run(tmp_path, n: int) -> dict:
    video = _video(tmp_path / f"v{n}.mp4", n)
    idx = list(range(n))  # every frame a sample: the longer clip has 8x the samples
    times = [i / FPS for i in idx]
    A._FRAMES.clear()
    c0 = media.counters()
    view = A.frame_view(video, idx, also=media.even_indices(n, 20))
    c1 = media.counters()
    gc.collect()
    tracemalloc.start()
    try:
        out = _stages(view, times)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out.update(peak=peak, view=view, video=video, idx=idx, times=times,
               passes=c1["passes"] - c0["passes"], converted=c1["frames_converted"] - c0["frames_converted"],
               needed=c1["frames_needed"] - c0["frames_needed"])
    return out


def test_pixel_stages_hold_a_bounded_number_of_frames_whatever_the_length(tmp_path):
    frame = W * H * 3
    short, long = _run(tmp_path, 24), _run(tmp_path, 192)
    for r in (short, long):
        assert r["passes"] == 1 and r["converted"] <= 1.05 * r["needed"]   # one pass, only the needed frames
        assert len(r["dets"]) == len(r["idx"])                            # the detector saw every sample
        # the view never held more than its few frames (the detector's chunk is read apart from it)
        assert r["view"].peak_held_bytes <= FS.HOLD * frame
    assert short["view"].peak_held_bytes == long["view"].peak_held_bytes
    # what the stages allocate grows with rows, not with frames: 168 more samples cost far less than one frame each
    # (holding the samples would add >= 168 x 230 KB = 39 MB; the detector's chunk of 16 frames is 3.7 MB)
    grown = long["peak"] - short["peak"]
    assert grown < 0.1 * (192 - 24) * frame, (short["peak"], long["peak"])
    # all at once: a chunk of frames for the detector, the view's few, and the rows (far under the 44 MB of samples)
    assert long["peak"] < 2 * (S.DETECT_CHUNK + FS.HOLD) * frame, long["peak"]
    # ReID batches are the model's own (a multiple of its batch until the last): same numbers as one call
    assert all(k % MeanColourReid.batch_size == 0 for k in long["reid_calls"][:-1]) and len(long["reid_calls"]) > 1


def test_streamed_frames_give_the_numbers_held_frames_give(tmp_path):
    r = _run(tmp_path, 40)
    held = list(A.frames_at(r["video"], r["idx"]))                     # from the spill: no new pass
    assert all(np.array_equal(a, b) for a, b in zip(held, r["view"]))
    src = media.VideoSource(r["video"]["path"])
    fresh = src.take(r["idx"])
    src.run()
    assert np.array_equal(np.stack(held), fresh.frames)                 # bit for bit what a decode in memory gives
    ref = _stages(held, r["times"])
    for k in ("shots", "dets", "emb", "colours", "ctx", "best"):
        assert ref[k] == r[k], k
    assert ref["reid_calls"] == r["reid_calls"]


def test_the_spill_file_goes_with_the_last_reader(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_NT_SPILL_DIR", str(tmp_path / "spill"))
    (tmp_path / "spill").mkdir()
    video = _video(tmp_path / "s.mp4", 16)
    A._FRAMES.clear()
    view = A.frame_view(video, [0, 5, 10])
    spill = view.spill
    fd = spill.fd
    assert os.fstat(fd).st_size == 3 * W * H * 3
    assert os.listdir(tmp_path / "spill") == []     # no name on disk that a dead process could leave behind
    A._FRAMES.clear()
    assert not spill.closed and os.fstat(fd).st_size == 3 * W * H * 3   # a view still reads it
    del view, spill
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)                                # the descriptor, and with it the disk space, is gone


_KILLED = """
import os, signal, sys
import numpy as np
from bench_assets.narrativetrack import framestore
s = framestore.FrameSpill()
for i in range(4):
    s.add(i, np.full((64, 64, 3), i, np.uint8))
assert np.array_equal(s.get(2), np.full((64, 64, 3), 2, np.uint8))
print("written", flush=True)
os.kill(os.getpid(), signal.SIGKILL) if sys.argv[1] == "kill" else os._exit(0)
"""


@pytest.mark.parametrize("how", ["kill", "exit"])
def test_a_step_that_dies_leaves_no_spill_on_disk(tmp_path, how):
    """A Dagster step leaves by os._exit or a kill, where no finalizer runs; its spill must not stay on disk."""
    spill = tmp_path / "spill"
    spill.mkdir()
    env = dict(os.environ, BENCH_NT_SPILL_DIR=str(spill))
    r = subprocess.run([sys.executable, "-c", _KILLED, how], env=env, capture_output=True, text=True, timeout=120)
    assert "written" in r.stdout, r.stderr
    assert os.listdir(spill) == []
