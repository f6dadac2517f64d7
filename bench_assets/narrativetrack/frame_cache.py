"""The frames of a video decoded once per process: a disk spill keyed by (path, sha256) that every stage reads from.
Decode errors become a Dagster ``Failure`` naming the video (a step with an unreadable video cannot produce a row)."""

import os
from collections import OrderedDict
from typing import Sequence

import numpy as np
import pandas as pd
from dagster import Failure

from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.narrativetrack import framestore


def video_row(df: pd.DataFrame) -> dict:
    return df.iloc[0].to_dict()


def open_video(video: dict) -> VideoSource:
    try:
        return VideoSource(video["path"])
    except DecodeError as e:
        raise Failure(f"video {video['video_id']}: {e}") from None


# (video path, sha256) -> the frames decoded for this video in this process, on disk (framestore.FrameSpill), so a
# later stage (detections, crops, the answerers' evenly spaced frames) reads them back without a second decode pass
# and without holding them in memory; bounded in disk bytes (the current video is never dropped). 2 GiB is ~13 min
# of 720p samples besides the current video: the steps of one run read one video after another, and a long-lived
# process (the test suite, a code server) should not keep every video it ever saw on disk.
_FRAMES: "OrderedDict[tuple, framestore.FrameSpill]" = OrderedDict()
_SPILL_BYTES = int(os.environ.get("BENCH_NT_SPILL_BYTES", str(2 << 30)))
DECODE_CHUNK = 8  # frames handed from the decoder to the spill at a time


def _spilled_bytes() -> int:
    return sum(s.nbytes for s in _FRAMES.values())


def _spill(video: dict, idx: Sequence[int], also: Sequence[int] = ()) -> framestore.FrameSpill:
    """The spill holding at least the frames at ``idx``; one streamed decode pass for the missing ones (and ``also``,
    indices a later stage will ask for), each frame written to disk as it is decoded."""
    key = (video["path"], video.get("sha256"))  # a file rewritten at the same path is another video
    spill = _FRAMES.get(key)
    if spill is None:
        spill = framestore.FrameSpill()
    missing = sorted({int(i) for i in idx} - spill.indices)
    if missing:
        src = open_video(video)

        def put(indices, frames):
            for i, f in zip(indices, frames):
                spill.add(i, f)
        src.chunks(put, indices=sorted(set(missing) | ({int(i) for i in also} - spill.indices)), chunk=DECODE_CHUNK,
                   name="narrativetrack")
        try:
            src.run()
        except DecodeError as e:
            raise Failure(f"video {video['video_id']}: {e}") from None
    _FRAMES[key] = spill
    _FRAMES.move_to_end(key)
    while len(_FRAMES) > 1 and _spilled_bytes() > _SPILL_BYTES:
        _FRAMES.popitem(last=False)  # its file goes when no view reads it any more
    return spill


def frames_at(video: dict, idx: Sequence[int], also: Sequence[int] = ()) -> np.ndarray:
    """Only the frames at ``idx`` (native indices), stacked in memory: for a few frames (the answerer's). From one
    streamed decode pass that keeps nothing else in memory; ``also``: indices a later stage will ask for, decoded in
    the same pass. Frames already decoded for this video in this process are not decoded again."""
    spill = _spill(video, idx, also)
    want = [int(i) for i in idx]
    return np.stack([spill.get(i) for i in want]) if want else np.zeros((0, 0, 0, 3), np.uint8)


def frame_view(video: dict, idx: Sequence[int], also: Sequence[int] = ()) -> framestore.FrameView:
    """The frames at ``idx`` as a sequence read from disk one at a time (memory flat in the number of samples)."""
    return framestore.FrameView(_spill(video, idx, also), idx)


def sampled_frames(video: dict, frames_df: pd.DataFrame) -> tuple[framestore.FrameView, list[float], list[int]]:
    idx = [int(i) for i in frames_df.sort_values("sample")["frame_index"]]
    return frame_view(video, idx), [float(t) for t in frames_df.sort_values("sample")["t"]], idx
