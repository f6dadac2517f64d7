"""EntityBench metric math: arrays in, values out. No Dagster, no file access.

Each function documents the spec line it implements (``../shared/spec/entitybench.md``).
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence

import cv2
import numpy as np

from bench_assets.core import kernels
# the shared kernels (core/kernels.py) under the names this folder reads; their fast forms are pinned bit for bit
from bench_assets.core.kernels import interpolate_midpoint
from bench_assets.core.kernels import l2_normalise as _l2n
from bench_assets.core.kernels import midpoint_error as _midpoint_error
from bench_resources.models.flow import flow_magnitude

FlowFn = Callable[[list[tuple[np.ndarray, np.ndarray]]], list[np.ndarray]]

DYNAMIC_FPS = 8.0
DYNAMIC_TOP_FRACTION = 0.05
DYNAMIC_THRESHOLD_PER_256 = 6.0
DYNAMIC_COUNT_PER_16 = 4   # VBench: a video moves when >= round(4 * sampled frames / 16) of its pairs move


def subject_consistency(embeddings: np.ndarray) -> Optional[float]:
    """VBench's subject_consistency (what the authors' evaluator runs, ``dimension_list=[dim]``): per frame after
    the first, the mean of max(0, cos to the previous frame) and max(0, cos to the first frame), averaged over
    the n - 1 frames (VBench's DINO ViT-B/16 in the paper profile)."""
    e = _l2n(embeddings)
    if len(e) < 2:
        return None
    pre, first = np.sum(e[1:] * e[:-1], axis=1), e[1:] @ e[0]
    return float(np.mean((np.maximum(pre, 0.0) + np.maximum(first, 0.0)) / 2))


def subject_consistency_eq2(embeddings: np.ndarray) -> Optional[float]:
    """The paper text's Eq. 2 (an addition since the authors' code runs VBench): mean cosine of consecutive
    frames' embeddings (DINOv2-base in the paper profile)."""
    e = _l2n(embeddings)
    if len(e) < 2:
        return None
    return float(np.mean(np.sum(e[1:] * e[:-1], axis=1)))


def temporal_flickering(frames: np.ndarray) -> Optional[float]:
    """1 - mean over consecutive frames of the mean absolute error, pixels in [0, 1]."""
    if len(frames) < 2:
        return None
    f = frames.astype(np.float32) / 255.0
    return float(1.0 - np.mean(np.abs(f[1:] - f[:-1])))


def motion_smoothness(frames: np.ndarray, flow: FlowFn) -> Optional[float]:
    """Drop odd frames, rebuild each from its neighbours by flow interpolation; (255 - MAE) / 255."""
    triples = [(i - 1, i, i + 1) for i in range(1, len(frames) - 1, 2)]
    if not triples:
        return None
    pairs = []
    for p, _, n in triples:
        pairs += [(frames[p], frames[n]), (frames[n], frames[p])]
    flows = flow(pairs)
    errs = []
    for j, (p, m, n) in enumerate(triples):
        mid = interpolate_midpoint(frames[p], frames[n], flows[2 * j], flows[2 * j + 1])
        errs.append(float(np.mean(np.abs(mid - frames[m].astype(np.float32)))))
    return kernels.smoothness_score(errs)


def dynamic_indices(n_frames: int, fps: float) -> list[int]:
    """The native frames of dynamic degree's ~8 fps resampling (fixed from the frame count and the rate)."""
    from bench_assets.core.media import fps_indices
    # VBench keeps every round(fps / 8)-th frame (0, 4, 8, 12 at 30 fps), not a fractional step
    return fps_indices(n_frames, fps or DYNAMIC_FPS, DYNAMIC_FPS, whole_step=True)


def dynamic_verdict(moving: Sequence[bool]) -> float:
    """VBench's ``DynamicDegree.check_move`` over one video's sampled pairs, as the authors' evaluator keeps it per
    shot (1.0 dynamic, 0.0 static): dynamic when at least round(4 * sampled frames / 16) pairs move (Python's
    round, half to even; frames = pairs + 1). One sampled frame (no pair) is static, as VBench answers it."""
    if not len(moving):
        return 0.0
    need = round(DYNAMIC_COUNT_PER_16 * (len(moving) + 1) / 16.0)
    return 1.0 if sum(bool(m) for m in moving) >= need else 0.0


def dynamic_moving(frames: np.ndarray, fps: float, flow: FlowFn) -> list[bool]:
    """Per consecutive pair of the ~8 fps resampling: top-5 % flow magnitude mean > 6*min(H,W)/256."""
    idx = dynamic_indices(len(frames), fps)
    if len(idx) < 2:
        return []
    h, w = frames.shape[1:3]
    threshold = DYNAMIC_THRESHOLD_PER_256 * min(h, w) / 256.0
    flows = flow([(frames[a], frames[b]) for a, b in zip(idx, idx[1:])])
    moving = []
    for f in flows:
        mag = np.sqrt((f.astype(np.float64) ** 2).sum(-1)).ravel()
        k = max(1, int(DYNAMIC_TOP_FRACTION * mag.size))   # VBench: int(h * w * 0.05), truncated
        moving.append(float(np.mean(np.partition(mag, -k)[-k:])) > threshold)
    return moving


def dynamic_degree(frames: np.ndarray, fps: float, flow: FlowFn) -> Optional[float]:
    """VBench's per-video verdict (``dynamic_verdict``) of one shot: 1.0 or 0.0 (the authors average it over
    shots)."""
    return dynamic_verdict(dynamic_moving(frames, fps, flow))


def dynamic_degree_pair_fraction(frames: np.ndarray, fps: float, flow: FlowFn) -> Optional[float]:
    """The paper text's per-shot fraction of moving pairs (an addition); None without a pair."""
    moving = dynamic_moving(frames, fps, flow)
    return float(np.mean(moving)) if moving else None


def centroid_scores(embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centroid, cos(each, centroid)) with centroid = normalize(mean of L2-normalised embeddings)."""
    e = _l2n(embeddings)
    c = _l2n(e.mean(axis=0))
    return c, e @ c


def leave_one_out_scores(embeddings: np.ndarray) -> np.ndarray:
    """cos(each, normalize(mean of the others)): identity agreement without the self-similarity that a centroid
    including the appearance itself adds (with 2 appearances this is their plain cosine)."""
    e = _l2n(embeddings)
    if len(e) < 2:
        return np.zeros(0)
    total = e.sum(axis=0)
    return np.array([float(e[i] @ _l2n(total - e[i])) for i in range(len(e))])


def presence_share(statuses: Sequence[str]) -> Optional[float]:
    """Share of a type's scheduled entities in a shot with status ``present``; None when none scheduled.

    Entities whose grounding could not run (status ``unavailable``) are excluded, not counted absent.
    """
    known = [s for s in statuses if s != "unavailable"]
    if not known:
        return None
    return float(np.mean([s == "present" for s in known]))


# ---------------------------------------------------------------------------------- Pillar 1, streamed

# Spec: subject consistency, flickering and motion smoothness are defined on consecutive native frames, so
# every frame of the shot is walked, chunk by chunk (never a fixed-size sample, whose values would depend on
# the shot's length and fps). Each accumulator carries across chunk borders what its pairs or triples need.

from dataclasses import dataclass  # noqa: E402


class _SubjectConsistency:
    """Frame embeddings walked once; both formulas are kept, so the two subject metrics share one pass when they
    are fed the same model (offline): ``formula`` "vbench" (VBench's, the authors' code) or "eq2" (the paper
    text's Eq. 2, an addition)."""

    def __init__(self, model, fps, n_frames, formula: str = "vbench"):
        self.model, self.formula, self.prev, self.first = model, formula, None, None
        self.eq2, self.vbench, self.n = 0.0, 0.0, 0

    def update(self, frames: np.ndarray) -> None:
        # whole frames: the slots preprocess them as VBench's dino_transform (paper silent), crops differ
        embed = getattr(self.model, "embed_frames", self.model.embed)
        e = _l2n(embed(list(frames)))
        if not len(e):
            return
        if self.first is None:
            self.first = e[0]
        e_all = np.concatenate([self.prev[None], e]) if self.prev is not None else e
        if len(e_all) >= 2:
            pre, first = np.sum(e_all[1:] * e_all[:-1], axis=1), e_all[1:] @ self.first
            self.eq2 += float(np.sum(pre))
            self.vbench += float(np.sum((np.maximum(pre, 0.0) + np.maximum(first, 0.0)) / 2))
            self.n += len(e_all) - 1
        self.prev = e_all[-1]

    def value(self, formula: str) -> Optional[float]:
        return (self.vbench if formula == "vbench" else self.eq2) / self.n if self.n else None

    def result(self) -> Optional[float]:
        return self.value(self.formula)


class _Flicker:
    def __init__(self, model, fps, n_frames):
        self.prev, self.total, self.n = None, 0.0, 0

    def update(self, frames: np.ndarray) -> None:
        # sum |a - b| over uint8 pairs (cv2.norm L1: an exact integer sum, no difference image), over the pixel
        # count: the same double as the float64 mean of cv2.absdiff (whose partial sums are exact integers too)
        prev = self.prev
        for f in frames:
            if prev is not None:
                self.total += cv2.norm(prev, f, cv2.NORM_L1) / f.size
                self.n += 1
            prev = f
        self.prev = prev

    def result(self) -> Optional[float]:
        return 1.0 - self.total / self.n / 255.0 if self.n else None


class SharedFlow:
    """The flow model of one shot, shared by motion smoothness and dynamic degree. At 16 fps dynamic degree's ~8 fps
    pairs (k, k+2) are smoothness's forward pairs: each is computed once (a third of the shot's flows). A flow
    whose key (frame indices a, b) is in ``shared`` is held until the other metric asks for it, then dropped; the
    two ask within the same chunk, so a few flows are held at a time. Values are the unshared ones: the same
    model on the same frames (DIS is deterministic)."""

    def __init__(self, model, shared: Iterable[tuple[int, int]] = ()):
        self.model, self.shared, self.held = model, set(shared), {}

    def flow(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]], keys: Sequence[tuple[int, int]]) -> list:
        out: list = [None] * len(pairs)
        todo = []
        for j, k in enumerate(keys):
            if k in self.held:
                out[j] = self.held.pop(k)
            else:
                todo.append(j)
        if todo:
            for j, f in zip(todo, self.model.flow([pairs[j] for j in todo])):
                out[j] = f
                if keys[j] in self.shared:
                    self.shared.discard(keys[j])
                    self.held[keys[j]] = f
        return out

    def stop(self) -> None:
        """One of the two metrics stopped (its model failed): nothing more is held for it."""
        self.shared.clear()
        self.held.clear()


def smoothness_forward_pairs(n_frames: int) -> set[tuple[int, int]]:
    """(p, n) of every triple (p, p+1, p+2), p even, that motion smoothness rebuilds."""
    return {(p, p + 2) for p in range(0, n_frames - 2, 2)}


def dynamic_pairs(n_frames: int, fps: float) -> set[tuple[int, int]]:
    """Consecutive indices of dynamic degree's ~8 fps resampling."""
    idx = dynamic_indices(n_frames, fps)
    return set(zip(idx, idx[1:]))


def _flow_of(model):
    return model if isinstance(model, SharedFlow) else SharedFlow(model)


def _interpolation_flow(model):
    """The flow that rebuilds midpoints: the offline interpolator's (FlowMidpoint: warped along the flow slot) or a
    flow model given directly; None for a network that returns midpoints itself (AMT-S: ``midpoints``)."""
    if model is None or hasattr(model, "midpoints"):
        return None
    return getattr(model, "flow_model", model)


class _Smoothness:
    """Triples (0,1,2), (2,3,4), ...: the odd frame is rebuilt from its even neighbours, by the interpolator slot:
    AMT-S in the paper profile (its uint8 midpoint, as VBench), flow-midpoint warping offline."""

    def __init__(self, model, fps, n_frames):
        flow = _interpolation_flow(model)
        self.net = None if flow is not None else model
        self.flow = _flow_of(flow).flow if flow is not None else None
        self.buf, self.errs, self.i = [], [], 0   # i: index of buf[0]

    def update(self, frames: np.ndarray) -> None:
        self.buf += list(frames)
        triples, starts = [], []
        while len(self.buf) >= 3:
            triples.append(tuple(self.buf[:3]))
            starts.append(self.i)
            self.buf = self.buf[2:]
            self.i += 2
        if not triples:
            return
        if self.net is not None:   # VBench: |uint8 midpoint - uint8 frame|, mean per triple
            mids = self.net.midpoints([(p, n) for p, _, n in triples])
            self.errs += [float(np.mean(np.abs(x.astype(np.int16) - m.astype(np.int16))))
                          for x, (_, m, _) in zip(mids, triples)]
            return
        pairs, keys = [], []
        for (p, _, n), a in zip(triples, starts):
            pairs += [(p, n), (n, p)]
            keys += [(a, a + 2), (a + 2, a)]
        flows = self.flow(pairs, keys)
        for j, (p, m, n) in enumerate(triples):
            self.errs.append(_midpoint_error(p, m, n, flows[2 * j], flows[2 * j + 1]))

    def result(self) -> Optional[float]:
        return kernels.smoothness_score(self.errs)


class _Dynamic:
    """Consecutive pairs of the ~8 fps resampling (indices fixed from the container's frame count). ``formula``
    "vbench": VBench's per-shot verdict (the authors' code); "fraction": the share of moving pairs (the paper
    text's, an addition). Both read one set of flows."""

    def __init__(self, model, fps, n_frames, formula: str = "vbench"):
        self.formula = formula
        self.flow = _flow_of(model).flow
        self.keep = set(dynamic_indices(n_frames, fps))
        self.i, self.prev, self.moving = 0, None, []   # prev: (index, frame) of the last kept frame

    def update(self, frames: np.ndarray) -> None:
        picked = []
        for f in frames:
            if self.i in self.keep:
                picked.append((self.i, f))
            self.i += 1
        if self.prev is not None:
            picked = [self.prev, *picked]
        if len(picked) >= 2:
            h, w = picked[0][1].shape[:2]
            threshold = DYNAMIC_THRESHOLD_PER_256 * min(h, w) / 256.0
            pairs = list(zip(picked[:-1], picked[1:]))
            for fl in self.flow([(a, b) for (_, a), (_, b) in pairs], [(i, j) for (i, _), (j, _) in pairs]):
                mag = flow_magnitude(fl)
                k = max(1, int(DYNAMIC_TOP_FRACTION * mag.size))   # VBench: int(h * w * 0.05), truncated
                self.moving.append(float(np.mean(np.partition(mag, -k)[-k:])) > threshold)
        if picked:
            self.prev = picked[-1]

    def value(self, formula: str) -> Optional[float]:
        if formula == "vbench":
            return dynamic_verdict(self.moving) if self.i else None   # no frame walked: nothing to judge
        return float(np.mean(self.moving)) if self.moving else None

    def result(self) -> Optional[float]:
        return self.value(self.formula)


class _PerFrameMean:
    def __init__(self, model, fps, n_frames, scale: float = 1.0):
        self.model, self.scale, self.total, self.n = model, scale, 0.0, 0

    def update(self, frames: np.ndarray) -> None:
        s = np.asarray(self.model.score(list(frames)), np.float64)
        self.total += float(s.sum())
        self.n += len(s)

    def result(self) -> Optional[float]:
        return self.total / self.n / self.scale if self.n else None


@dataclass(frozen=True)
class ShotMetric:
    """One intra-shot metric: its id, the model slot it needs (or None) and its streaming accumulator.

    ``start(model, fps, n_frames)`` returns an object with ``update(frames)`` (called with every native frame
    of the shot, in order, in chunks) and ``result()``.
    """

    metric_id: str
    slot: Optional[str]
    start: Callable[[object, float, int], object]
    # metrics of one ``group`` fed the same model object share one accumulator (one pass, one set of flows or
    # embeddings); ``formula`` picks the value each reads from it
    group: Optional[str] = None
    formula: Optional[str] = None

    def read(self, acc) -> Optional[float]:
        return acc.value(self.formula) if self.formula is not None else acc.result()


# The authors' evaluator runs VBench itself per shot (``dimension_list=[dim]``, eval/evaluate_benchmark.py 3776439):
# each value is VBench's per-video ``video_results`` (imaging quality on MUSIQ's raw 0-100 scale, dynamic degree a
# 0/1 verdict), averaged over shots. The paper text's Eq. 2 and its pair fraction are additions with their own ids.
PILLAR1 = (
    ShotMetric("subject_consistency", "vbench_dino",
               lambda m, fps, n: _SubjectConsistency(m, fps, n, "vbench"), "subject", "vbench"),
    ShotMetric("temporal_flickering", None, lambda m, fps, n: _Flicker(m, fps, n)),
    ShotMetric("motion_smoothness", "interpolator", lambda m, fps, n: _Smoothness(m, fps, n)),
    ShotMetric("dynamic_degree", "flow", lambda m, fps, n: _Dynamic(m, fps, n, "vbench"), "dynamic", "vbench"),
    # LAION head is 0-10; VBench's per-video value (and the authors') is /10
    ShotMetric("aesthetic_quality", "aesthetic", lambda m, fps, n: _PerFrameMean(m, fps, n, 10.0)),
    # MUSIQ keeps its native 0-100 scale (VBench divides only its all-video mean by 100; the authors read per video)
    ShotMetric("imaging_quality", "musiq", lambda m, fps, n: _PerFrameMean(m, fps, n)),
    ShotMetric("subject_consistency_eq2", "image_embedder",
               lambda m, fps, n: _SubjectConsistency(m, fps, n, "eq2"), "subject", "eq2"),
    ShotMetric("dynamic_degree_pair_fraction", "flow", lambda m, fps, n: _Dynamic(m, fps, n, "fraction"),
               "dynamic", "fraction"),
)


def stream_pillar1(chunks, fps: float, n_frames: int, metrics: dict) -> dict[str, tuple[Optional[float], Optional[str]]]:
    """Run the given Pillar 1 metrics ({ShotMetric: model}) over ``chunks`` (an iterable of consecutive frame
    arrays covering the shot once, no overlap): metric_id -> (value, error). A metric whose model raises is
    stopped with the error (the evaluator's failure); the others go on."""
    models = {m.metric_id: model for m, model in metrics.items()}
    sharing = None
    interp_flow = _interpolation_flow(models.get("motion_smoothness"))
    dynamic_ids = [m.metric_id for m in metrics if m.group == "dynamic"]
    if interp_flow is not None and any(interp_flow is models[d] for d in dynamic_ids):
        # offline: the interpolator warps along the same flow model as dynamic degree, so shared pairs run once
        sharing = SharedFlow(interp_flow, smoothness_forward_pairs(n_frames) & dynamic_pairs(n_frames, fps))
        models["motion_smoothness"] = sharing
        for mid in dynamic_ids:
            if models[mid] is interp_flow:
                models[mid] = sharing
    owners: dict = {}   # one accumulator per (group, model object); its first metric id names its failures
    accs = {}
    for m in metrics:
        key = (m.group, id(models[m.metric_id])) if m.group else (m.metric_id,)
        if key not in owners:
            owners[key] = (m.metric_id, m.start(models[m.metric_id], fps, n_frames))
        accs[m.metric_id] = owners[key]
    errors: dict[str, str] = {}
    for frames in chunks:
        for mid, acc in owners.values():
            if mid in errors:
                continue
            try:
                acc.update(frames)
            except Exception as e:  # noqa: BLE001 - one metric's model crash must not take the shot down
                errors[mid] = f"{mid} failed: {type(e).__name__}: {e}"[:300]
                if sharing is not None and mid in ("motion_smoothness", *dynamic_ids):
                    sharing.stop()
    out = {}
    for m in metrics:
        owner, acc = accs[m.metric_id]
        out[m.metric_id] = (None, errors[owner].replace(owner, m.metric_id, 1)) if owner in errors else \
            (m.read(acc), None)
    return out
