"""Durations in words, one way everywhere a wait or an ETA is said (progress, pool-slot waits, sensors)."""


def duration_words(seconds: float) -> str:
    """'1h02m', '3m05s', '7s'."""
    seconds = int(max(seconds, 0))
    h, rest = divmod(seconds, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")
