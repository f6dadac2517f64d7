"""Motion links between the person boxes of consecutive samples, read from the native frames between them.

At 1 fps a walker moves about a box width between two samples, so IoU tracking on the samples breaks their track, and
the pieces were joined on appearance alone (an offline ReID whose similarities move by .01-.07 with the file's
resolution: issue 23's campus at 0.5x and 2x). The native frames between two samples see the motion a tenth or a
twenty-fifth at a time. Each box of sample j is carried to sample j+1 through them with dense optical flow (OpenCV
DIS on grey frames scaled to ``FLOW_HEIGHT`` rows: the median flow inside the box's central ``INNER`` share, chained
frame to frame), and a box of sample j+1 continues the box of sample j whose carried box it overlaps best (overlap >=
``min_iou``, the tracker's own LINK_POSITIVE_IOU; the boxes compared at their mean size, ``centred_iou``; one to one,
Hungarian), within a shot. Flow and boxes scale together, so a resized copy of the file gets the same links; no
appearance is read.

The pure parts (``propagate``, ``match``, ``chain_ids``) take arrays; ``flow_links`` is the streamed decode loop
(one pass over the native frames between consecutive samples of one shot, two grey frames in memory)."""
from __future__ import annotations

from collections import defaultdict
from typing import Optional, Sequence

import cv2
import numpy as np
from scipy.optimize import linear_sum_assignment

from bench_assets.core.kernels import iou
from bench_assets.narrativetrack import constants

FLOW_HEIGHT = constants.FLOW_HEIGHT    # rows of the grey frames the flow is computed on
INNER = constants.FLOW_INNER           # the central share of a box whose median flow carries it


def _inner(boxes: np.ndarray, share: float) -> np.ndarray:
    c = (boxes[:, :2] + boxes[:, 2:]) / 2
    half = (boxes[:, 2:] - boxes[:, :2]) * share / 2
    return np.concatenate([c - half, c + half], axis=1)


def propagate(boxes: np.ndarray, flow: np.ndarray, scale: float, inner: float = INNER) -> np.ndarray:
    """Pure: ``boxes`` (N x 4, xyxy in frame pixels) moved by the median of ``flow`` (H x W x 2, the displacement of
    each pixel of the earlier frame, in the flow image's pixels; the flow image is the frame scaled by ``scale``)
    inside the central ``inner`` share of each box (a person box is half background, which does not move). A box
    outside the image does not move."""
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    out = boxes.copy()
    h, w = flow.shape[:2]
    for k, (x1, y1, x2, y2) in enumerate(_inner(boxes, inner) * scale):
        c1, r1 = int(np.clip(np.floor(x1), 0, w - 1)), int(np.clip(np.floor(y1), 0, h - 1))
        c2, r2 = int(np.clip(np.ceil(x2), c1 + 1, w)), int(np.clip(np.ceil(y2), r1 + 1, h))
        patch = flow[r1:r2, c1:c2].reshape(-1, 2)
        if len(patch):
            dx, dy = np.median(patch, axis=0) / scale
            out[k] += (dx, dy, dx, dy)
    return out


def centred_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pure: IoU of every pair of boxes (rows of ``a`` x rows of ``b``) once both are given the pair's mean width and
    height, each kept at its own centre: how far apart they are relative to their size. A detector's box of one
    walker changes its width and height from one sample to the next (an arm out, the legs apart: 17 to 29 px wide
    for one walker a second apart), which alone takes the plain IoU of perfectly carried boxes under .5."""
    a, b = np.asarray(a, float).reshape(-1, 4), np.asarray(b, float).reshape(-1, 4)
    ca, cb = (a[:, :2] + a[:, 2:]) / 2, (b[:, :2] + b[:, 2:]) / 2
    size = ((a[:, None, 2:] - a[:, None, :2]) + (b[None, :, 2:] - b[None, :, :2])) / 2   # (A, B, 2)
    d = np.abs(ca[:, None, :] - cb[None, :, :])
    inter = np.prod(np.clip(size - d, 0, None), axis=2)
    area = np.prod(np.clip(size, 0, None), axis=2)
    return np.where(area > 0, inter / np.maximum(2 * area - inter, 1e-9), 0.0)


def match(carried: np.ndarray, boxes: np.ndarray, min_iou: float) -> list[tuple[int, int, float]]:
    """Pure: one-to-one links (i, k, overlap) from carried boxes i to boxes k, maximising the summed overlap
    (``centred_iou``; Hungarian), each with overlap >= ``min_iou``."""
    carried, boxes = np.asarray(carried, float).reshape(-1, 4), np.asarray(boxes, float).reshape(-1, 4)
    if not len(carried) or not len(boxes):
        return []
    iou = centred_iou(carried, boxes)
    rows, cols = linear_sum_assignment(-iou)
    return [(int(i), int(k), float(iou[i, k])) for i, k in zip(rows, cols) if iou[i, k] >= min_iou]


def chain_ids(n: int, links: Sequence[tuple[int, int]]) -> list[int]:
    """Pure: a track id per row 0..n-1 from one-to-one links (a, b) (a's next box is b): rows linked in a chain share
    the id of its first row."""
    prev = {b: a for a, b in links}
    out = []
    for i in range(n):
        r = i
        while r in prev:
            r = prev[r]
        out.append(r)
    return out


def flow_size(frame_size: tuple[int, int]) -> tuple[tuple[int, int], float]:
    """(W, H) of the flow image for a frame of ``frame_size`` (W, H), and the scale from frame to flow pixels."""
    w, h = frame_size
    scale = FLOW_HEIGHT / float(h)
    return (max(8, int(round(w * scale))), FLOW_HEIGHT), scale


def flow_links(video_path: str, frame_index: Sequence[int], shots: Sequence[int], boxes_by_sample: dict,
               min_iou: float, frame_size: Optional[tuple[int, int]] = None) -> dict:
    """Motion links between consecutive samples j, j+1 of one shot (native frames ``frame_index[j]`` ..
    ``frame_index[j+1]`` of the video at ``video_path``, one streamed decode pass): ``boxes_by_sample`` {j: [(row,
    box xyxy), ...]} in the frames' pixels (``frame_size`` (W, H), the video's own by default). Returns {"links":
    [(row at j, row at j+1, iou)], "pairs": the sample pairs read (j), "undecoded": sample pairs whose frames did not
    all decode (no link is made there)}."""
    from bench_assets.core.media import DecodeError, VideoSource
    src = VideoSource(video_path)
    size, scale = flow_size(frame_size or src.size)
    idx = [int(i) for i in frame_index]
    pairs = [j for j in range(len(idx) - 1) if shots[j] == shots[j + 1] and boxes_by_sample.get(j)
             and boxes_by_sample.get(j + 1) and idx[j + 1] > idx[j]]
    if not pairs:
        return {"links": [], "pairs": [], "undecoded": []}
    start = {idx[j]: j for j in pairs}      # native frame -> the pair it starts
    need = sorted({i for j in pairs for i in range(idx[j], min(idx[j + 1], src.n_frames - 1) + 1)})
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)    # OpenCV's preset, as it is
    state = {"i": None, "grey": None, "open": {}}    # open: j -> carried boxes (rows, N x 4)
    done: dict[int, np.ndarray] = {}

    def put(indices, frames):
        for i, f in zip(indices, frames):
            grey = cv2.cvtColor(np.asarray(f), cv2.COLOR_RGB2GRAY)
            if state["i"] is not None and state["i"] == i - 1 and state["open"]:
                flow = dis.calc(state["grey"], grey, None)
                for j, carried in state["open"].items():
                    state["open"][j] = propagate(carried, flow, scale)
            elif state["i"] is not None and state["i"] != i - 1:
                state["open"].clear()    # a gap in the decoded frames: those pairs cannot be followed
            for j in [j for j in state["open"] if idx[j + 1] == i]:
                done[j] = state["open"].pop(j)
            if i in start:
                j = start[i]
                state["open"][j] = np.array([b for _, b in boxes_by_sample[j]], float).reshape(-1, 4)
            state["i"], state["grey"] = i, grey
    src.chunks(put, indices=need, chunk=8, size=size, name="narrativetrack flow links")
    try:
        src.run()
    except DecodeError:   # what decoded is read; the rest keeps the tracker's links (the sampling pass reports it)
        pass
    links = []
    for j in pairs:
        if j not in done:
            continue
        rows_a = [r for r, _ in boxes_by_sample[j]]
        rows_b = [r for r, _ in boxes_by_sample[j + 1]]
        for a, b, v in match(done[j], np.array([bx for _, bx in boxes_by_sample[j + 1]], float), min_iou):
            links.append((rows_a[a], rows_b[b], round(v, 4)))
    return {"links": links, "pairs": [j for j in pairs if j in done], "undecoded": [j for j in pairs if j not in done]}


def boxes_by_sample(samples: Sequence[int], boxes: Sequence) -> dict:
    out = defaultdict(list)
    for r, (s, b) in enumerate(zip(samples, boxes)):
        out[int(s)].append((r, [float(x) for x in b]))
    return dict(out)


def relink(track_ids: Sequence[int], samples: Sequence[int], boxes: Sequence, links: Sequence[tuple[int, int]],
           followed: Sequence[int], min_iou: float) -> list[int]:
    """Pure: the tracker's ids redone with motion links. Between two samples j, j+1 whose native frames were followed
    (``followed``: the j), a box's next box is its motion link (the tracker's link there is kept only where motion
    makes the same one); elsewhere (a gap of a missed sample, a shot cut, frames that did not decode) the tracker's
    link is kept where its boxes overlap at IoU >= ``min_iou`` (the rule without motion). Each box keeps at most one
    previous and one next box (a motion link wins a box both claim)."""
    followed = set(int(j) for j in followed)
    n = len(track_ids)
    nxt: dict[int, int] = {}
    prv: dict[int, int] = {}
    for a, b in links:
        nxt[a], prv[b] = b, a
    order = defaultdict(list)
    for i, t in enumerate(track_ids):
        if t >= 0:
            order[t].append(i)
    for t, rows in order.items():
        rows.sort(key=lambda i: samples[i])
        for a, b in zip(rows, rows[1:]):
            if samples[b] == samples[a] + 1 and samples[a] in followed:
                continue    # motion decided this pair of samples
            if a in nxt or b in prv:
                continue
            if iou(boxes[a], boxes[b]) >= min_iou:
                nxt[a], prv[b] = b, a
    return chain_ids(n, list(nxt.items()))
