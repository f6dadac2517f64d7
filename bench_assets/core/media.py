"""Streamed video decoding: each video is decoded once per step, and only the frames metrics asked for are kept.

How to use it (new code)
------------------------
Open a ``VideoSource`` (this probes the container, it decodes nothing), state every frame need *before*
decoding, then run the one decode pass::

    from bench_assets.core.media import VideoSource, DecodeError

    src = VideoSource(path)                       # DecodeError here names the file and the problem
    grid = src.even(16)                           # 16 evenly spaced frames, gathered     -> grid.frames [16,H,W,3]
    slow = src.at_fps(1.0, size=(640, 360))       # ~1 fps, resized once while converting -> slow.frames
    some = src.take([0, 40, 80])                  # explicit indices
    src.chunks(on_chunk, chunk=32, overlap=1)     # every frame (or `indices=`), pushed in consecutive chunks:
                                                  #   on_chunk(indices: list[int], frames: np.ndarray [n,H,W,3])
    src.run()                                     # ONE pass; afterwards grid.indices / grid.frames are filled

A single consumer that walks consecutive frames can pull instead of push; the pull drives the same one pass
and fills every gathered request along the way::

    src = VideoSource(path); grid = src.even(8)
    for idx, frames in src.iter_chunks(chunk=32, overlap=1):   # overlap=1: chunk k starts with chunk k-1's last
        reduce_window(idx, frames)                              # frame, so pairwise metrics see every pair once
    use(grid.frames)                                            # filled: the pass ran to the end

Guarantees: one decode pass per ``VideoSource`` (``run`` twice raises); a frame is converted to RGB only when
some request needs it, once per (frame, size) however many requests share it; the decoder stops after the last
needed frame; chunk consumers never see more than ``chunk + overlap`` frames held by the source at a time, so
memory is flat in video length. Counters (``counters()``) report passes, frames decoded, frames converted and
frames needed, so scripts and tests can check "one pass, only what is needed".

Indices are native frame indices (0-based, in decode order of presentation); ``n_frames`` is the number of frame
packets the file really holds (a demux-only count, no decode), ``fps`` comes from the stream's timestamps.

Files as they come (each finding is a line in ``src.warnings``, logged to the ``bench.media`` logger that Dagster
records on the step, and counted in ``src.health()``):
- cut short: a file whose container declares more frames than it holds is evaluated on the frames it holds (and a
  stream that stops decoding early on the frames decoded), with declared vs present / decoded frames recorded;
  fewer than ``MIN_FRAMES_CUT_SHORT`` usable frames is a DecodeError.
- wrong rate in the header: frame times come from the packets' timestamps (``frame_times()``; ``fps`` is the
  timestamps' mean rate); a header that disagrees by more than 1 % is recorded.
- decode errors: frames FFmpeg marks corrupt (it conceals the damage and returns them) and frames lost (packets
  that gave no frame) are counted per pass (``stats.corrupt_frames`` / ``stats.lost_frames``).
- rotation: a display rotation of 90, 180 or 270 degrees (the stream's display matrix, what phones write) is
  applied: every frame is handed over upright, ``size`` is the upright (W, H), ``rotation_applied`` is recorded
  and a note names it (``src.notes``, logged at INFO: a portrait phone clip is not a decode problem, so it is no
  warning and no decode-warnings count on the board). Frame indices, times and fps are those of the stream,
  untouched. Another angle is a warning and the frames are analysed as stored.
- several video streams: only the first is decoded and scored; the others (cover art aside) are a decode warning
  naming each (``video_streams`` in ``health()``), so the board counts the file instead of scoring it in silence.
- size: chunked requests (the per-frame walks that flow runs on) of frames whose longer side exceeds
  ``max_stream_side()`` (``BENCH_MAX_STREAM_SIDE``, default 2048) are downscaled to it while converting, the
  scale recorded (``stats.stream_scale``), so memory stays bounded on a 4096x2160 shot.

The legacy whole-clip API still works while benchmarks migrate: ``ClipCache.get(path) -> Clip`` with
``.frames`` (every frame, RGB uint8 [T,H,W,3]), ``.take``, ``.even``, ``.n_frames``, ``.fps``, ``.size``,
``.sha256``; ``decode_video``; ``even_indices``; ``fps_indices``. ``ClipCache`` is bounded in bytes
(``max_bytes``, default ``BENCH_CLIP_CACHE_BYTES`` or 1 GiB), not in clips. A ``Clip`` holds every frame: do
not use it for long videos.

Decoder: PyAV (FFmpeg bundled in its wheels), chosen on measurements in scripts/benchmark_scale.py
(``--decoders``): it decodes without converting (OpenCV's ``grab`` can too), converts and resizes in one
swscale call, reports the exact frame count, pixel format and container format (so an image renamed .mp4 is
rejected), and its RGB output equals OpenCV's bit for bit. ``decoder_info()`` names it and its versions for
the run manifest.
"""
from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence

import numpy as np

# Smallest frame side accepted: below this no metric (face, detection, flow) means anything.
MIN_SIDE = 16
DEFAULT_CHUNK = 32
# A file cut short (or that stops decoding early) is evaluated on what it holds when at least this many frames are
# usable: half a second at 16 fps, the fewest any temporal metric here reads; fewer is an error naming the file.
MIN_FRAMES_CUT_SHORT = 8
# Header rate vs timestamp rate: a relative difference beyond this is recorded (rounding of 23.976 vs 24000/1001
# stays far below it).
RATE_TOLERANCE = 0.01
DEFAULT_MAX_STREAM_SIDE = 2048

_log = logging.getLogger("bench.media")
if _log.level == logging.NOTSET:   # notes (INFO) reach the step's event log too; dagster.yaml may set another level
    _log.setLevel(logging.INFO)


def max_stream_side() -> int:
    """Longest frame side of chunked (streamed) requests: BENCH_MAX_STREAM_SIDE, default 2048; 0 = no bound."""
    raw = os.environ.get("BENCH_MAX_STREAM_SIDE", "")
    return int(raw) if raw.strip() else DEFAULT_MAX_STREAM_SIDE


def bounded_size(size: tuple[int, int], max_side: int) -> tuple[Optional[tuple[int, int]], float]:
    """((W, H) to resize to, scale) for frames of ``size`` whose longer side exceeds ``max_side``; (None, 1.0)
    when they fit. Sides stay even (what swscale and every flow model here handle without padding)."""
    w, h = size
    if max_side <= 0 or max(w, h) <= max_side:
        return None, 1.0
    scale = max_side / max(w, h)
    return (max(2, int(round(w * scale / 2)) * 2), max(2, int(round(h * scale / 2)) * 2)), scale

_lock = threading.Lock()
_counts = {"passes": 0, "frames_decoded": 0, "frames_converted": 0, "frames_needed": 0,
           "legacy_passes": 0, "legacy_frames": 0,  # whole-clip decodes (decode_video / ClipCache) among them
           "decode_s": 0.0, "convert_s": 0.0,       # wall seconds in FFmpeg's decoder / in RGB conversion
           "container_opens": 0, "reopens": 0}       # av.open calls; passes that could not reuse the probe's


_opened = {"n": 0}              # videos opened in this process
_opened_paths: list[str] = []   # the paths of the last videos opened, in order (at most _OPENED_KEPT)
_OPENED_KEPT = 4096


def last_opened() -> tuple[int, str]:
    """(videos opened so far in this process, the last one's path): progress names the file a step is reading."""
    with _lock:
        return _opened["n"], (_opened_paths[-1] if _opened_paths else "")


def opened_since(n0: int) -> tuple[int, list[str]]:
    """(videos opened so far in this process, the paths of those opened after the first ``n0``; at most the last
    _OPENED_KEPT): progress counts the distinct shot files a running step has opened."""
    with _lock:
        n = _opened["n"]
        return n, (_opened_paths[max(len(_opened_paths) - (n - n0), 0):] if n > n0 else [])


_passes: dict[int, list] = {}   # decode passes running now: id -> [path, frames converted, frames needed]


def passes_now() -> list[tuple[str, int, int]]:
    """(path, frames converted so far, frames needed) of each decode pass running now in this process, oldest
    first (a prefetching reader may run two): progress moves inside a long shot, not only between shots."""
    with _lock:
        return [(p[0], p[1], p[2]) for p in _passes.values()]


def decode_count() -> int:
    """Decode passes so far in this process (one per VideoSource.run / decode_video)."""
    return _counts["passes"]


def counters() -> dict:
    """Snapshot of process-wide decode counters: passes, frames_decoded, frames_converted, frames_needed, and
    legacy_passes / legacy_frames (how many of them were whole-clip decodes that convert every frame)."""
    with _lock:
        return dict(_counts)


def _add(**kw) -> None:
    with _lock:
        for k, v in kw.items():
            _counts[k] += v


class DecodeError(ValueError):
    """A video that cannot be used; the message names the file and what is wrong with it."""


def decoder_info() -> dict:
    """Which decoder this platform uses and its versions, for the run manifest."""
    import av
    libs = {k: ".".join(map(str, v)) for k, v in getattr(av, "library_versions", {}).items()}
    return {"decoder": "pyav", "pyav": av.__version__,
            "ffmpeg": getattr(av, "ffmpeg_version_info", None), "libavcodec": libs.get("libavcodec"),
            "rgb_conversion": "swscale rgb24", "min_side": MIN_SIDE}


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def even_indices(n_frames: int, k: int) -> list[int]:
    """k evenly spaced frame indices over [0, n_frames-1] (all frames when k >= n_frames)."""
    if n_frames <= 0:
        return []
    if k >= n_frames:
        return list(range(n_frames))
    return [int(round(i)) for i in np.linspace(0, n_frames - 1, k)]


def fps_indices(n_frames: int, fps: float, target_fps: float, whole_step: bool = False) -> list[int]:
    """Indices that resample a clip at ~target_fps (never faster than native). ``whole_step``: every
    max(1, round(fps / target_fps))-th frame, as VBench samples (dynamic degree: 0, 4, 8, 12 at 30 fps where the
    fractional step gives 0, 4, 8, 11)."""
    if n_frames <= 0:
        return []
    if whole_step:
        return list(range(0, n_frames, max(1, round(fps / target_fps)) if fps > 0 else 1))
    step = max(1.0, fps / target_fps) if fps > 0 else 1.0
    return sorted({int(round(i * step)) for i in range(int((n_frames - 1) / step) + 1)})


# ---------------------------------------------------------------------------------------------- streaming

Size = Optional[tuple[int, int]]  # (W, H) to resize to while converting; None keeps the native size


class Request:
    """Frames one consumer needs from one VideoSource; gathered requests are filled by the pass."""

    def __init__(self, src: "VideoSource", indices: Sequence[int], size: Size, name: str,
                 on_chunk: Optional[Callable] = None, chunk: int = 0, overlap: int = 0):
        self.source, self.size, self.name = src, size, name
        self.indices = sorted(set(int(i) for i in indices))
        self.on_chunk, self.chunk, self.overlap = on_chunk, chunk, overlap
        self._frames: Optional[np.ndarray] = None
        self._pos = {i: j for j, i in enumerate(self.indices)}
        self._filled = 0

    @property
    def streamed(self) -> bool:
        return self.chunk > 0

    @property
    def frames(self) -> np.ndarray:
        """RGB uint8 [len(indices), H, W, 3] (gathered requests only, after the pass)."""
        if self.streamed:
            raise RuntimeError(f"{self.name}: a chunked request hands its frames to its consumer, it keeps none")
        if not self.source.done:
            raise RuntimeError(f"{self.name}: frames are available after {self.source.path}'s decode pass (run())")
        if self._frames is None:  # nothing requested
            w, h = self.size or self.source.size
            return np.zeros((0, h, w, 3), np.uint8)
        return self._frames

    def _put(self, index: int, rgb: np.ndarray) -> None:
        if self._frames is None:  # preallocated once: no list of frames then a stacked copy
            self._frames = np.empty((len(self.indices), *rgb.shape), np.uint8)
        self._frames[self._pos[index]] = rgb
        self._filled += 1


@dataclass
class PassStats:
    path: str
    frames_decoded: int = 0
    frames_converted: int = 0
    frames_needed: int = 0
    peak_chunk_frames: int = 0   # frames held at once in chunk buffers
    gathered_frames: int = 0     # frames kept for gathered requests (their consumers asked for all of them)
    corrupt_frames: int = 0      # frames FFmpeg returned marked corrupt (damage concealed, not repaired)
    lost_frames: int = 0         # frame packets that gave no frame (counted when the pass reaches the end)
    stream_scale: float = 1.0    # scale applied to chunked requests' frames (1.0: native size)


class VideoSource:
    """One video: probed on open, every need stated, then decoded in exactly one pass (see module docstring)."""

    def __init__(self, path: str | Path, min_side: int = MIN_SIDE):
        self.path = str(path)
        self._sha: Optional[str] = None
        self._requests: list[Request] = []
        self._started = False
        self.done = False
        self.stats = PassStats(self.path)
        with _lock:
            _opened["n"] += 1
            _opened_paths.append(self.path)
            del _opened_paths[:-_OPENED_KEPT]
        info = _probe(Path(path), min_side, keep=True)
        # the probe's container stays open for the pass (one open per pass: opening and finding the stream info
        # cost more than the decode on short clips); the pass rewinds it, or opens afresh if it cannot
        self._container, self._first_pts = info["container"], info["first_pts"]
        self.n_frames, self.fps = info["n_frames"], info["fps"]
        self.codec, self.container_format = info["codec"], info["format"]
        self.declared_frames: Optional[int] = info["declared_frames"]   # what the container says (None: silent)
        self.fps_header: float = info["fps_header"]
        self._times: Optional[np.ndarray] = info["times"]
        # display rotation, counter-clockwise degrees in [0, 360) (FFmpeg's display matrix, read from the first
        # frame the probe decodes); a right angle is applied: frames are rotated upright while converting
        self.rotation: int = info["rotation"]
        self._quarter_turns = self.rotation // 90 if self.rotation % 90 == 0 else 0
        self.rotation_applied = self._quarter_turns != 0
        self.stored_size: tuple[int, int] = info["size"]   # (W, H) as coded
        self.video_streams: int = info["video_streams"]   # >1: only the first is scored, a warning names the others
        w, h = info["size"]
        self.size: tuple[int, int] = (h, w) if self._quarter_turns % 2 else (w, h)   # (W, H) upright
        self.warnings: list[str] = []
        self.decode_warnings: list[str] = []   # the warnings that are faults of reading the file (not scale/rotation)
        self.notes: list[str] = []   # what was done to the frames that is no fault of the file (rotation applied)
        for w in info["warnings"]:
            self._warn(w)
        if self.rotation_applied:
            self._note(f"{self.path}: display rotation {self.rotation} degrees applied; frames are analysed upright "
                       f"({self.size[0]}x{self.size[1]}, stored as {self.stored_size[0]}x{self.stored_size[1]})")
        elif self.rotation:
            self._warn(f"{self.path}: display rotation {self.rotation} degrees is not a right angle and is not "
                       f"applied; frames are analysed as stored ({self.size[0]}x{self.size[1]})", decode=False)

    def _warn(self, msg: str, decode: bool = True) -> None:
        self.warnings.append(msg)
        if decode:
            self.decode_warnings.append(msg)
        _log.warning(msg)

    def _note(self, msg: str) -> None:
        self.notes.append(msg)
        _log.info(msg)

    def frame_times(self) -> np.ndarray:
        """Presentation time of every frame in seconds from the first, from the packets' timestamps (evenly
        spaced at ``fps`` when the file carries none)."""
        if self._times is not None and len(self._times) == self.n_frames:
            return self._times
        return np.arange(self.n_frames) / (self.fps if self.fps > 0 else 1.0)

    def health(self) -> dict:
        """What was found about this file: declared / present / decoded frames, corrupt and lost frames, header vs
        timestamp rate, rotation and whether it was applied, the stream scale, every warning (a row or a board
        can carry it as is) and every note (what was done that is no fault of the file)."""
        return {"declared_frames": self.declared_frames, "present_frames": self.n_frames,
                "decoded_frames": self.stats.frames_decoded if self.done else None,
                "corrupt_frames": self.stats.corrupt_frames, "lost_frames": self.stats.lost_frames,
                "fps_header": self.fps_header, "fps": self.fps, "rotation": self.rotation,
                "rotation_applied": self.rotation_applied, "video_streams": self.video_streams,
                "stream_scale": self.stats.stream_scale, "warnings": list(self.warnings), "notes": list(self.notes)}

    def decode_record(self) -> dict:
        """This file's decode health as table columns (one row per file; ``metric_spec.decode_warning_counts``
        reads them for the board): frames FFmpeg concealed, frames lost, and the reading warnings '; '-joined ('' when
        none). Before the pass (or with no pass: nothing was needed) corrupt and lost frames are not known (None,
        never a silent 0) and the warnings are the probe's."""
        warnings = "; ".join(self.decode_warnings)[:1000]
        if not self.done:
            return {"corrupt_frames": None, "lost_frames": None, "decode_warnings": warnings}
        return {"corrupt_frames": int(self.stats.corrupt_frames), "lost_frames": int(self.stats.lost_frames),
                "decode_warnings": warnings}

    # ------------------------------------------------------------------ stating needs
    @property
    def sha256(self) -> str:
        if self._sha is None:
            self._sha = sha256_file(self.path)
        return self._sha

    @property
    def duration(self) -> float:
        return self.n_frames / self.fps if self.fps > 0 else 0.0

    def _add(self, req: Request) -> Request:
        if self._started:
            raise RuntimeError(f"{self.path}: state every frame need before the decode pass starts")
        bad = [i for i in req.indices if i < 0 or i >= self.n_frames]
        if bad:
            raise DecodeError(f"{self.path}: frame {bad[0]} requested by {req.name} but the video has "
                              f"{self.n_frames} frames")
        self._requests.append(req)
        return req

    def take(self, indices: Iterable[int], size: Size = None, name: str = "take") -> Request:
        return self._add(Request(self, list(indices), size, name))

    def even(self, k: int, size: Size = None, name: str = "even") -> Request:
        return self.take(even_indices(self.n_frames, k), size, name)

    def at_fps(self, target_fps: float, size: Size = None, name: str = "at_fps") -> Request:
        return self.take(fps_indices(self.n_frames, self.fps, target_fps), size, name)

    def chunks(self, on_chunk: Callable[[list[int], np.ndarray], None], indices: Optional[Iterable[int]] = None,
               chunk: int = DEFAULT_CHUNK, overlap: int = 0, size: Size = None, name: str = "chunks") -> Request:
        """Push consecutive needed frames to ``on_chunk(indices, frames)`` in chunks of ``chunk`` new frames;
        each chunk after the first starts with the previous chunk's last ``overlap`` frames."""
        if chunk < 1 or overlap < 0:
            raise ValueError(f"chunk must be >= 1 and overlap >= 0 (got {chunk}, {overlap})")
        idx = range(self.n_frames) if indices is None else indices
        if size is None:  # native frames beyond the bound (a 4K shot) are streamed downscaled, the scale recorded
            size, scale = bounded_size(self.size, max_stream_side())
            if size is not None and self.stats.stream_scale == 1.0:
                self.stats.stream_scale = scale
                self._warn(f"{self.path}: {self.size[0]}x{self.size[1]} frames are streamed to {name} at "
                           f"{size[0]}x{size[1]} (scale {scale:.3f}; BENCH_MAX_STREAM_SIDE={max_stream_side()})",
                           decode=False)
        return self._add(Request(self, list(idx), size, name, on_chunk=on_chunk, chunk=chunk, overlap=overlap))

    # ------------------------------------------------------------------ the one pass
    def run(self) -> PassStats:
        """Decode once, handing every request its frames; returns the pass's counts."""
        for _ in self._pass(None):
            pass
        return self.stats

    def iter_chunks(self, indices: Optional[Iterable[int]] = None, chunk: int = DEFAULT_CHUNK, overlap: int = 0,
                    size: Size = None, name: str = "iter_chunks") -> Iterator[tuple[list[int], np.ndarray]]:
        """Pull form of ``chunks`` for one consumer; iterating it runs the pass (and fills other requests)."""
        box: list = []
        req = self.chunks(lambda i, f: box.append((i, f)), indices, chunk, overlap, size, name)
        for _ in self._pass(req):
            while box:
                yield box.pop(0)
        while box:
            yield box.pop(0)

    def _rewound(self):
        """(container, frame iterator) for the pass: the probe's container rewound to its start when its first frame
        is the stream's first (the pts the probe read first), else a fresh open (what every pass did before; the
        frames are the same, tests/test_media.py)."""
        import av
        import itertools
        c, self._container = self._container, None
        if c is not None:
            try:
                c.seek(0)
                it = c.decode(c.streams.video[0])
                first = next(it)
                if self._first_pts is not None and first.pts == self._first_pts:
                    return c, itertools.chain([first], it)
            except Exception:  # noqa: BLE001 - a rewind that fails is no verdict on the file: open it afresh
                pass
            c.close()
            _add(reopens=1)
        try:
            c = av.open(self.path)
        except Exception as e:  # probed fine a moment ago: changed or unreadable now
            raise DecodeError(f"{self.path}: cannot be opened as a video ({e})") from e
        _add(container_opens=1)
        stream = c.streams.video[0]
        stream.thread_type = "AUTO"  # frame + slice threads inside FFmpeg; the GIL is released
        return c, c.decode(stream)

    def close(self) -> None:
        """Close the probe's container if no pass took it (a source probed and never run)."""
        c, self._container = getattr(self, "_container", None), None
        if c is not None:
            c.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _pass(self, pull: Optional[Request]) -> Iterator[None]:
        if self._started:
            raise RuntimeError(f"{self.path}: decode pass already run (one pass per VideoSource)")
        self._started = True
        reqs = [r for r in self._requests if r.indices]
        need: dict[int, list[Request]] = {}
        for r in reqs:
            for i in r.indices:
                need.setdefault(i, []).append(r)
        self.stats.frames_needed = len({(i, r.size) for r in reqs for i in r.indices})
        last = max(need) if need else -1
        buffers = {id(r): ([], []) for r in reqs if r.streamed}  # (indices, frames) pending per chunk request
        carried = {id(r): 0 for r in reqs if r.streamed}
        _add(passes=1, frames_needed=self.stats.frames_needed)

        def flush(r: Request, final: bool) -> None:
            idx, frs = buffers[id(r)]
            fresh = len(idx) - carried[id(r)]
            if fresh <= 0 or (fresh < r.chunk and not final):
                return
            r.on_chunk(list(idx), np.stack(frs))
            keep = min(r.overlap, len(idx))
            buffers[id(r)] = (idx[len(idx) - keep:], frs[len(frs) - keep:])
            carried[id(r)] = keep

        decoded = 0
        failed_at = ""
        if last >= 0:
            decode_s = convert_s = 0.0   # summed here, counted once per pass (not a lock per frame)
            container, frames_iter = self._rewound()
            live = [self.path, 0, self.stats.frames_needed]   # read by passes_now (progress)
            with _lock:
                _passes[id(live)] = live
            try:
                while decoded <= last:
                    t = time.perf_counter()
                    try:
                        frame = next(frames_iter)
                    except StopIteration:
                        break
                    except Exception as e:
                        if decoded < MIN_FRAMES_CUT_SHORT or decoded > last:
                            raise DecodeError(f"{self.path}: decoding failed at frame {decoded} ({e})") from e
                        failed_at = f"decoding failed at frame {decoded} ({str(e).strip()[:120]})"
                        break
                    finally:
                        decode_s += time.perf_counter() - t
                    if decoded == 0 and not self.rotation and getattr(frame, "rotation", 0):
                        # the probe could not decode a frame to read it (damaged start): reported, not applied
                        self.rotation = int(frame.rotation) % 360
                        self._warn(f"{self.path}: display rotation {self.rotation} degrees is not applied (no frame "
                                   f"decoded while probing); frames are analysed as stored", decode=False)
                    if getattr(frame, "is_corrupt", False):
                        self.stats.corrupt_frames += 1
                    i = decoded
                    decoded += 1
                    users = need.get(i)
                    if not users:
                        continue
                    converted: dict = {}
                    for r in users:
                        rgb = converted.get(r.size)
                        if rgb is None:
                            t = time.perf_counter()
                            rgb = converted[r.size] = _upright_rgb(frame, r.size, self._quarter_turns)
                            convert_s += time.perf_counter() - t
                        if r.streamed:
                            buffers[id(r)][0].append(i)
                            buffers[id(r)][1].append(rgb)
                            self.stats.peak_chunk_frames = max(self.stats.peak_chunk_frames,
                                                               sum(len(b[0]) for b in buffers.values()))
                            flush(r, final=False)
                        else:
                            r._put(i, rgb)
                    self.stats.frames_converted += len(converted)
                    _add(frames_converted=len(converted))
                    live[1] += len(converted)
                    if pull is not None:  # let the pulling consumer take the chunk just handed out
                        yield None
            finally:
                container.close()
                _add(decode_s=decode_s, convert_s=convert_s)
                with _lock:
                    _passes.pop(id(live), None)
        self.stats.frames_decoded = decoded
        _add(frames_decoded=decoded)
        if decoded < self.n_frames and (decoded <= last or failed_at):   # the pass ran to where the file stops
            self.stats.lost_frames = self.n_frames - decoded
        missing = [i for i in need if i >= decoded]
        if missing and decoded < MIN_FRAMES_CUT_SHORT:
            raise DecodeError(f"{self.path}: the stream ended after {decoded} frames but frame {min(missing)} was "
                              f"needed (the file holds {self.n_frames} frame packets); the file is truncated or "
                              f"corrupt, and fewer than {MIN_FRAMES_CUT_SHORT} frames decode")
        if missing:  # evaluated on what decodes: every request keeps the frames it got, in order
            self._warn(f"{self.path}: {failed_at or 'the stream ended'} after {decoded} of {self.n_frames} frames "
                       f"(the container declares {self.declared_frames or self.n_frames}); evaluated on the "
                       f"{decoded} decoded frames, {len(missing)} requested frames past the end left out")
            for r in reqs:
                kept = [i for i in r.indices if i < decoded]
                if len(kept) < len(r.indices):
                    r.indices = kept
                    r._pos = {i: j for j, i in enumerate(kept)}
                    if r._frames is not None:
                        r._frames = r._frames[:len(kept)]
        if self.stats.corrupt_frames:
            self._warn(f"{self.path}: {self.stats.corrupt_frames} frames decoded with errors that FFmpeg concealed "
                       f"(the picture is damaged, not repaired)")
        for r in reqs:
            if r.streamed:
                flush(r, final=True)
        self.stats.gathered_frames = sum(len(r.indices) for r in reqs if not r.streamed)
        self.done = True
        yield None


def _to_rgb(frame, size: Size) -> np.ndarray:
    if size is None:
        return frame.to_ndarray(format="rgb24")
    w, h = size
    return frame.to_ndarray(format="rgb24", width=int(w), height=int(h), interpolation="AREA")


def _upright_rgb(frame, size: Size, quarter_turns: int) -> np.ndarray:
    """RGB of ``frame`` at ``size`` (W, H, upright), turned ``quarter_turns`` x 90 degrees counter-clockwise (the
    display rotation): swscale converts and resizes the stored picture to the stored orientation of ``size``, numpy
    turns it (a contiguous copy: OpenCV and torch consumers need one)."""
    if not quarter_turns:
        return _to_rgb(frame, size)
    if size is not None and quarter_turns % 2:
        size = (size[1], size[0])
    return np.ascontiguousarray(np.rot90(_to_rgb(frame, size), quarter_turns))


class _FirstFrame:
    """Decodes the probe's first packets until one frame comes out, to read the display rotation: FFmpeg attaches
    the stream's display matrix to every decoded frame (``frame.rotation``, counter-clockwise degrees) and PyAV
    exposes it nowhere else. A few packets per probe; a packet that does not decode ends the attempt (rotation 0,
    the pass then counts the damage)."""

    def __init__(self, stream):
        self.cc, self.rotation, self.done = stream.codec_context, 0, False

    def feed(self, pkt) -> None:
        if self.done:
            return
        try:
            for frame in self.cc.decode(pkt):
                self.rotation = int(round(float(frame.rotation or 0))) % 360
                self.done = True
                return
        except Exception:   # damaged data: no rotation read here
            self.done = True
        if pkt is None:     # flushed: nothing more will come
            self.done = True


_IMAGE_FORMATS = {"image2", "image2pipe", "apng"}


def _cover_art(stream) -> bool:
    """A still picture attached to the file (an MP4's cover art is a one-frame video stream), not a second video."""
    try:
        import av
        return bool(stream.disposition & av.stream.Disposition.attached_pic)
    except Exception:  # noqa: BLE001 - an older PyAV without dispositions: count the stream as a video
        return False


def _describe(stream) -> str:
    cc = stream.codec_context
    frames = f", {int(stream.frames)} frames" if stream.frames else ""
    return f"stream #{stream.index}: {cc.name} {cc.width or 0}x{cc.height or 0}{frames}"


def _probe(p: Path, min_side: int, keep: bool = False) -> dict:
    """What the file holds, without decoding: n_frames (frame packets present), declared_frames, fps (from the
    timestamps), fps_header, times, size (W, H), codec, format, warnings. DecodeError when unusable.

    Every packet is demuxed (read, not decoded): the count is what the file really holds (a container cut short
    declares more) and the timestamps give the frame times (a header can state the wrong rate). ``keep``: the open
    container is returned under ``container`` (the pass reuses it) and ``first_pts`` is the smallest timestamp."""
    import av
    if not p.exists():
        raise DecodeError(f"{p}: file not found")
    if p.is_dir():
        raise DecodeError(f"{p}: is a directory, not a video file")
    if p.stat().st_size == 0:
        raise DecodeError(f"{p}: empty file (0 bytes)")
    try:
        container = av.open(str(p))
    except av.error.EOFError as e:  # a header and nothing after it (a writer that never got a frame)
        raise DecodeError(f"{p}: ends before any frame (zero frames, or a truncated container)") from e
    except Exception as e:
        raise DecodeError(f"{p}: cannot be opened as a video ({e})") from e
    _add(container_opens=1)
    warnings: list[str] = []
    kept = False
    try:
        fmt = container.format.name
        if fmt in _IMAGE_FORMATS or fmt.endswith("_pipe"):
            raise DecodeError(f"{p}: is a still image (format {fmt}), not a video")
        if not container.streams.video:
            raise DecodeError(f"{p}: has no video stream (format {fmt})")
        s = container.streams.video[0]
        w, h = int(s.codec_context.width or 0), int(s.codec_context.height or 0)
        if w < min_side or h < min_side:
            raise DecodeError(f"{p}: frame size {w}x{h} is below the minimum {min_side}x{min_side}")
        others = [v for v in container.streams.video[1:] if not _cover_art(v)]
        if others:  # the pass decodes only the first: a shot stored twice (or a second angle) is not silently dropped
            warnings.append(f"{p}: holds {1 + len(others)} video streams; only the first is scored ({_describe(s)}), "
                            f"the other{'s' if len(others) > 1 else ''} ignored ({'; '.join(map(_describe, others))})")
        rate = s.average_rate or s.guessed_rate or s.base_rate
        fps_header = float(rate) if rate else 0.0
        declared = int(s.frames or 0) or None
        stamps: list[int] = []
        n = 0
        if keep:   # the pass decodes with this codec context: threads are set before it opens
            s.thread_type = "AUTO"
        first = _FirstFrame(s)
        try:
            for pkt in container.demux(s):
                if not pkt.size:
                    continue
                n += 1
                first.feed(pkt)
                t = pkt.pts if pkt.pts is not None else pkt.dts
                if t is not None:
                    stamps.append(int(t))
        except av.error.FFmpegError as e:  # the data stops inside a packet: what came before is what it holds
            warnings.append(f"{p}: reading stopped after {n} frame packets ({str(e).strip()[:120]})")
        if n <= 0:
            raise DecodeError(f"{p}: has zero frames")
        first.feed(None)   # a decoder that holds frames back gives them up on the flush
        rotation = first.rotation
        if declared is not None and n < declared:
            if n < MIN_FRAMES_CUT_SHORT:
                raise DecodeError(f"{p}: the container declares {declared} frames but the file holds {n}; the file "
                                  f"is truncated, and fewer than {MIN_FRAMES_CUT_SHORT} frames are present")
            warnings.append(f"{p}: the container declares {declared} frames but the file holds {n} (cut short or "
                            f"damaged); evaluated on the {n} present")
        times, fps = None, fps_header
        tb = float(s.time_base) if s.time_base else 0.0
        if len(stamps) == n and n >= 2 and tb > 0:
            st = np.sort(np.asarray(stamps, np.int64))
            span = float(st[-1] - st[0]) * tb
            if span > 0 and len(np.unique(st)) == n:
                times = (st - st[0]).astype(np.float64) * tb
                fps_ts = (n - 1) / span
                if fps_header <= 0 or abs(fps_ts / fps_header - 1) > RATE_TOLERANCE:
                    warnings.append(f"{p}: the header states {fps_header:.3f} fps but the timestamps give "
                                    f"{fps_ts:.3f} fps; frame times follow the timestamps")
                    fps = fps_ts
        kept = keep
        return {"n_frames": n, "declared_frames": declared, "fps": fps, "fps_header": fps_header, "times": times,
                "size": (w, h), "codec": s.codec_context.name, "format": fmt, "warnings": warnings,
                "rotation": rotation, "video_streams": 1 + len(others),
                "container": container if keep else None, "first_pts": min(stamps) if stamps else None}
    except DecodeError:
        raise
    except Exception as e:
        raise DecodeError(f"{p}: cannot be read as a video ({e})") from e
    finally:
        if not kept:
            container.close()


# ---------------------------------------------------------------------------------------------- legacy whole clip

@dataclass
class Clip:
    """All frames of one video, RGB uint8 [T,H,W,3], decoded once (legacy: holds every frame)."""

    path: str
    sha256: str
    fps: float
    frames: np.ndarray = field(repr=False)

    @property
    def n_frames(self) -> int:
        return int(self.frames.shape[0])

    @property
    def size(self) -> tuple[int, int]:
        return int(self.frames.shape[2]), int(self.frames.shape[1])  # (W, H)

    @property
    def nbytes(self) -> int:
        return int(self.frames.nbytes)

    def take(self, indices: list[int]) -> np.ndarray:
        return self.frames[indices]

    def even(self, k: int) -> tuple[list[int], np.ndarray]:
        idx = even_indices(self.n_frames, k)
        return idx, self.frames[idx]


def decode_video(path: str | Path) -> Clip:
    """Decode every frame in one pass; raises DecodeError naming the file when it cannot be used."""
    src = VideoSource(path)
    req = src.take(range(src.n_frames), name="decode_video")
    src.run()
    _add(legacy_passes=1, legacy_frames=src.stats.frames_converted)
    return Clip(src.path, src.sha256, src.fps, req.frames)


def _default_max_bytes() -> int:
    return int(os.environ.get("BENCH_CLIP_CACHE_BYTES", str(1 << 30)))


class ClipCache:
    """Per-step LRU of decoded clips keyed by (path, size, mtime), bounded in bytes of frames held.

    ``max_clips`` is accepted for callers written before the byte bound (it caps the count as well). A clip
    larger than ``max_bytes`` is returned but not kept.
    """

    def __init__(self, max_clips: Optional[int] = None, max_bytes: Optional[int] = None) -> None:
        self._max_clips = max_clips
        self.max_bytes = _default_max_bytes() if max_bytes is None else int(max_bytes)
        self._clips: "OrderedDict[tuple, Clip]" = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._clips)

    def get(self, path: str | Path) -> Clip:
        p = Path(path)
        st = p.stat() if p.is_file() else None
        key = (str(path), st.st_size if st else None, st.st_mtime_ns if st else None)
        with self._lock:
            if key in self._clips:
                self._clips.move_to_end(key)
                return self._clips[key]
        clip = decode_video(path)
        with self._lock:
            if clip.nbytes <= self.max_bytes and key not in self._clips:
                self._clips[key] = clip
                self.bytes += clip.nbytes
                while self._clips and (self.bytes > self.max_bytes
                                       or (self._max_clips is not None and len(self._clips) > self._max_clips)):
                    _, old = self._clips.popitem(last=False)
                    self.bytes -= old.nbytes
        return clip
