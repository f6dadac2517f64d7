"""LoCoT2V's frame-level temporal metrics as one streamed pass: flows are computed and reduced per chunk, never all
held, so memory is flat in video length (issue 16).

``TemporalStream.push(indices, frames)`` takes consecutive native frames (a ``VideoSource.chunks`` consumer). Per
chunk it: runs PySceneDetect's ContentDetector on every native frame; keeps a ring of the last few native frames so
that the 2k + 1 frame window around each detected cut (and the fallback "most abrupt pair" window) is scored as soon
as its last frame arrives; and, on the analysis frames (<= 8 fps) of the chunk plus the two carried from the
previous chunk, computes forward, backward and skip flows in one batched call each and reduces them at once to
per-pair numbers (moving / static flags, flicker MAE, warping error, interpolation error) and the frame features to
consecutive cosines. What stays after a chunk: those scalars, two analysis frames, one feature vector, the ring.

Motion smoothness and flickering follow VBench's protocol on NATIVE frames (LoCoT2V adopts VBench's smoothness
"directly" and flickering "following VBench"): every native triple (0,1,2), (2,3,4), ... is rebuilt by the
``interpolator`` (AMT-S in the paper profile, flow midpoints offline), and every consecutive native pair is judged
by VBench's static rule (the spec's per-pair reading; VBench's per-video filter is computed beside it, in the
value's detail). Both carry at most two native frames across a chunk border.

Each flow field is computed once per pass. Per analysis pair (a, b): F = a -> b (dynamic degree, flickering's
static rule where (a, b) are consecutive native frames, warping error's occlusion check) and B = b -> a (warping
error); per consecutive native pair that is not an analysis pair, its forward flow (flickering's static rule); with
the offline interpolator, per native triple (a, m, b) a -> b and b -> a (motion smoothness); per transition window the
2k flows of its consecutive native pairs, of which it reads only the mean magnitude. Where a window's pair is also an
analysis pair (videos at <= 16 fps, where analysis frames are consecutive native frames) or lies in an overlapping
window, its mean magnitude is taken from the flow already computed (``mags``: one float per consecutive native pair
whose frames the ring still holds), so no field is held beyond its pair. ``flow_counts`` counts what was computed
and reused.
"""
from __future__ import annotations

from collections import deque
from typing import Optional

import cv2
import numpy as np

from bench_assets.locot2v import constants
from bench_assets.locot2v import metrics
from bench_assets.locot2v.values import embed_unique, none, value

FLOW_MIDPOINT = object()   # TemporalStream's default interpolator: midpoints warped along its own flow

# native frames kept for transition windows: the window itself plus PySceneDetect's reporting delay
RING_FRAMES = 2 * (2 * constants.TRANSITION_K + 1) + constants.SCENE_MIN_LEN_FRAMES


_scene_detector = metrics.scene_detector  # one definition, shared with the whole-clip path


class TemporalStream:
    """Streamed reducer of dynamic degree, motion smoothness, warping error, flickering, semantic consistency and
    transition smoothness (and the shot cuts, for event segmentation). ``flow`` / ``embedder`` may be None: the
    metrics needing them become None with the reason; cuts are found regardless."""

    def __init__(self, n_frames: int, fps: float, shape: tuple[int, int], flow, flow_why: Optional[str], embedder,
                 embedder_why: Optional[str], interp=FLOW_MIDPOINT, interp_why: Optional[str] = None):
        self.n, self.fps, self.shape = int(n_frames), float(fps), tuple(shape[:2])
        self.flow, self.flow_why, self.embedder, self.embedder_why = flow, flow_why, embedder, embedder_why
        # the interpolator slot: a network with ``midpoints`` (AMT-S), or midpoints warped along a flow model
        # (FlowMidpoint's, or this stream's own flow when none is given)
        if interp is FLOW_MIDPOINT:
            interp, interp_why = flow, flow_why
        self.interp_net = interp if hasattr(interp, "midpoints") else None
        self.interp_flow = None if interp is None or self.interp_net is not None else getattr(interp, "flow_model",
                                                                                              interp)
        self.interp_why = interp_why
        self.tri: list[np.ndarray] = []            # native frames from the last even triple start (<= 2 carried)
        self.native_static_maes: list[float] = []  # flickering: MAE of each static consecutive native pair
        self.native_pairs = self.native_judged = self.native_over = 0   # over: pairs above the static threshold
        self.native_mae_sum = 0.0                  # every consecutive native pair (VBench's unfiltered formula)
        self.first_native: Optional[np.ndarray] = None   # VBench's per-video filter also flows first <-> last
        self.native_todo: list[tuple] = []         # (j, frame j, frame j + 1, MAE): this chunk's pairs to flow
        self.analysis = set(metrics.analysis_indices(self.n, self.fps))
        self.n_analysis = len(self.analysis)
        self.carry: list[np.ndarray] = []          # the last two analysis frames (for pairs and skip triples)
        self.carry_idx: list[int] = []             # ... and their native indices
        self.todo: list[tuple[int, np.ndarray]] = []   # analysis frames of this chunk whose flows are not yet done
        self.pos = 0                               # analysis frames seen
        self.mags: dict[int, float] = {}           # mean flow magnitude of native pair (j, j+1), while j is held
        self.flow_counts = {"forward": 0, "backward": 0, "skip": 0, "native": 0, "window": 0, "window_reused": 0}
        self.pairs = self.moving = 0
        self.warp_errs: list[float] = []
        self.interp_errs: list[float] = []
        self.last_emb: Optional[np.ndarray] = None
        self.cosines: list[float] = []
        self.detector, self.stamp = _scene_detector(self.fps)
        self.ring: deque = deque(maxlen=RING_FRAMES)
        self.cuts: list[int] = []
        self.pending: list[tuple[int, int, int]] = []   # (t, a, b) windows waiting for frame b
        self.windows: list[dict] = []
        self.window_scores: list[float] = []
        self.dropped: list[int] = []                    # cuts reported after their window left the ring
        self.prev_native: Optional[np.ndarray] = None
        self.abrupt = (-1.0, None)                      # (largest adjacent MAE, its window record)
        self.held_peak = 0                              # frames held by this reducer at once (tests pin it)

    # ------------------------------------------------------------------ feeding
    def push(self, indices: list[int], frames: np.ndarray) -> None:
        chunk_analysis = []   # this chunk's analysis frames: embedded together after the loop
        triples = []          # native triples completed in this chunk (motion smoothness)
        for i, f in zip(indices, frames):
            i = int(i)
            f = np.array(f)  # own copy: a view would keep its whole decoded chunk alive while in the ring
            self.ring.append((i, f))
            for c in self.detector.process_frame(self.stamp(i), cv2.cvtColor(f, cv2.COLOR_RGB2BGR)):
                self._cut(int(getattr(c, "frame_num", c)))
            if self.first_native is None:
                self.first_native = f
            self.tri.append(f)
            if len(self.tri) == 3:
                triples.append(tuple(self.tri))
                self.tri = self.tri[2:]
            if self.prev_native is not None:
                d = metrics.pair_mae(self.prev_native, f)
                self.native_pairs += 1
                self.native_mae_sum += d
                if self.flow is not None and not (i in self.analysis and i - 1 in self.analysis):
                    self.native_todo.append((i - 1, self.prev_native, f, d))
                if d > self.abrupt[0]:       # the most abrupt pair so far: its window, kept until complete
                    a, b = metrics.window_bounds(i, self.n)
                    self.abrupt = (d, {"t": i, "a": a, "b": b, "frames": {j: x for j, x in self.ring if j >= a},
                                       "mags": {j: m for j, m in self.mags.items() if a <= j < b}})
            rec = self.abrupt[1]
            if rec is not None and rec["a"] <= i <= rec["b"]:
                rec["frames"][i] = f
            self.prev_native = f
            if i in self.analysis:
                chunk_analysis.append(f)
                self.todo.append((i, f))
            self._complete(i)
        self.held_peak = max(self.held_peak, len(self.ring) + len(chunk_analysis) + len(self.carry)
                             + (len(self.abrupt[1]["frames"]) if self.abrupt[1] else 0) + len(self.tri) + 1)
        if self.todo:
            self._flows()
        if triples:
            self._smoothness(triples)
        self._native_flows()
        if chunk_analysis:
            self._embed(chunk_analysis)
        lo = self.ring[0][0] if self.ring else 0   # a window only reads pairs whose frames the ring holds
        self.mags = {j: m for j, m in self.mags.items() if j >= lo}

    def _cut(self, t: int) -> None:
        if 0 < t < self.n and t not in self.cuts:
            self.cuts.append(t)
            a, b = metrics.window_bounds(t, self.n)
            self.pending.append((t, a, b))

    def _complete(self, i: int) -> None:
        still = []
        for t, a, b in self.pending:
            if b > i:
                still.append((t, a, b))
                continue
            held = {j: x for j, x in self.ring}
            if all(j in held for j in range(a, b + 1)):
                if self.todo and self.flow is not None and self.embedder is not None and any(
                        j in self.analysis and j + 1 in self.analysis and j + 1 >= self.todo[0][0]
                        for j in range(a, b)):
                    self._flows()   # the window's pairs that are analysis pairs: their flows first, then shared
                if self.native_todo and self.embedder is not None:
                    self._native_flows()   # likewise the native pairs flickering flows anyway
                self._score_window(t, a, b, [held[j] for j in range(a, b + 1)], self.mags)
            else:
                self.dropped.append(t)
        self.pending = still

    def _keep_mag(self, j: int, m: float) -> None:
        self.mags[j] = m
        rec = self.abrupt[1]
        if rec is not None and rec["a"] <= j < rec["b"]:
            rec["mags"][j] = m

    def _score_window(self, t: int, a: int, b: int, window: list[np.ndarray], known: dict) -> None:
        """Score the window [a, b]; a pair's flow is computed only when ``known`` has no magnitude for it."""
        if self.flow is None or self.embedder is None:
            return
        need = [j for j in range(a, b) if j not in known]
        flows = self.flow.flow([(window[j - a], window[j - a + 1]) for j in need]) if need else []
        self.flow_counts["window"] += len(need)
        self.flow_counts["window_reused"] += (b - a) - len(need)
        for j, f in zip(need, flows):
            self._keep_mag(j, metrics.mean_magnitude(f))
        mags = [known[j] for j in range(a, b)]   # _keep_mag filled what was missing
        s, d = metrics.transition_window_score_mags(window, embed_unique(self.embedder, window), mags)
        self.windows.append({"t": t, "window": [a, b], "score": round(s, 5), **d})
        self.window_scores.append(s)

    def _flows(self) -> None:
        """The flow metrics of the analysis frames not yet done (``todo``) with the two carried before them."""
        idx, fresh = [i for i, _ in self.todo], [f for _, f in self.todo]
        self.todo = []
        seq, sidx = self.carry + fresh, self.carry_idx + idx
        start = self.pos - len(self.carry)        # analysis position of seq[0]
        first_new = len(self.carry)
        if self.flow is not None:
            pairs = [(j - 1, j) for j in range(max(1, first_new), len(seq))]
            asked = [(seq[a], seq[b]) for a, b in pairs] + [(seq[b], seq[a]) for a, b in pairs]
            got = self.flow.flow(asked) if asked else []
            self.flow_counts["forward"] += len(pairs)
            self.flow_counts["backward"] += len(pairs)
            fwd, bwd = got[:len(pairs)], got[len(pairs):]
            for (a, b), f, g in zip(pairs, fwd, bwd):
                self.pairs += 1
                self.moving += int(metrics.is_moving(f, self.shape))
                if sidx[b] == sidx[a] + 1:   # a consecutive native pair: flickering's static rule reads this flow
                    self._native_static(f, metrics.pair_mae(seq[a], seq[b]))
                e = metrics.warp_pair_error(seq[a], seq[b], f, g)
                if e is not None:
                    self.warp_errs.append(e)
                if sidx[b] == sidx[a] + 1 and self.embedder is not None:   # a transition window may read it
                    self._keep_mag(sidx[a], metrics.mean_magnitude(f))
        self.pos += len(fresh)
        self.carry, self.carry_idx = seq[-2:], sidx[-2:]

    def _native_flows(self) -> None:
        """Forward flows of the pending consecutive native pairs (flickering's static rule), one batch; a
        transition window reads their mean magnitudes instead of computing them again."""
        todo, self.native_todo = self.native_todo, []
        if not todo:
            return
        got = self.flow.flow([(a, b) for _, a, b, _ in todo])
        self.flow_counts["native"] += len(todo)
        for (j, _, _, d), fl in zip(todo, got):
            self._native_static(fl, d)
            if self.embedder is not None:
                self._keep_mag(j, metrics.mean_magnitude(fl))

    def _native_static(self, flow: np.ndarray, mae: float) -> None:
        """One consecutive native pair under VBench's static rule (top-2 % flow magnitude against 3 min(H,W)/256):
        a static pair's MAE counts for flickering; the count above the threshold feeds VBench's per-video filter."""
        top = metrics.top_mean(flow, constants.STATIC_TOP_FRACTION)
        thr = constants.STATIC_FLOW_PER_256 * min(self.shape) / 256.0
        self.native_judged += 1
        self.native_over += int(top > thr)
        if top < thr:
            self.native_static_maes.append(mae)

    def _smoothness(self, triples: list[tuple]) -> None:
        """Native triples (p, m, n): m rebuilt from p and n by the interpolator. AMT-S returns VBench's uint8
        midpoint (error taken on uint8 frames, as VBench); offline the midpoint is warped along both flows."""
        if self.interp_net is not None:
            mids = self.interp_net.midpoints([(p, n) for p, _, n in triples])
            self.interp_errs += [float(np.mean(np.abs(x.astype(np.int16) - m.astype(np.int16))))
                                 for x, (_, m, _) in zip(mids, triples)]
        elif self.interp_flow is not None:
            got = self.interp_flow.flow([q for p, _, n in triples for q in ((p, n), (n, p))])
            self.flow_counts["skip"] += len(got)
            self.interp_errs += [metrics.interpolation_error(p, m, n, got[2 * k], got[2 * k + 1])
                                 for k, (p, m, n) in enumerate(triples)]

    def _vbench_static_video(self) -> Optional[bool]:
        """VBench's per-video static filter (``vbench/cli/static_filter.py`` ``check_static``): static unless more
        than round(2 * frames / 16) consecutive pairs exceed the threshold, or either first <-> last pair exceeds
        threshold * count * 2. None when not every native pair was judged (no flow)."""
        if self.flow is None or self.native_judged != self.native_pairs or self.first_native is None:
            return None
        count_num = round(2 * (self.n / 16.0))
        if self.native_over > count_num:
            return False
        thr = constants.STATIC_FLOW_PER_256 * min(self.shape) / 256.0
        ends = self.flow.flow([(self.first_native, self.prev_native), (self.prev_native, self.first_native)])
        self.flow_counts["native"] += 2
        return all(metrics.top_mean(f, constants.STATIC_TOP_FRACTION) <= thr * count_num * 2 for f in ends)

    def _embed(self, fresh: list[np.ndarray]) -> None:
        """Consecutive feature cosines of this chunk's analysis frames (one embedding batch per chunk)."""
        if self.embedder is not None:
            e = metrics.l2n(embed_unique(self.embedder, fresh))
            if self.last_emb is not None:
                e = np.concatenate([self.last_emb[None], e])
            self.cosines += [float(max(0.0, x)) for x in np.sum(e[1:] * e[:-1], axis=1)]
            self.last_emb = e[-1]

    def flows_per_pair(self) -> dict:
        """Flow fields computed in this pass, by use, and per analysis pair."""
        c = dict(self.flow_counts)
        computed = c["forward"] + c["backward"] + c["skip"] + c["native"] + c["window"]
        return {**c, "computed": computed, "pairs": self.pairs,
                "per_pair": round(computed / self.pairs, 4) if self.pairs else None}

    # ------------------------------------------------------------------ results
    def finish(self) -> list:
        """The six values (MetricRecord), after the last chunk."""
        for c in self.detector.post_process(self.stamp(max(self.n - 1, 0))):
            self._cut(int(getattr(c, "frame_num", c)))
        self._complete(self.n)
        out = []
        flow_ids = ("dynamic_degree", "warping_error")
        if self.flow is None:
            out += [none(m, self.flow_why or "flow slot unavailable") for m in flow_ids]
        elif self.n_analysis < 2:
            out += [none(m, "fewer than 2 analysis frames") for m in flow_ids]
        else:
            dd, d = metrics.dynamic_verdict(self.moving, self.pairs)
            out.append(value("dynamic_degree", dd, 1, detail=d))
            we, neglog, d = metrics.warping_from_errors(self.warp_errs)
            out.append(value("warping_error", we, d["pairs"], detail={**d, "neg_log_we": neglog})
                       if we is not None else none("warping_error", "no pair with non-occluded pixels"))
        ms = metrics.mae_score(self.interp_errs)
        if self.interp_net is None and self.interp_flow is None:
            out.insert(1, none("motion_smoothness", self.interp_why or "interpolator slot unavailable"))
        else:
            out.insert(1, value("motion_smoothness", ms, len(self.interp_errs)) if ms is not None else
                       none("motion_smoothness", "fewer than 3 native frames"))
        if self.flow is None:
            out.append(none("temporal_flickering", self.flow_why or "flow slot unavailable"))
        else:
            tf = metrics.mae_score(self.native_static_maes)
            unfiltered = (metrics.mae_score([self.native_mae_sum / self.native_pairs]) if self.native_pairs
                          else None)
            detail = {"static_pairs": len(self.native_static_maes), "pairs": self.native_pairs,
                      "vbench_static_video": self._vbench_static_video(), "all_pairs": unfiltered}
            out.append(value("temporal_flickering", tf, len(self.native_static_maes), detail=detail)
                       if tf is not None else none("temporal_flickering",
                                                   "no static native frame pair (VBench static rule)"))
        if self.embedder is None:
            out.append(none("semantic_consistency", self.embedder_why or "siglip2 slot unavailable"))
        elif not self.cosines:
            out.append(none("semantic_consistency", "fewer than 2 analysis frames"))
        else:
            out.append(value("semantic_consistency", 100.0 * float(np.mean(self.cosines)), len(self.cosines)))
        out.append(self._transition_value())
        return out

    def _transition_value(self):
        if self.flow is None or self.embedder is None:
            return none("transition_smoothness", self.flow_why if self.flow is None else self.embedder_why)
        if self.n < 2 * constants.TRANSITION_K + 1:
            return none("transition_smoothness", f"fewer than {2 * constants.TRANSITION_K + 1} frames")
        how = f"PySceneDetect {constants.SCENE_DETECTOR}"
        if not self.cuts:
            rec = self.abrupt[1]
            frames = [rec["frames"].get(j) for j in range(rec["a"], rec["b"] + 1)]
            self._score_window(rec["t"], rec["a"], rec["b"], frames, rec["mags"])
            how = "no transition detected: the most abrupt adjacent pair"
        if not self.windows:
            return none("transition_smoothness", f"no transition window could be scored (dropped: {self.dropped})",
                        failed=True)
        scores = self.window_scores
        return value("transition_smoothness", 100.0 * float(np.mean(scores)), len(scores),
                     detail={"transitions": sorted(self.cuts) or [self.abrupt[1]["t"]], "how": how,
                             "windows": self.windows, "dropped": self.dropped})


class DoverClips:
    """DOVER++ on the < 10 s clips of a streamed video: a clip's frames are held only until its last frame arrives
    (bounded by the clip length, not the video's)."""

    def __init__(self, dover, bounds: list[tuple[int, int]]):
        self.dover, self.bounds, self.scores = dover, list(bounds), []
        self.buf: list[np.ndarray] = []
        self.k = 0

    def push(self, indices: list[int], frames: np.ndarray) -> None:
        for i, f in zip(indices, frames):
            if self.k >= len(self.bounds):
                return
            a, b = self.bounds[self.k]
            if a <= i < b:
                self.buf.append(np.array(f))
            if i == b - 1:
                self.scores.append(float(self.dover.score(np.stack(self.buf))))
                self.buf, self.k = [], self.k + 1
