"""LoCoT2V's frame-level temporal metrics as one streamed pass: flows are computed and reduced per chunk, never all
held, so memory is flat in video length (issue 16).

``TemporalStream.push(indices, frames)`` takes consecutive native frames (a ``VideoSource.chunks`` consumer). Per
chunk it: runs PySceneDetect's ContentDetector on every native frame; keeps a ring of the last few native frames so
that the 2k + 1 frame window around each detected cut (and the fallback "most abrupt pair" window) is scored as soon
as its last frame arrives; and, on the analysis frames (<= 8 fps) of the chunk plus the two carried from the
previous chunk, computes forward, backward and skip flows in one batched call each and reduces them at once to
per-pair numbers (moving / static flags, flicker MAE, warping error, interpolation error) and the frame features to
consecutive cosines. What stays after a chunk: those scalars, two analysis frames, one feature vector, the ring.

Each flow field is computed once per pass. Per analysis pair (a, b): F = a -> b (dynamic degree, flickering's
static rule, warping error's occlusion check) and B = b -> a (warping error); per skip triple (a, m, b) at even
positions a -> b and b -> a (motion smoothness), i.e. one more flow per pair on average; per transition window the
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
from bench_assets.locot2v.values import Value, embed_unique, none

# native frames kept for transition windows: the window itself plus PySceneDetect's reporting delay
RING_FRAMES = 2 * (2 * constants.TRANSITION_K + 1) + constants.SCENE_MIN_LEN_FRAMES


_scene_detector = metrics.scene_detector  # one definition, shared with the whole-clip path


class TemporalStream:
    """Streamed reducer of dynamic degree, motion smoothness, warping error, flickering, semantic consistency and
    transition smoothness (and the shot cuts, for event segmentation). ``flow`` / ``embedder`` may be None: the
    metrics needing them become None with the reason; cuts are found regardless."""

    def __init__(self, n_frames: int, fps: float, shape: tuple[int, int], flow, flow_why: Optional[str], embedder,
                 embedder_why: Optional[str]):
        self.n, self.fps, self.shape = int(n_frames), float(fps), tuple(shape[:2])
        self.flow, self.flow_why, self.embedder, self.embedder_why = flow, flow_why, embedder, embedder_why
        self.analysis = set(metrics.analysis_indices(self.n, self.fps))
        self.n_analysis = len(self.analysis)
        self.carry: list[np.ndarray] = []          # the last two analysis frames (for pairs and skip triples)
        self.carry_idx: list[int] = []             # ... and their native indices
        self.todo: list[tuple[int, np.ndarray]] = []   # analysis frames of this chunk whose flows are not yet done
        self.pos = 0                               # analysis frames seen
        self.mags: dict[int, float] = {}           # mean flow magnitude of native pair (j, j+1), while j is held
        self.flow_counts = {"forward": 0, "backward": 0, "skip": 0, "window": 0, "window_reused": 0}
        self.pairs = self.moving = 0
        self.static_maes: list[float] = []
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
        for i, f in zip(indices, frames):
            i = int(i)
            f = np.array(f)  # own copy: a view would keep its whole decoded chunk alive while in the ring
            self.ring.append((i, f))
            for c in self.detector.process_frame(self.stamp(i), cv2.cvtColor(f, cv2.COLOR_RGB2BGR)):
                self._cut(int(getattr(c, "frame_num", c)))
            if self.prev_native is not None:
                d = metrics.pair_mae(self.prev_native, f)
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
                             + (len(self.abrupt[1]["frames"]) if self.abrupt[1] else 0))
        if self.todo:
            self._flows()
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
            skips = [(j - 2, j) for j in range(max(2, first_new), len(seq)) if (start + j) % 2 == 0]
            asked = [(seq[a], seq[b]) for a, b in pairs] + [(seq[b], seq[a]) for a, b in pairs]
            asked += [p for a, b in skips for p in ((seq[a], seq[b]), (seq[b], seq[a]))]
            got = self.flow.flow(asked) if asked else []
            self.flow_counts["forward"] += len(pairs)
            self.flow_counts["backward"] += len(pairs)
            self.flow_counts["skip"] += 2 * len(skips)
            fwd, bwd, sk = got[:len(pairs)], got[len(pairs):2 * len(pairs)], got[2 * len(pairs):]
            for (a, b), f, g in zip(pairs, fwd, bwd):
                self.pairs += 1
                moving, static = metrics.moving_static(f, self.shape)
                self.moving += int(moving)
                if static:
                    self.static_maes.append(metrics.pair_mae(seq[a], seq[b]))
                e = metrics.warp_pair_error(seq[a], seq[b], f, g)
                if e is not None:
                    self.warp_errs.append(e)
                if sidx[b] == sidx[a] + 1 and self.embedder is not None:   # a transition window may read it
                    self._keep_mag(sidx[a], metrics.mean_magnitude(f))
            for k, (a, b) in enumerate(skips):
                self.interp_errs.append(metrics.interpolation_error(seq[a], seq[a + 1], seq[b], sk[2 * k],
                                                                    sk[2 * k + 1]))
        self.pos += len(fresh)
        self.carry, self.carry_idx = seq[-2:], sidx[-2:]

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
        computed = c["forward"] + c["backward"] + c["skip"] + c["window"]
        return {**c, "computed": computed, "pairs": self.pairs,
                "per_pair": round(computed / self.pairs, 4) if self.pairs else None}

    # ------------------------------------------------------------------ results
    def finish(self) -> list:
        """The six Values (pipeline.Value), after the last chunk."""
        for c in self.detector.post_process(self.stamp(max(self.n - 1, 0))):
            self._cut(int(getattr(c, "frame_num", c)))
        self._complete(self.n)
        out = []
        flow_ids = ("dynamic_degree", "motion_smoothness", "warping_error", "temporal_flickering")
        if self.flow is None:
            out += [none(m, self.flow_why or "flow slot unavailable") for m in flow_ids]
        elif self.n_analysis < 2:
            out += [none(m, "fewer than 2 analysis frames") for m in flow_ids]
        else:
            dd, d = metrics.dynamic_verdict(self.moving, self.pairs)
            out.append(Value("dynamic_degree", dd, 1, detail=d))
            ms = metrics.mae_score(self.interp_errs)
            out.append(Value("motion_smoothness", ms, len(self.interp_errs)) if ms is not None else
                       none("motion_smoothness", "fewer than 3 analysis frames"))
            we, neglog, d = metrics.warping_from_errors(self.warp_errs)
            out.append(Value("warping_error", we, d["pairs"], detail={**d, "neg_log_we": neglog})
                       if we is not None else none("warping_error", "no pair with non-occluded pixels"))
            tf = metrics.mae_score(self.static_maes)
            out.append(Value("temporal_flickering", tf, len(self.static_maes),
                             detail={"static_pairs": len(self.static_maes), "pairs": self.pairs})
                       if tf is not None else none("temporal_flickering", "no static frame pair (VBench static rule)"))
        if self.embedder is None:
            out.append(none("semantic_consistency", self.embedder_why or "siglip2 slot unavailable"))
        elif not self.cosines:
            out.append(none("semantic_consistency", "fewer than 2 analysis frames"))
        else:
            out.append(Value("semantic_consistency", 100.0 * float(np.mean(self.cosines)), len(self.cosines)))
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
        return Value("transition_smoothness", 100.0 * float(np.mean(scores)), len(scores),
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
