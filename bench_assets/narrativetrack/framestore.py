"""The sampled frames of a video, decoded once per process and kept on disk, not in memory (issue 16).

Every pipeline stage needs native pixels of the 1 fps samples (the detector its input, ReID / faces / colours their
crops, the offline scene its thumbnails), and the stages are separate Dagster steps. Holding the samples in RAM
costs ~2.6 MB per second of 720p video for the whole run; decoding again in every step costs a pass per step. So the
one decode pass writes each needed frame, as it is decoded, to a raw file (``FrameSpill``), and every stage reads
them back one at a time through a ``FrameView`` that holds at most ``HOLD`` frames: memory is flat in video length
and the pixels are bit-identical to an in-memory decode (no value downstream changes)."""
from __future__ import annotations

import os
import tempfile
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Iterator, Optional

import numpy as np

HOLD = 4  # frames a view keeps decoded in memory: the consumers ask for one sample's boxes in a row


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def spill_dir() -> str:
    """Where spills go: ``BENCH_NT_SPILL_DIR`` or the system temp dir."""
    return os.environ.get("BENCH_NT_SPILL_DIR") or tempfile.gettempdir()


class FrameSpill:
    """Frames (native index -> RGB uint8 array) appended to one raw file.

    The file is unlinked the moment it is made and only the open descriptor reaches it, so its disk space goes back
    when the descriptor closes: when the spill is garbage collected (a view still reading it keeps it alive), or when
    the process ends in any way. A name on disk would outlive a Dagster step that leaves by ``os._exit`` or a kill,
    where no finalizer runs: CI once filled its disk with such leftovers."""

    def __init__(self, directory: Optional[str] = None) -> None:
        fd, path = tempfile.mkstemp(prefix="nt-frames-", suffix=".raw", dir=directory or spill_dir())
        os.unlink(path)
        self.fd = fd
        self.label = f"{path} (unlinked)"  # names the spill in error messages only
        self._where: dict[int, tuple[int, tuple]] = {}
        self._end = 0
        self._finalizer = weakref.finalize(self, _close, fd)

    def __contains__(self, index: int) -> bool:
        return int(index) in self._where

    def __len__(self) -> int:
        return len(self._where)

    @property
    def indices(self) -> set[int]:
        return set(self._where)

    @property
    def nbytes(self) -> int:
        """Bytes on disk (none of them in memory)."""
        return self._end

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def add(self, index: int, frame: np.ndarray) -> None:
        index = int(index)
        if index in self._where:
            return
        a = np.ascontiguousarray(frame, dtype=np.uint8)
        view, off = memoryview(a).cast("B"), self._end
        while view:  # pwrite may write less than asked
            n = os.pwrite(self.fd, view, off)
            view, off = view[n:], off + n
        self._where[index] = (self._end, a.shape)
        self._end += a.nbytes

    def get(self, index: int) -> np.ndarray:
        off, shape = self._where[int(index)]
        a = np.empty(shape, np.uint8)  # writable, as np.fromfile gave
        view, got = memoryview(a).cast("B"), 0
        while got < a.nbytes:
            n = os.preadv(self.fd, [view[got:]], off + got)
            if n <= 0:
                raise OSError(f"{self.label}: frame {index} cut short on disk")
            got += n
        return a

    def close(self) -> None:
        self._finalizer()


class FrameView(Sequence):
    """Sample k -> the native frame at ``indices[k]``, read from the spill when asked; at most ``hold`` frames held.
    ``peak_held_bytes`` says the most frame bytes it ever held at once (tests pin it flat in video length)."""

    def __init__(self, spill: FrameSpill, indices: Sequence[int], hold: int = HOLD) -> None:
        missing = [int(i) for i in indices if int(i) not in spill]
        if missing:
            raise KeyError(f"frames {missing[:5]} were not decoded into this spill")
        self.spill, self.indices, self.hold = spill, [int(i) for i in indices], max(1, hold)
        self._held: "OrderedDict[int, np.ndarray]" = OrderedDict()
        self.peak_held_bytes = 0
        self.reads = 0

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, k):
        if isinstance(k, slice):
            raise TypeError("FrameView is read one frame at a time (slicing would hold many)")
        k = int(k)
        if k < 0:
            k += len(self.indices)
        if not 0 <= k < len(self.indices):
            raise IndexError(k)
        f = self._held.get(k)
        if f is None:
            f = self.spill.get(self.indices[k])
            self.reads += 1
            self._held[k] = f
            while len(self._held) > self.hold:
                self._held.popitem(last=False)
            self.peak_held_bytes = max(self.peak_held_bytes, sum(a.nbytes for a in self._held.values()))
        else:
            self._held.move_to_end(k)
        return f

    def __iter__(self) -> Iterator[np.ndarray]:
        for k in range(len(self.indices)):
            yield self[k]

    def chunks(self, size: int) -> Iterator[list[np.ndarray]]:
        """Consecutive samples, ``size`` at a time (a model's batch); the caller drops each before the next."""
        for s in range(0, len(self.indices), max(1, size)):
            yield [self.spill.get(i) for i in self.indices[s:s + size]]
