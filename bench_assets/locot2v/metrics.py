"""LoCoT2V-Bench metric math (spec decisions): numpy / OpenCV / scipy in, numbers out. No Dagster, no files.

Every score is in % (the paper's scale). A value that cannot be computed is None; the caller records why.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import cv2
import numpy as np
from scipy.optimize import linear_sum_assignment
from skimage.metrics import structural_similarity

from bench_assets.core import kernels
from bench_assets.core.kernels import l2_normalise as l2n
from bench_assets.core.kernels import midpoint_error as interpolation_error  # the in-place form, same bits
from bench_assets.locot2v import constants
from bench_assets.locot2v.constants import DIMENSIONS, EVENT_FIELDS, HERD_DIMENSIONS  # noqa: F401  (re-exported)
from bench_resources.models.flow import flow_magnitude
from bench_resources.models.slots_locot2v import sentence_chunks  # noqa: F401  (re-exported; lives with its slot)

FlowFn = Callable[[list[tuple[np.ndarray, np.ndarray]]], list[np.ndarray]]
EmbedFn = Callable[[list[np.ndarray]], np.ndarray]


def cos100(x: float) -> float:
    """Cosine similarity as a percentage, clipped at 0 (unrelated texts are 0, not 50)."""
    return float(max(0.0, float(x)) * 100.0)


# ----------------------------------------------------------------------------------------- text embeddings

def text_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Clipped cosine of two (normalised) text embeddings, in [0, 1]."""
    return float(max(0.0, float(l2n(a) @ l2n(b))))


# ----------------------------------------------------------------------------------------- event alignment

def inversions(order: Sequence[int]) -> int:
    return sum(1 for i in range(len(order)) for j in range(i + 1, len(order)) if order[i] > order[j])


def event_alignment(sem: np.ndarray, field_sims: Sequence[np.ndarray]) -> tuple[Optional[float], dict]:
    """EA (eq. 1) from the [n_video_events, n_prompt_events] description similarity matrix (clipped cosines in
    [0,1]) and one matrix per field (subject, setting, action, camera motion).

    Maximum-weight bipartite matching (Hungarian) on ``sem``; a pair of weight 0 is not a match. Per matched pair
    S_sem * mean(field similarities); EA = (1 - I / I_max) * mean over the N matched pairs, I = inversions of the
    prompt-event order read in video order, I_max = N (N - 1) / 2. N = 0 -> None; N = 1 -> order factor 1."""
    sem = np.asarray(sem, float)
    detail = {"video_events": int(sem.shape[0]) if sem.ndim == 2 else 0,
              "prompt_events": int(sem.shape[1]) if sem.ndim == 2 else 0, "matched": 0}
    if sem.ndim != 2 or sem.size == 0:
        return None, detail
    rows, cols = linear_sum_assignment(-sem)
    keep = [(int(r), int(c)) for r, c in zip(rows, cols) if sem[r, c] > 0]
    n = len(keep)
    detail["matched"] = n
    if n == 0:
        return None, detail
    keep.sort()  # video order
    per_pair = [float(sem[r, c] * np.mean([float(f[r, c]) for f in field_sims])) for r, c in keep]
    order = [c for _, c in keep]
    inv = inversions(order)
    factor = 1.0 if n == 1 else 1.0 - inv / (n * (n - 1) / 2)
    detail.update(inversions=inv, order_factor=factor, pairs=[[r, c] for r, c in keep],
                  pair_scores=[round(p, 6) for p in per_pair])
    return float(factor * np.mean(per_pair) * 100.0), detail


def field_similarity(a: np.ndarray, b: np.ndarray, a_text: str, b_text: str) -> float:
    """Similarity of one field: two empty fields agree (1), one empty field disagrees (0), else clipped cosine."""
    ea, eb = not a_text.strip(), not b_text.strip()
    if ea or eb:
        return 1.0 if ea and eb else 0.0
    return text_similarity(a, b)


def event_matrices(video_events: Sequence[dict], prompt_events: Sequence[dict],
                   embed_text: Callable[[list[str]], np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """(description similarity, [subject, setting, action, camera] similarities), each [n_video, n_prompt]."""
    nv, npr = len(video_events), len(prompt_events)
    if nv == 0 or npr == 0:
        return np.zeros((nv, npr)), [np.zeros((nv, npr)) for _ in EVENT_FIELDS]
    keys = ("event", *EVENT_FIELDS)
    texts = [str(e.get(k, "")) for k in keys for e in (*video_events, *prompt_events)]
    emb = l2n(embed_text(texts))
    block = nv + npr
    mats = []
    for i, k in enumerate(keys):
        e = emb[i * block:(i + 1) * block]
        t = texts[i * block:(i + 1) * block]
        m = np.zeros((nv, npr))
        for a in range(nv):
            for b in range(npr):
                m[a, b] = field_similarity(e[a], e[nv + b], t[a], t[nv + b])
        mats.append(m)
    return mats[0], mats[1:]


# ----------------------------------------------------------------------------------------- judged dimensions

def herd_score(answers: Sequence[tuple[str, str]]) -> tuple[Optional[float], int]:
    """(score, valid answers) from (answer, polarity) pairs: polarity-consistent answers ('yes' to a positive,
    'no' to a negative question) over yes + no answers, in %; 'unclear' is excluded; no valid answer -> None."""
    valid = [(a.lower(), p) for a, p in answers if a.lower() in ("yes", "no")]
    if not valid:
        return None, 0
    good = sum((a == "yes") == (p == "positive") for a, p in valid)
    return 100.0 * good / len(valid), len(valid)


def human_action_score(occurs: Sequence[bool], smooth: Sequence[Sequence[bool]]) -> Optional[float]:
    """Share of 'Yes' over occurrence questions x share of 'Yes' over the smoothness questions of the actions that
    occur (no action occurs: the smoothness share is 0), in %; no action in the prompt -> None."""
    if not len(occurs):
        return None
    occ = float(np.mean([bool(o) for o in occurs]))
    sm = [bool(s) for o, qs in zip(occurs, smooth) if o for s in qs]
    return 100.0 * occ * (float(np.mean(sm)) if sm else 0.0)


def clarity_score(rounds: Sequence[float]) -> Optional[float]:
    """s_d = mean over rounds of the 0-4 score / 4, in % (eq. 2 per dimension)."""
    return None if not len(rounds) else float(np.mean(rounds) / 4.0 * 100.0)


# ----------------------------------------------------------------------------------------- static quality

def rrub(scores: Sequence[float], top: float = constants.RRUB_TOP) -> float:
    """Relative reference upper bound: mean of the top 10 % of aesthetic scores over a reference image set."""
    s = np.sort(np.asarray(list(scores), float))[::-1]
    if not len(s):
        raise ValueError("RR-UB needs at least one reference score")
    k = max(1, int(np.ceil(top * len(s))))
    return float(s[:k].mean())


def aesthetic_quality(scores: Sequence[float], bound: float) -> Optional[float]:
    """Mean frame score / RR-UB, capped at 1, in %."""
    if not len(scores):
        return None
    return float(min(1.0, float(np.mean(scores)) / bound) * 100.0)


def clip_bounds(n_frames: int, fps: float, max_seconds: float = constants.TQ_MAX_CLIP_SECONDS) -> list[tuple[int, int]]:
    """Split a video into the fewest equal clips shorter than ``max_seconds`` ([start, end) frame ranges)."""
    if n_frames <= 0:
        return []
    duration = n_frames / (fps or 1.0)
    n = int(np.floor(duration / max_seconds)) + 1
    edges = np.linspace(0, n_frames, n + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges, edges[1:]) if b > a]


# ----------------------------------------------------------------------------------------- temporal

def analysis_indices(n_frames: int, fps: float, target: float = constants.ANALYSIS_FPS) -> list[int]:
    """Every max(1, round(fps / target))-th frame: VBench's dynamic-degree sampling, which LoCoT2V adopts directly
    (at 30 fps frames 0, 4, 8, 12; the fractional step 3.75 gave 0, 4, 8, 11; at 10 fps every frame)."""
    from bench_assets.core.media import fps_indices
    return fps_indices(n_frames, fps or target, target, whole_step=True)


def top_mean(flow: np.ndarray, fraction: float, mag: Optional[np.ndarray] = None) -> float:
    """Mean of the top ``fraction`` of flow magnitudes (``mag``: ``flow_magnitude(flow)`` when already computed)."""
    mag = flow_magnitude(flow) if mag is None else mag
    k = max(1, int(fraction * mag.size))   # VBench: cut_index = int(h * w * fraction), truncated
    return float(np.mean(np.partition(mag, -k)[-k:]))


def is_moving(flow: np.ndarray, shape: tuple[int, int], mag: Optional[np.ndarray] = None) -> bool:
    """VBench: the mean of a pair's top-5 % flow magnitudes exceeds 6 * min(H, W) / 256."""
    return (top_mean(flow, constants.DYNAMIC_TOP_FRACTION, mag)
            > constants.DYNAMIC_THRESHOLD_PER_256 * min(shape) / 256.0)


def is_static(flow: np.ndarray, shape: tuple[int, int], mag: Optional[np.ndarray] = None) -> bool:
    """VBench's static rule: top-2 % flow magnitude below 3 * min(H, W) / 256."""
    return top_mean(flow, constants.STATIC_TOP_FRACTION, mag) < constants.STATIC_FLOW_PER_256 * min(shape) / 256.0


def moving_static(flow: np.ndarray, shape: tuple[int, int]) -> tuple[bool, bool]:
    """(``is_moving``, ``is_static``) of one pair from one magnitude computation (the two rules read the same
    magnitudes; computing them twice was a tenth of a 720p pair's non-flow time)."""
    mag = flow_magnitude(flow)
    return is_moving(flow, shape, mag), is_static(flow, shape, mag)


def dynamic_verdict(moving: int, pairs: int) -> tuple[Optional[float], dict]:
    """The video is dynamic (100) when at least round(4 * frames / 16) of its pairs move, else 0; no pair -> None.
    As VBench's ``check_move``: the count is over the sampled FRAMES (pairs + 1), Python's round (half to even),
    and a need of 0 (2 frames) makes any video with a pair dynamic."""
    if not pairs:
        return None, {"pairs": 0}
    need = round(constants.DYNAMIC_COUNT_PER_16 * (pairs + 1) / 16.0)
    return (100.0 if moving >= need else 0.0), {"pairs": int(pairs), "moving": int(moving), "needed": int(need)}


def dynamic_degree(flows: Sequence[np.ndarray], shape: tuple[int, int]) -> tuple[Optional[float], dict]:
    """VBench rule on consecutive ~8 fps pairs (``is_moving`` per pair, ``dynamic_verdict`` over the video)."""
    return dynamic_verdict(sum(is_moving(f, shape) for f in flows), len(flows))


def static_pairs(flows: Sequence[np.ndarray], shape: tuple[int, int]) -> list[int]:
    """Pairs whose top-2 % flow magnitude is below 3 * min(H, W) / 256 (VBench's static rule)."""
    return [i for i, f in enumerate(flows) if is_static(f, shape)]


def temporal_flickering(frames: Sequence[np.ndarray], pairs: Sequence[int]) -> Optional[float]:
    """100 * (255 - MAE) / 255 over the static pairs (i, i + 1); None without one."""
    if not len(pairs):
        return None
    return mae_score([pair_mae(frames[i], frames[i + 1]) for i in pairs])


def pair_mae(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute pixel difference (0-255)."""
    return float(np.abs(b.astype(np.float32) - a.astype(np.float32)).mean())


def warp_pair_error(prev: np.ndarray, cur: np.ndarray, fwd: np.ndarray, bwd: np.ndarray,
                    tol: float = constants.WARP_FB_TOLERANCE_PX) -> Optional[float]:
    """One pair (t, t+1): the previous frame warped onto the current one (sampled at x + B(x), B = flow t+1 -> t),
    mean |difference| in [0,1] over non-occluded pixels (|B(x) + F(x + B(x))| < tol, F = flow t -> t+1); None when
    every pixel is occluded. The forward flow and the frame are sampled through the same maps (built once)."""
    f, b = fwd.astype(np.float32), bwd.astype(np.float32)
    maps = kernels.warp_map(b)
    ok = np.linalg.norm(b + kernels.remap(f, maps), axis=-1) < tol
    if not ok.any():
        return None
    warped = kernels.remap(prev.astype(np.float32), maps)
    diff = np.abs(warped - cur.astype(np.float32)).mean(axis=-1) / 255.0
    return float(diff[ok].mean())


def warping_from_errors(errs: Sequence[float]) -> tuple[Optional[float], Optional[float], dict]:
    """(100 * (1 - WE), -log WE, detail) from the per-pair errors; WE = their mean."""
    if not len(errs):
        return None, None, {"pairs": 0}
    we = float(np.mean(errs))
    return 100.0 * (1.0 - we), float(-np.log(max(we, 1e-12))), {"pairs": len(errs), "we": we}


def warping_error(frames: Sequence[np.ndarray], fwd: Sequence[np.ndarray], bwd: Sequence[np.ndarray],
                  tol: float = constants.WARP_FB_TOLERANCE_PX) -> tuple[Optional[float], Optional[float], dict]:
    """(100 * (1 - WE), -log WE, detail) over consecutive pairs (``warp_pair_error`` each); WE = mean over pairs."""
    errs = [warp_pair_error(frames[i], frames[i + 1], fwd[i], bwd[i], tol) for i in range(len(frames) - 1)]
    return warping_from_errors([e for e in errs if e is not None])


def mae_score(errs: Sequence[float]) -> Optional[float]:
    """100 * (255 - mean MAE) / 255 (VBench's scale for flickering and motion smoothness); None without errors."""
    return kernels.smoothness_score(errs, 100.0)


def motion_smoothness(frames: Sequence[np.ndarray], skip_flows: Sequence[tuple[np.ndarray, np.ndarray]]
                      ) -> Optional[float]:
    """VBench's protocol with a flow interpolator: every odd frame rebuilt from its two neighbours
    (``skip_flows[j]`` = flows f[2j] -> f[2j+2] and back); 100 * (255 - MAE) / 255."""
    return mae_score([interpolation_error(frames[2 * j], frames[2 * j + 1], frames[2 * j + 2], fab, fba)
                      for j, (fab, fba) in enumerate(skip_flows)])


def semantic_consistency(embeddings: np.ndarray) -> Optional[float]:
    """Mean clipped cosine of consecutive frames' image features, in %."""
    e = l2n(embeddings)
    if len(e) < 2:
        return None
    return float(np.mean(np.clip(np.sum(e[1:] * e[:-1], axis=1), 0, None)) * 100.0)


def motion_consistency(magnitude: float, median_magnitude: float) -> float:
    """1 / (1 + |m - median| / max(median, floor)): how far a pair's motion departs from the window's typical
    motion, relative to it (a 1 px floor keeps a still window's sub-pixel noise from counting)."""
    return 1.0 / (1.0 + abs(magnitude - median_magnitude) / max(median_magnitude, constants.MOTION_FLOOR_PX))


def pair_similarity(a: np.ndarray, b: np.ndarray, ea: np.ndarray, eb: np.ndarray, magnitude: float,
                    median_magnitude: float) -> tuple[float, dict]:
    """s_j = 0.25 (1 - MAE) + 0.25 SSIM + 0.25 cos(emb) + 0.25 motion consistency, each term in [0, 1]; motion
    consistency = 1 / (1 + |m_j - median m| / max(median m, 1 px)), m = mean flow magnitude of the pair."""
    mae = float(np.abs(a.astype(np.float32) - b.astype(np.float32)).mean() / 255.0)
    ga, gb = cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY)
    win = min(7, min(ga.shape) // 2 * 2 - 1) if min(ga.shape) < 7 else 7
    ssim = float(np.clip(structural_similarity(ga, gb, data_range=255, win_size=max(3, win)), 0, 1))
    cos = float(np.clip(l2n(ea) @ l2n(eb), 0, 1))
    mc = motion_consistency(magnitude, median_magnitude)
    w = constants.TRANSITION_WEIGHTS
    s = w[0] * (1.0 - mae) + w[1] * ssim + w[2] * cos + w[3] * mc
    return float(s), {"mae": mae, "ssim": ssim, "cos": cos, "mc": mc}


def abruptness(s: Sequence[float]) -> float:
    """A = Var(s^) b / (Var(s^) b + c) with s^ = s / sum(s), b = (2k)^2, c = 0.01 (Var b = squared coefficient of
    variation of s when len(s) = 2k)."""
    s = np.asarray(s, float)
    sh = s / max(float(s.sum()), 1e-12)
    vb = float(np.var(sh)) * constants.TRANSITION_B
    return vb / (vb + constants.TRANSITION_C)


def mean_magnitude(flow: np.ndarray) -> float:
    """Mean flow magnitude of a pair (px): all a transition window reads of a flow field."""
    return float(np.linalg.norm(flow, axis=-1).mean())


def transition_window_score(frames: Sequence[np.ndarray], embeddings: np.ndarray,
                            flows: Sequence[np.ndarray]) -> tuple[float, dict]:
    """One transition window (2k + 1 frames, 2k adjacent pairs, ``flows[j]`` = flow j -> j+1): 1 - A."""
    return transition_window_score_mags(frames, embeddings, [mean_magnitude(f) for f in flows])


def transition_window_score_mags(frames: Sequence[np.ndarray], embeddings: np.ndarray,
                                 mags: Sequence[float]) -> tuple[float, dict]:
    """``transition_window_score`` from the pairs' mean flow magnitudes (``mean_magnitude``), so a pair whose flow
    another metric already computed is not computed again."""
    mags = [float(m) for m in mags]
    med = float(np.median(mags))
    s, parts = [], []
    for j in range(len(frames) - 1):
        v, d = pair_similarity(frames[j], frames[j + 1], embeddings[j], embeddings[j + 1], mags[j], med)
        s.append(v)
        parts.append(d)
    a = abruptness(s)
    return 1.0 - a, {"s": [round(x, 5) for x in s], "abruptness": a}


def window_bounds(t: int, n_frames: int, k: int = constants.TRANSITION_K) -> tuple[int, int]:
    """[start, end] frame indices of the 2k + 1 frame window around transition frame t, kept inside the video."""
    start = min(max(0, t - k), max(0, n_frames - (2 * k + 1)))
    return start, min(n_frames - 1, start + 2 * k)


def most_abrupt_pair(frames: Sequence[np.ndarray]) -> int:
    """The first frame of the adjacent pair with the largest mean absolute difference."""
    d = [float(np.abs(frames[i + 1].astype(np.float32) - frames[i].astype(np.float32)).mean())
         for i in range(len(frames) - 1)]
    return int(np.argmax(d))


def scene_detector(fps: float):
    """PySceneDetect's ContentDetector with the spec's constants and the frame stamp its version expects
    (0.7: frame timecodes, 0.6: frame numbers)."""
    from scenedetect.detectors import ContentDetector
    rate = float(fps or constants.ANALYSIS_FPS)
    try:
        from scenedetect.common import FrameTimecode  # 0.7

        def stamp(i: int):
            return FrameTimecode(i, fps=rate)
    except ImportError:  # 0.6: process_frame takes the frame number
        def stamp(i: int):
            return i
    return ContentDetector(threshold=constants.SCENE_THRESHOLD, min_scene_len=constants.SCENE_MIN_LEN_FRAMES), stamp


def detect_transitions(frames: Sequence[np.ndarray], fps: float) -> list[int]:
    """PySceneDetect over the decoded RGB frames (no second decode): the first frame of each new scene."""
    det, stamp = scene_detector(fps)
    cuts = []
    for i, f in enumerate(frames):
        cuts += det.process_frame(stamp(i), cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    cuts += det.post_process(stamp(len(frames) - 1))
    nums = {int(getattr(c, "frame_num", c)) for c in cuts}
    return sorted(n for n in nums if 0 < n < len(frames))


# ----------------------------------------------------------------------------------------- event consistency

def event_ranges(n_frames: int, n_events: int) -> list[tuple[int, int]]:
    """Uniform temporal segmentation into the prompt's events: [start, end) per event."""
    edges = np.linspace(0, n_frames, n_events + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges, edges[1:])]


def event_ranges_at_cuts(n_frames: int, n_events: int, cuts: Sequence[int]) -> tuple[list[tuple[int, int]], list]:
    """Event segmentation at detected shot boundaries where they exist, else the uniform split.

    Each of the n_events - 1 uniform boundaries moves to a detected cut, the cuts assigned to boundaries by a
    minimum-distance matching (Hungarian on |boundary - cut|) within half an event length; a boundary with no cut
    in reach stays where the uniform split put it. So a video with exactly one cut per event change is split at its
    cuts, extra cuts (shots inside an event) are left inside events, and a video without cuts splits uniformly.
    Returns ([start, end) per event, per boundary 'cut' | 'uniform')."""
    uniform = [b for _, b in event_ranges(n_frames, n_events)[:-1]]
    cuts = sorted({int(c) for c in cuts if 0 < int(c) < n_frames})
    how = ["uniform"] * len(uniform)
    bounds = list(uniform)
    if cuts and len(cuts) == len(uniform):  # one shot per event: the shots are the events
        bounds, how = list(cuts), ["cut"] * len(cuts)
    elif uniform and cuts:
        reach = n_frames / max(n_events, 1) / 2.0
        cost = np.abs(np.subtract.outer(np.asarray(uniform, float), np.asarray(cuts, float)))
        rows, cols = linear_sum_assignment(np.where(cost <= reach, cost, 1e9))
        for r, c in zip(rows, cols):
            if cost[r, c] <= reach:
                bounds[r], how[r] = cuts[c], "cut"
    order = np.argsort(bounds, kind="stable")  # a matching may cross; boundaries stay in time order
    bounds, how = [bounds[i] for i in order], [how[i] for i in order]
    edges = [0, *bounds, n_frames]
    if any(b <= a for a, b in zip(edges, edges[1:])):  # a degenerate matching: the uniform split is safe
        return event_ranges(n_frames, n_events), ["uniform"] * len(uniform)
    return [(int(a), int(b)) for a, b in zip(edges, edges[1:])], how


def intra_event_consistency(per_event: Sequence[dict[str, np.ndarray]], weights: Sequence[float]
                            ) -> tuple[Optional[float], dict]:
    """B.7 eqs. 10-12: per event and element, mean cosine of consecutive appearances (>= 2 needed); event score =
    mean over its elements; video = event-length-weighted mean over events with a score. In %."""
    vals, ws, per = [], [], []
    for e, w in zip(per_event, weights):
        sub = []
        for emb in e.values():
            if len(emb) >= 2:
                x = l2n(emb)
                sub.append(float(np.mean(np.sum(x[1:] * x[:-1], axis=1))))
        per.append(float(np.mean(sub)) if sub else None)
        if sub:
            vals.append(float(np.mean(sub)))
            ws.append(float(w))
    if not vals:
        return None, {"events": per}
    return cos100(float(np.average(vals, weights=ws))), {"events": per}


def inter_event_consistency(per_event: Sequence[dict[str, np.ndarray]]) -> tuple[Optional[float], dict]:
    """B.7 eqs. 13-15: per element in >= 2 events, the mean over event pairs of the mean cross-event cosine of its
    appearances; video = mean over those elements. An element seen in one event only is skipped. In %."""
    names = sorted({k for e in per_event for k, v in e.items() if len(v)})
    per = {}
    for name in names:
        seen = [l2n(e[name]) for e in per_event if name in e and len(e[name])]
        if len(seen) < 2:
            continue
        sims = [float(np.mean(seen[i] @ seen[j].T)) for i in range(len(seen)) for j in range(i + 1, len(seen))]
        per[name] = float(np.mean(sims))
    if not per:
        return None, {"elements": {}}
    return cos100(float(np.mean(list(per.values())))), {"elements": per}
