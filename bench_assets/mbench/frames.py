"""What each MBench step needs from its video, stated before the one decode pass (``core.media.VideoSource``).

Frames each sub-dimension needs (native size everywhere: every consumer resizes on its own terms, or not at all, so a
decoder-side resize would change values):

- poses: every frame, in order, once (the trajectory keeps per-frame features, not frames) -> walked in chunks;
- tracks: frame 0 (the init box; T: first-frame detection) and, offline, the frames ``box_depth`` triangulates with;
  with the object_segmenter slot, every frame in order (propagation) -> walked; faces and person boxes on the 32
  evenly spaced identity frames -> gathered;
- scores: geometry the revisit pairs' two frames (when the reference has a box) -> gathered; texture one masked crop
  per frame with a box -> reduced per chunk to embeddings; epipolar / reprojection ORB features of the pair frames
  and of the helper frames the triangulation tries -> reduced to features as the pass goes; lighting the CIELAB
  means of the pair frames -> reduced to two numbers per frame; style the VGG Gram of every frame, but only
  adjacent differences are used -> reduced per chunk to one distance per frame pair; appearance the person crops on
  the face frames, state / evolution the judge's 8 evenly spaced frames, text instruction 4 frames per caption
  segment -> gathered; action instruction the poses only (no frame).

``VideoFrames`` gives the per-case code (``scoring.case_scores`` / ``tracking.track_rows``) the indexing it already used
on a list of frames, for the indices planned; anything else fails with the index and the plan, so a metric that
starts reading another frame is caught, not silently decoded twice. Per-chunk reductions batch models exactly as a
call over the whole list would (chunks are multiples of the model's batch size), so values do not change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import numpy as np

from bench_assets.core.media import DEFAULT_CHUNK, VideoSource
from bench_assets.mbench import geometry
from bench_assets.mbench import metrics
from bench_assets.mbench import pipeline as PL


def frame_hw(frames) -> tuple[int, int]:
    """(H, W) of a list of frames or of a VideoFrames (which knows it without decoding)."""
    hw = getattr(frames, "hw", None)
    return tuple(hw) if hw is not None else tuple(frames[0].shape[:2])


class VideoFrames:
    """One video's frames for one step: ``len()``, ``frames[k]`` for the gathered indices (after the pass), and, when
    ``walk`` is set, one in-order iteration over every frame (``frames[k]`` also serves the chunk at hand, and frame
    0 is read ahead so a consumer can look at it before walking). The pass runs on first need."""

    def __init__(self, src: VideoSource, gather: Iterable[int] = (), walk: bool = False, chunk: int = DEFAULT_CHUNK,
                 name: str = "mbench"):
        self.src, self.name, self.walk, self.chunk = src, name, walk, chunk
        self.n, self.hw = src.n_frames, (src.size[1], src.size[0])
        self._req = src.take(sorted(set(int(k) for k in gather)), name=f"{name}: gathered") if gather else None
        self._it = None
        self._walked = False
        self._cur: Optional[tuple[list[int], np.ndarray]] = None
        self._gathered: Optional[dict] = None

    def __len__(self) -> int:
        return self.n

    @property
    def gathered(self) -> list[int]:
        return list(self._req.indices) if self._req is not None else []

    def _advance(self) -> bool:
        if self._it is None:
            self._it = self.src.iter_chunks(chunk=self.chunk, name=f"{self.name}: walk")
        try:
            self._cur = next(self._it)
            return True
        except StopIteration:
            self._cur = None
            return False

    def __iter__(self):
        if not self.walk:
            raise RuntimeError(f"{self.src.path}: {self.name} planned no walk over every frame")
        if self._walked:
            raise RuntimeError(f"{self.src.path}: {self.name} walks the video once (one decode pass)")
        self._walked = True
        while self._cur is not None or self._advance():
            idx, chunk = self._cur
            for f in chunk:
                yield f
            self._cur = None

    def finish(self) -> "VideoFrames":
        """Complete the pass (a walk not taken is drained) so the gathered frames are filled."""
        if not self.src.done:
            if self.walk:
                while self._advance():
                    pass
                self._walked = True
            else:
                self.src.run()
        return self

    def __getitem__(self, k: int) -> np.ndarray:
        k = int(k)
        if k < 0:
            k += self.n
        if self.walk and not self._walked and self._cur is None and self._it is None and k == 0:
            self._advance()            # read ahead: frame 0 before the walk
        if self._cur is not None and self._cur[0][0] <= k <= self._cur[0][-1]:
            return self._cur[1][k - self._cur[0][0]]
        if self._req is not None and k in self._req._pos:
            if not self.src.done:
                self.finish()
            return self._req.frames[self._req._pos[k]]
        raise IndexError(f"{self.src.path}: frame {k} was not planned for {self.name} (gathered: "
                         f"{_ranges(self.gathered)}); state it before the decode pass")


def _ranges(idx: Sequence[int]) -> str:
    if not idx:
        return "none"
    return ", ".join(str(i) for i in idx[:12]) + (f", ... ({len(idx)} frames)" if len(idx) > 12 else "")


# ------------------------------------------------------------------------------------------------ reductions

class PerFrame:
    """``fn(frame)`` for each frame of ``indices``, kept by index (ORB features, CIELAB means): the frame is dropped."""

    def __init__(self, fn: Callable[[np.ndarray], object], indices: Iterable[int], what: str):
        self.fn, self.indices, self.what = fn, sorted(set(int(i) for i in indices)), what
        self.values: dict[int, object] = {}

    def push(self, idx: Sequence[int], frames: np.ndarray) -> None:
        for k, f in zip(idx, frames):
            self.values[int(k)] = self.fn(f)

    def __getitem__(self, k: int):
        try:
            return self.values[int(k)]
        except KeyError:
            raise KeyError(f"{self.what} of frame {k} was not planned (planned: {_ranges(self.indices)})") from None


class StyleDistances:
    """||G_t - G_{t-1}||_F over every adjacent pair of frames, Gram matrices computed per chunk; only the last Gram
    is carried to the next chunk. ``chunk`` is a multiple of the model's batch size: the same batches as one call."""

    def __init__(self, vgg, chunk: int = DEFAULT_CHUNK):
        b = max(1, int(getattr(vgg, "batch_size", 1) or 1))
        self.vgg, self.chunk = vgg, b * max(1, -(-chunk // b))
        self.distances: list[float] = []
        self.frames = 0
        self._last = None

    def push(self, idx: Sequence[int], frames: np.ndarray) -> None:
        grams = self.vgg.grams(list(frames))
        self.frames += len(grams)
        if self._last is not None and grams:
            grams = [self._last] + list(grams)
        self.distances += [float(np.linalg.norm(b - a)) for a, b in zip(grams[:-1], grams[1:])]
        if grams:
            self._last = grams[-1]

    def score(self) -> Optional[float]:
        return metrics.style_from_distances(self.distances) if self.frames >= 2 else None


class TextureEmbeddings:
    """The masked object crop of every frame with a box, embedded in the embedder's own batches as the crops arrive
    (crops are dropped once embedded): the same batches as one call over every crop."""

    def __init__(self, embedder, boxes: Sequence, masks: Sequence):
        self.embedder, self.boxes, self.masks = embedder, boxes, masks
        self.batch = max(1, int(getattr(embedder, "batch_size", 1) or 1))
        self.indices = [k for k, b in enumerate(boxes) if b is not None]
        self.crops = 0
        self._pending: list[np.ndarray] = []
        self._out: list[np.ndarray] = []

    def push(self, idx: Sequence[int], frames: np.ndarray) -> None:
        for k, f in zip(idx, frames):
            m = self.masks[k]
            c = PL.masked_crop(f, self.boxes[k], PL.decode_mask(m) if isinstance(m, str) else m)
            if c is not None:
                self._pending.append(c)
                self.crops += 1
        if len(self._pending) >= max(self.batch, 2):
            self._flush(len(self._pending) // self.batch * self.batch)

    def _flush(self, n: int) -> None:
        if n:
            self._out.append(np.asarray(self.embedder.embed(self._pending[:n])))
            del self._pending[:n]

    def embeddings(self) -> Optional[np.ndarray]:
        """Every crop's embedding in frame order; None with fewer than 2 crops (nothing to compare)."""
        if self.crops < 2:
            return None
        self._flush(len(self._pending))
        return np.concatenate(self._out)


@dataclass
class ScoreInputs:
    """What ``scoring.case_scores`` reads besides gathered frames, reduced during the pass."""
    features: Optional[PerFrame] = None
    lab: Optional[PerFrame] = None
    style: Optional[StyleDistances] = None
    texture: Optional[TextureEmbeddings] = None
    walkers: list = field(default_factory=list)      # (indices or None for every frame, chunk, push)


def spatial_feature_indices(pairs: Sequence[tuple[int, int]], C, n: int) -> set[int]:
    """The frames ``geometry.revisit_pair`` reads features of: both ends of each pair and the helper frames its
    triangulation tries."""
    need: set[int] = set()
    for i, j in pairs:
        need |= {int(i), int(j)}
        need |= set(geometry.helper_candidates(i, j, C, n))
    return need


def object_rows(tracks) -> tuple[list, list]:
    """(box per frame, mask text per frame) of the object rows of a tracks table, in frame order."""
    import json
    objects = tracks[tracks["kind"] == "object"].sort_values("frame")
    boxes = [json.loads(b) if isinstance(b, str) else None for b in objects["box"]]
    masks = list(objects["mask"]) if "mask" in objects else [None] * len(objects)
    return boxes, [m if isinstance(m, str) else None for m in masks]


def score_plan(case, n: int, C, pairs: Sequence[tuple[int, int]], tracks, applies: set, slots: dict,
               judge_ok: bool) -> tuple[set[int], ScoreInputs]:
    """(frames to gather, reductions to run during the pass) for ``scoring.case_scores``; ``slots`` maps slot names to
    the loaded model or None, ``applies`` the sub-dimensions that apply and can use the poses."""
    gather: set[int] = set()
    red = ScoreInputs()
    if {"geometry", "texture"} & applies and len(tracks) and (tracks["kind"] == "object").any():
        boxes, masks = object_rows(tracks)
        if "geometry" in applies:
            gather |= {k for i, j in pairs if boxes[i] is not None for k in (i, j)}
        if "texture" in applies and slots.get("image_embedder") is not None:
            red.texture = TextureEmbeddings(slots["image_embedder"], boxes, masks)
            red.walkers.append((red.texture.indices, DEFAULT_CHUNK, red.texture.push))
    if {"identity", "appearance"} & applies and len(tracks) and slots.get("image_embedder") is not None \
            and not (tracks["kind"] == "person_unavailable").any():
        faces = tracks[tracks["kind"] == "face"]
        gather |= {int(r.frame) for r in faces.itertuples() if isinstance(r.person_box, str)}
    if {"epipolar", "reprojection", "lighting"} & applies:
        red.features = PerFrame(geometry.features, spatial_feature_indices(pairs, C, n), "ORB features")
        red.lab = PerFrame(metrics.lab_stats, {k for p in pairs for k in p}, "CIELAB means")
        # sparse frames reduced one at a time: a chunk buffer would hold native frames for nothing
        red.walkers += [(red.features.indices, 1, red.features.push), (red.lab.indices, 1, red.lab.push)]
    if "style" in applies and slots.get("style_vgg") is not None:
        red.style = StyleDistances(slots["style_vgg"])
        red.walkers.append((None, red.style.chunk, red.style.push))
    if {"state_evolution", "evolution_correctness"} & applies and judge_ok:
        gather |= set(PL.even(n, PL.TRIGGER_FRAMES))
    if "text_instruction" in applies and slots.get("clip_b32") is not None:
        gather |= set(text_frames(n, len(case.segments)))
    return gather, red


def text_frames(n: int, n_segments: int) -> list[int]:
    """Per caption segment, its TEXT_FRAMES_PER_SEGMENT evenly spaced frames (segments in order, as one list)."""
    return [k for ks in text_frames_per_segment(n, n_segments) for k in ks]


def text_frames_per_segment(n: int, n_segments: int) -> list[list[int]]:
    seg = PL.segment_of_frames(n, n_segments)
    out = []
    for s in range(n_segments):
        ks = [i for i, x in enumerate(seg) if x == s]
        out.append([ks[i] for i in PL.even(len(ks), PL.TEXT_FRAMES_PER_SEGMENT)] if ks else [])
    return out


def reduce_list(frames: Sequence[np.ndarray], red: ScoreInputs) -> ScoreInputs:
    """Run the planned reductions over frames already in memory (tests, validity builders): the same code as the
    streamed pass, chunk for chunk."""
    for indices, chunk, push in red.walkers:
        idx = list(range(len(frames))) if indices is None else list(indices)
        for a in range(0, len(idx), chunk):
            part = idx[a:a + chunk]
            push(part, [frames[k] for k in part])
    return red


def has_work(red: ScoreInputs) -> bool:
    return any(indices is None or len(indices) for indices, _, _ in red.walkers)


def register(src: VideoSource, red: ScoreInputs, name: str) -> None:
    """The planned reductions as chunk consumers of the step's one pass."""
    for k, (indices, chunk, push) in enumerate(red.walkers):
        if indices is None or len(indices):
            src.chunks(lambda i, f, push=push: push(i, f), indices=indices, chunk=chunk, name=f"{name}: reduce {k}")
