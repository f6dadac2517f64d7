"""Issue 39 (the daily loop): no absurd ETA early in a run.

A 468-shot run's first partition (16 shots, 7 steps) had opened one shot file 30 s into its first step: the count's
share was 16 x (1/16) / 7 = 0.14 shot, and the ETA from it read 468 / 0.14 x 30 s, about 27 hours (20-47 hours were
seen). A rate and an ETA now need a whole unit of the kind measured; until then they say '-' (and an ETA from other
kinds' measured time is a lower bound, '+'). The measured rate takes over as soon as a whole shot is done."""
from pathlib import Path

from bench_assets.core.runner import Progress


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_no_eta_from_a_fraction_of_a_shot_then_the_measured_rate():
    clock = Clock()
    log: list[str] = []
    p = Progress(468, "entitybench", enabled=False, lines=False, clock=clock, unit="shot",
                 reading=lambda: (len(log), log[-1] if log else ""), opened=lambda n0: (len(log), log[n0:]))
    p.plan("episode", 30, counted=False)
    p.plan("generator x episode", 468, unit="shot")
    p.plan("aggregate", 0, counted=False)
    root = Path("/gen/g")
    p.label("g x episode e1 (16 shots)", "generator x episode", 16, root=str(root))
    p.expect(7)
    p.stage("entitybench_outputs")
    log.append(str(root / "e1" / "shot_01.mp4"))
    clock.t += 30
    p.tick()
    assert 0 < p.partial < 1
    assert p.rate_eta() == "rate -, ETA -"            # was '0.29 shot/min, ETA 27h..'
    # the first step's share done: 16/7 = 2.3 shots in 60 s; the ETA is the measured per-shot time
    log.extend(str(root / "e1" / f"shot_{i:02d}.mp4") for i in range(2, 17))
    clock.t += 30
    p.tick()
    rate, eta = p.rate_eta().split(", ")
    assert rate == "2.29 shot/min"
    left_s = (468 - 16 / 7) * 60 / (16 / 7)
    h, rest = divmod(int(left_s), 3600)
    # '+': the 30 episode partitions are not timed yet, their time comes on top
    assert eta == f"ETA {h}h{rest // 60:02d}m+", (eta, left_s)
