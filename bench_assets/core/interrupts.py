"""Which stop signal arrived, whoever's handler caught it (no dagster import: the CLI loads this before parsing).

Dagster replaces the SIGINT/SIGTERM handlers while it runs: inside a step a signal fails only that step
(DagsterExecutionInterruptedError) and ``materialize(raise_on_error=False)`` returns as from any failure, so the
caller never learnt that the user asked to stop and went on with the next partition. The interpreter's C-level
handler writes every caught signal's number to the wakeup fd before any Python handler runs, so a reader thread
on that pipe records it whichever handler is installed; the runner asks ``received()`` after each run.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from typing import Iterator, Optional

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state: dict = {"sig": None, "at": None}


def received() -> Optional[int]:
    """The first stop signal since ``watching()`` began (SIGINT or SIGTERM), else None."""
    return _state["sig"]


def since() -> Optional[float]:
    """``time.monotonic()`` when that signal arrived."""
    return _state["at"]


def note(signum: int) -> None:
    if _state["sig"] is None and signum in STOP_SIGNALS:
        _state.update(sig=int(signum), at=time.monotonic())


def exit_code(default: int = 130) -> int:
    """128 + the signal's number: 130 for SIGINT (Ctrl-C), 143 for SIGTERM."""
    return 128 + _state["sig"] if _state["sig"] is not None else default


def _reader(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data:  # the write end was closed: watching() ended
            return
        for b in data:
            note(b)


def _raise_keyboard_interrupt(signum, _frame) -> None:
    note(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """Record stop signals for the duration (main thread only; elsewhere a no-op). SIGINT and SIGTERM both raise
    KeyboardInterrupt where Dagster does not hold the handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.update(sig=None, at=None)
    r, w = os.pipe()
    os.set_blocking(w, False)  # the wakeup fd must never block the signal handler
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    old_handlers = {s: signal.signal(s, _raise_keyboard_interrupt) for s in STOP_SIGNALS}
    thread = threading.Thread(target=_reader, args=(r,), name="bench-signals", daemon=True)
    thread.start()
    try:
        yield
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
        signal.set_wakeup_fd(old_fd)
        os.close(w)
        thread.join(timeout=2)
        os.close(r)


def message() -> str:
    """The one line a stopped command prints (the CLI and the runner's hard exit share it)."""
    name = signal.Signals(_state["sig"]).name if _state["sig"] is not None else "SIGINT"
    return (f"interrupted ({name}); rerun resumes: finished partitions are kept, the stopped run is marked failed, "
            f"and no board or report was written from partial tables")


def signal_name() -> str:
    return signal.Signals(_state["sig"]).name if _state["sig"] is not None else "-"
