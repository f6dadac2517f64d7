"""Progress in units users know (issue 26 item 3): `bench evaluate` counts the shots (EntityBench, ViStoryBench) or
videos (MBench, LoCoT2V, NarrativeTrack) scored, with a rate in them and an ETA, naming the partition (with its shot
count) and the stage running; plain timestamped lines off a terminal, a tqdm bar on one. Inside a partition the
count moves in tenths of a shot (the distinct shot files its steps open, and inside the shot being decoded the
frames its pass has converted), below the partition's total until it ends.

The end-to-end test runs the real console script on a two-episode EntityBench world (6 + 10 shots, one generator,
one cheap metric) with stderr on a pipe, and checks its progress lines exactly."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
BENCH = str(Path(sys.executable).parent / "bench")


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _shots_progress(clock, **kw):
    """The plan `bench evaluate` makes for 2 episodes (6 and 10 shots) x 1 generator, no aggregate."""
    from bench_assets.core.runner import Progress
    p = Progress(16, "entitybench", clock=clock, unit="shot", **kw)
    p.plan("episode", 2, counted=False)
    p.plan("generator x episode", 16, unit="shot")
    p.plan("aggregate", 0, counted=False)
    return p


def _episodes_up_to_date(p) -> None:
    for e in ("e1", "e2"):
        p.label(f"episode {e}", "episode")
        p.step()


def test_lines_count_shots_with_rate_and_eta(capsys):
    clock = Clock()
    p = _shots_progress(clock, enabled=False)
    for e in ("e1", "e2"):             # dataset partitions: timed, but they score no shot
        p.label(f"episode {e}", "episode")
        p.stage("entitybench_episode")
        clock.t += 1
        p.step()
    p.label("g x episode e1 (6 shots)", "generator x episode", 6)
    p.stage("entitybench_outputs")
    clock.t += 60
    p.step()                           # 6 shots in 60 s: 6 shots/min; 10 shots left: 100 s
    p.label("g x episode e2 (10 shots)", "generator x episode", 10)
    p.stage("entitybench_pillar1")
    clock.t += 40                      # 40 s into the 100 s it should take
    p.tick()                           # a heartbeat is 30 s after the last line
    clock.t += 20
    p.step()
    p.close()
    err = capsys.readouterr().err.splitlines()
    body = [re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", ln) for ln in err]
    assert len(body) == len(err) == 6 and all(b != ln for b, ln in zip(body, err)), err   # every line stamped
    assert body == [
        "entitybench 0/16 shots, 0s elapsed, rate -, ETA - | episode e1: entitybench_episode",
        # the dataset partition's time is known, the shots' not yet: a lower bound
        "entitybench 0/16 shots, 1s elapsed, rate -, ETA 1s+ | episode e2: entitybench_episode",
        "entitybench 0/16 shots, 2s elapsed, rate -, ETA - | g x episode e1 (6 shots): entitybench_outputs",
        "entitybench 6/16 shots, 1m02s elapsed, 6.00 shot/min, ETA 1m40s | g x episode e2 (10 shots): "
        "entitybench_pillar1",
        "entitybench 6/16 shots, 1m42s elapsed, 6.00 shot/min, ETA 1m00s | g x episode e2 (10 shots): "
        "entitybench_pillar1 (still running)",
        "entitybench 16/16 shots, 2m02s elapsed, 8.00 shot/min, ETA 0s | done",
    ], body


def test_a_failed_item_counts_its_shots_done_without_timing_them(capsys):
    clock = Clock()
    p = _shots_progress(clock, enabled=False)
    _episodes_up_to_date(p)
    p.label("g x episode e1 (6 shots)", "generator x episode", 6)   # its dataset partition failed: skipped
    p.step()
    assert p.done == 6 and p.rate_eta() == "rate -, ETA -"
    p.label("g x episode e2 (10 shots)", "generator x episode", 10)
    p.stage("entitybench_outputs")
    clock.t += 50
    p.step()
    assert (p.done, p.status()) == (16, "entitybench 16/16 shots, 50s elapsed, 12.00 shot/min, ETA 0s")


def test_terminal_bar_counts_shots_and_names_rate_eta_item_and_stage(capsys):
    clock = Clock()
    p = _shots_progress(clock, enabled=True)
    assert p.bar is not None and p.lines is False
    _episodes_up_to_date(p)
    p.label("g x episode e1 (6 shots)", "generator x episode", 6)
    p.stage("entitybench_outputs")
    clock.t += 60
    p.step()
    p.label("g x episode e2 (10 shots)", "generator x episode", 10)
    p.stage("entitybench_pillar1")
    clock.t += 30
    p.tick()
    text = capsys.readouterr().err
    p.close()
    assert "entitybench 6/16 shots |" in text, text
    assert re.search(r"\| \d\d:\d\d, 6.00 shot/min, ETA 1m10s \| g x episode e2 \(10 shots\) \| entitybench_pillar1",
                     text), text
    assert "[" not in text.split("entitybench", 1)[0]   # a bar, not timestamped lines


def test_heartbeat_and_bar_name_the_shot_file_the_stage_is_reading(capsys):
    clock = Clock()
    opened = {"n": 5, "path": "/gen/faithful/e0001/shot_05.mp4"}   # opened by an earlier stage
    reading = lambda: (opened["n"], opened["path"])  # noqa: E731
    p = _shots_progress(clock, enabled=False, reading=reading)
    _episodes_up_to_date(p)
    p.label("g x episode e2 (10 shots)", "generator x episode", 10)
    p.stage("entitybench_pillar1")
    clock.t += 31
    p.tick()                                                      # nothing opened by this stage yet
    opened.update(n=7, path="/gen/faithful/e0002/shot_02.mp4")    # it opened two shots
    clock.t += 31
    p.tick()
    bar = _shots_progress(clock, enabled=True, reading=reading)
    bar.label("g x episode e2 (10 shots)", "generator x episode", 10)
    bar.stage("entitybench_pillar1")
    opened.update(n=8, path="/gen/faithful/e0002/shot_03.mp4")
    bar.tick()
    bar.close()
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "still running" in ln]
    assert [ln.split(" | ", 1)[1] for ln in lines] == [
        "g x episode e2 (10 shots): entitybench_pillar1 (still running)",
        "g x episode e2 (10 shots): entitybench_pillar1 (still running, reading e0002/shot_02.mp4)"], lines
    assert "| g x episode e2 (10 shots) | entitybench_pillar1 | e0002/shot_03.mp4" in err, err


def _opened_log():
    """A fake media.opened_since / last_opened over a list of the paths opened, in order."""
    log: list[str] = []
    return log, (lambda n0: (len(log), log[n0:])), (lambda: (len(log), log[-1] if log else ""))


def test_the_count_moves_shot_by_shot_inside_a_partition(capsys):
    """Each of a partition's stages is an equal share of its shots, filled by the distinct shot files under the
    generator's folder the stage opened; tenths of a shot shown, never the partition's total before it ends."""
    clock = Clock()
    log, opened, reading = _opened_log()
    root = Path("/gen/faithful")
    p = _shots_progress(clock, enabled=False, reading=reading, opened=opened)
    _episodes_up_to_date(p)
    p.label("g x episode e1 (6 shots)", "generator x episode", 6, root=str(root))
    p.expect(2)                                   # two steps to run: 3 shots' worth each
    p.stage("entitybench_outputs")
    log += [str(root / "e1" / f"shot_0{i}.mp4") for i in (1, 2, 3)]
    log += [str(root / "e1" / "shot_01.mp4"), "/data/refs/x.mp4"]   # opened again; not the generator's: no shot
    clock.t += 6
    p.tick()                                      # 3/6 of the first half: 1.5 shots shown; rate 1.5 in 6 s
    log += [str(root / "e1" / f"shot_0{i}.mp4") for i in (4, 5, 6)]
    clock.t += 2
    p.tick()                                      # 3 shots: moved, but a line at most every COUNT_LINE_S (5 s)
    clock.t += 3
    p.tick()
    p.stage("entitybench_pillar1")                # the second half starts at 3
    log += [str(root / "e1" / f"shot_0{i}.mp4") for i in range(1, 7)]
    clock.t += 10
    p.tick()                                      # both halves full: 6 shots' worth, shown 5.9 until it ends
    assert (p.shown, p.done) == (pytest.approx(5.9), 0)
    clock.t += 4
    p.step()
    assert (p.shown, p.done) == (0, 6)
    p.label("g x episode e2 (10 shots)", "generator x episode", 10, root=str(root))   # up to date
    p.step()
    p.close()
    body = [re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", ln) for ln in capsys.readouterr().err.splitlines()]
    assert body == [
        "entitybench 0/16 shots, 0s elapsed, rate -, ETA - | g x episode e1 (6 shots): entitybench_outputs",
        # 14.5 shots left at 1.5 per 6 s
        "entitybench 1.5/16 shots, 6s elapsed, 15.00 shot/min, ETA 58s | g x episode e1 (6 shots): "
        "entitybench_outputs (still running, reading refs/x.mp4)",
        "entitybench 3/16 shots, 11s elapsed, 16.36 shot/min, ETA 47s | g x episode e1 (6 shots): "
        "entitybench_outputs (still running, reading e1/shot_06.mp4)",
        "entitybench 3/16 shots, 11s elapsed, 16.36 shot/min, ETA 47s | g x episode e1 (6 shots): entitybench_pillar1",
        # 6 shots' worth in 21 s: 10 left take 35 s; the count shows 5.9 until the partition ends
        "entitybench 5.9/16 shots, 21s elapsed, 17.14 shot/min, ETA 35s | g x episode e1 (6 shots): "
        "entitybench_pillar1 (still running, reading e1/shot_06.mp4)",
        "entitybench 16/16 shots, 25s elapsed, 14.40 shot/min, ETA 0s | done",
    ], body


def test_the_bar_moves_inside_a_partition_and_never_passes_its_total(capsys):
    clock = Clock()
    log, opened, reading = _opened_log()
    p = _shots_progress(clock, enabled=True, reading=reading, opened=opened)
    _episodes_up_to_date(p)
    seen = []
    for item, n in (("e1", 6), ("e2", 10)):
        p.label(f"g x episode {item} ({n} shots)", "generator x episode", n, root="/gen/faithful")
        p.expect(3)
        for stage in ("entitybench_outputs", "entitybench_grounding", "entitybench_fidelity"):
            p.stage(stage)
            for i in range(1, n + 1):
                log.append(f"/gen/faithful/{item}/shot_{i:02d}.mp4")
                clock.t += 1
                p.tick()
                seen.append(p.bar.n)
            log.append(f"/gen/faithful/{item}/shot_01.mp4")   # a stage opening a shot twice adds nothing
            p.tick()
            seen.append(p.bar.n)
        assert p.bar.n == pytest.approx((6 if item == "e1" else 16) - 0.1)   # every shot read: a tenth short
        p.step()
        seen.append(p.bar.n)
    assert seen == sorted(seen) and max(seen) == 16 and seen[-1] == 16 and seen.count(16) == 1, seen
    # e1's first stage (a third of each of its 6 shots per file opened, and the file opened twice): in tenths
    assert seen[:7] == [0.3, 0.6, 1, 1.3, 1.6, 2, 2], seen[:7]
    text = capsys.readouterr().err
    p.close()
    assert "entitybench 3/16 shots |" in text and "entitybench 16/16 shots |" in text, text


def test_the_count_moves_frame_by_frame_inside_a_long_shot(capsys):
    """Issue 39: a long shot moved the count only when it was done ('0/468' for minutes). With the decode passes
    running now (media.passes_now), a shot being read fills with its frames converted, in tenths of a shot; a file
    counts whole once its pass ends (a file only probed, once the next opens); the rate and ETA still wait for one
    whole shot. A reader that decodes the next shot ahead runs two passes: both count."""
    clock = Clock()
    log, opened, reading = _opened_log()
    live = {"now": []}
    root = Path("/gen/faithful")
    p = _shots_progress(clock, enabled=False, reading=reading, opened=opened, frames=lambda: live["now"])
    _episodes_up_to_date(p)
    p.label("g x episode e1 (6 shots)", "generator x episode", 6, root=str(root))
    p.expect(1)
    p.stage("entitybench_pillar1")
    shot1, shot2, shot3 = (str(root / "e1" / f"shot_0{i}.mp4") for i in (1, 2, 3))
    log.append(shot1)
    p.tick()
    assert p.shown == 0                            # opened, its pass not started: nothing done yet
    seen = []
    for done in (0, 96, 240, 470):                 # a 480-frame shot, decoded and scored chunk by chunk
        live["now"] = [(shot1, done, 480)]
        clock.t += 60
        p.tick()
        seen.append(p.shown)
    assert seen == [0, pytest.approx(0.2), pytest.approx(0.5), pytest.approx(0.9)], seen
    assert p.status().endswith("rate -, ETA -")   # less than one whole shot measured: no rate, no ETA
    assert p.file_now() == "e1/shot_01.mp4 frame 470/480"
    log.append(shot2)                              # opened ahead while shot 1's pass still runs: no jump
    live["now"] = [(shot1, 475, 480), (shot2, 48, 480)]
    p.tick()
    assert p.shown == pytest.approx(1.0)           # 0.99 + 0.1
    live["now"] = [("/data/refs/x.mp4", 5, 10), (shot2, 144, 480)]   # shot 1's pass ended; a reference's runs
    clock.t += 30
    p.tick()
    assert p.shown == pytest.approx(1.3)
    # 1.3 shots in 270 s: a rate now, and the ETA of the 14.7 shots left at it
    assert p.status() == "entitybench 1.3/16 shots, 4m30s elapsed, 0.29 shot/min, ETA 50m53s"
    live["now"] = []                               # shot 2's pass ended: whole
    p.tick()
    assert p.shown == 2
    log.append(shot3)                              # only probed: counts when the next file opens
    p.tick()
    assert p.shown == 2
    log.append(str(root / "e1" / "shot_04.mp4"))
    p.tick()
    assert p.shown == 3
    p.step()
    assert (p.shown, p.done) == (0, 6)
    p.close()
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "still running" in ln]
    assert any(" 0.5/16 shots, " in ln and "reading e1/shot_01.mp4 frame 240/480" in ln for ln in lines), lines


def test_a_step_that_opens_no_video_shows_its_model_passes(capsys):
    """A step that reads frames from the cache or crops (no file opened, nothing decoded) moves the count only when
    the next step starts; its heartbeat and the bar still show it working: its model passes so far."""
    clock = Clock()
    forwards = {"n": 1000}                         # the process's model forwards (earlier steps' included)
    p = _shots_progress(clock, enabled=False, passes=lambda: forwards["n"])
    _episodes_up_to_date(p)
    p.label("g x episode e1 (6 shots)", "generator x episode", 6)
    p.stage("entitybench_fidelity")
    assert p.work_now() == ""
    forwards["n"] += 1
    assert p.work_now() == "1 model pass"
    forwards["n"] += 411
    clock.t += 31
    p.tick()
    bar = _shots_progress(clock, enabled=True, passes=lambda: forwards["n"])
    bar.label("g x episode e1 (6 shots)", "generator x episode", 6)
    bar.stage("entitybench_fidelity")
    forwards["n"] += 7
    bar.tick()
    bar.close()
    err = capsys.readouterr().err
    assert "g x episode e1 (6 shots): entitybench_fidelity (still running, 412 model passes)" in err, err
    assert "| g x episode e1 (6 shots) | entitybench_fidelity | 7 model passes" in err, err


def test_media_opened_since_lists_the_paths_opened_after_a_count(tmp_path):
    from bench_assets.core import media
    from tests.support.media import write
    a, b = write(tmp_path / "a.mp4", 10, "mp4"), write(tmp_path / "b.mp4", 10, "mp4")
    n0, _ = media.last_opened()
    media.VideoSource(a)
    media.VideoSource(b)
    media.VideoSource(a)
    assert media.opened_since(n0) == (n0 + 3, [str(a), str(b), str(a)])
    assert media.opened_since(n0 + 2) == (n0 + 3, [str(a)])
    assert media.opened_since(n0 + 3) == (n0 + 3, [])


def test_media_names_the_last_video_opened(tmp_path):
    from bench_assets.core import media
    from tests.support.media import write
    n0, _ = media.last_opened()
    media.VideoSource(write(tmp_path / "a.mp4", 10, "mp4"))
    assert media.last_opened() == (n0 + 1, str(tmp_path / "a.mp4"))


def test_without_units_it_counts_partitions():
    """validity suites and callers that pass no unit keep the partition count."""
    from bench_assets.core.runner import Progress
    p = Progress(3, "mbench", enabled=False, lines=False)
    p.plan("case", 3)
    p.label("case a", "case")
    p.step()
    assert p.status().startswith("mbench 1/3 partitions, ")


def test_each_benchmark_names_its_unit_and_counts_it_from_the_dataset():
    from bench_assets.benchmarks import BENCHMARKS
    from bench_resources.paths import BenchPaths
    paths = BenchPaths(data_root=str(DATA))
    got = {n: BENCHMARKS[n].unit for n in BENCHMARKS}
    assert got == {"entitybench": "shot", "vistorybench": "shot", "mbench": "video", "locot2v": "video",
                   "narrativetrack": "video"}
    eb = BENCHMARKS["entitybench"]
    import json
    for e in ("e0001", "e0006"):
        shots = json.loads((DATA / "entitybench" / "episodes" / f"{e}.json").read_text())["shots"]
        assert eb.units_of(paths, e) == len(shots)
    vb = BENCHMARKS["vistorybench"]
    assert [vb.units_of(paths, s) for s in vb.item_ids(paths)] == [6, 5, 6]


def _world(tmp: Path) -> Path:
    data = tmp / "data"
    (data / "entitybench" / "episodes").mkdir(parents=True)
    gen = data / "generators" / "faithful"
    for e in ("e0001", "e0002"):
        shutil.copy(DATA / "entitybench" / "episodes" / f"{e}.json", data / "entitybench" / "episodes")
        shutil.copytree(DATA / "generators" / "faithful" / e, gen / e)
    shutil.copy(DATA / "generators" / "faithful" / "generator.yaml", gen)
    return data


LINE = re.compile(r"^\[(\d\d):(\d\d):(\d\d)\] entitybench (\d+(?:\.\d)?)/16 shots, (\S+) elapsed, "
                  r"(rate -|(\d+\.\d\d) shot/min), ETA (-|(?:(\d+)m)?(\d+)s) \| (.*)$")


@pytest.mark.slow
def test_bench_evaluate_off_a_terminal_prints_shots_rate_eta_item_and_stage(tmp_path):
    data = _world(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_") and k != "DAGSTER_HOME"}
    env.update(BENCH_STORE_ROOT=str(tmp_path / "store"), DAGSTER_HOME=str(tmp_path / "home"), BENCH_JUDGE_MODE="off",
               BENCH_DATA_ROOT=str(data), BENCH_GENERATORS_ROOT=str(data / "generators"))
    # one metric (outputs, grounding, fidelity per partition) keeps the run short; progress is the same
    proc = subprocess.run([BENCH, "evaluate", "--benchmark", "entitybench", "--generator",
                           str(data / "generators" / "faithful"), "--metric", "intra_face_fidelity"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [m for ln in proc.stderr.splitlines() if (m := LINE.match(ln))]
    assert lines, proc.stderr[-3000:]
    tail = [m.group(11) for m in lines]
    # the dataset partitions, then each scored partition named with its shots and every stage it ran
    assert tail[:2] == ["episode e0001: entitybench_episode", "episode e0001: entitybench_entity_registry"], tail
    stages = ["entitybench_outputs", "entitybench_grounding", "entitybench_fidelity"]
    first = [t for t in tail if t.startswith("faithful x episode e0001 (6 shots): ")]
    second = [t for t in tail if t.startswith("faithful x episode e0002 (10 shots): ")]
    assert [t.split(": ")[1] for t in first if "still running" not in t] == stages, tail
    assert [t.split(": ")[1] for t in second if "still running" not in t] == stages, tail
    assert tail[-1] == "done"
    counts = [float(m.group(4)) for m in lines]
    assert counts == sorted(counts) and counts[-1] == 16
    # the count moves inside each scored partition, in tenths of a shot as its steps open the shot files and
    # decode their frames, and reaches the partition's total only when it ends: e0001 shows 0..5.9 of its 6, e0002
    # 6..15.9 (6 + its 10 less a tenth)
    within = {e: [float(m.group(4)) for m in lines if m.group(11).startswith(f"faithful x episode {e}")]
              for e in ("e0001", "e0002")}
    assert all(0 <= c <= 5.9 for c in within["e0001"]) and len(set(within["e0001"])) >= 2, within
    assert all(6 <= c <= 15.9 for c in within["e0002"]) and len(set(within["e0002"])) >= 2, within
    for m in lines:
        t = m.group(11)
        count = float(m.group(4))
        if t.startswith("episode ") or (t.startswith("faithful x episode e0001") and count < 1):
            # less than one whole shot measured: no rate, no ETA (a fraction of the first shot read 20-47 hours)
            assert (m.group(6), m.group(8)) == ("rate -", "-"), m.group(0)
            assert count == 0 or not t.startswith("episode "), m.group(0)   # a dataset partition scores no shot
        elif t.startswith("faithful x episode "):
            # shots done (inside the partition too): a rate from them, and an ETA for the shots left that is no
            # more than they take at that rate
            assert m.group(7) is not None and m.group(8) != "-", m.group(0)
            rate, eta = float(m.group(7)), int(m.group(9) or 0) * 60 + int(m.group(10))
            # (e0001's first shots may come within a second: a first ETA of 0s is its truncation, not a claim)
            assert (0 if t.startswith("faithful x episode e0001") else 1) <= eta <= (16 - count) * 60 / rate + 1, \
                m.group(0)
    last = lines[-1]
    assert last.group(4) == "16" and last.group(7) is not None and last.group(8) == "0s", last.group(0)
    assert "intra_face_fidelity" in proc.stdout
    # the same command on a terminal (nothing left to do): a tqdm bar in shots, no timestamped lines
    err = _on_a_terminal([BENCH, "evaluate", "--benchmark", "entitybench", "--generator",
                          str(data / "generators" / "faithful"), "--metric", "intra_face_fidelity"], env)
    frames = [f for f in re.split(r"[\r\n]", err) if f.strip()]
    assert any(re.match(r"^entitybench 16/16 shots \|█+\| \d\d:\d\d", f) for f in frames), frames
    assert any(f.startswith("entitybench 0/16 shots |") for f in frames), frames
    assert not any(LINE.match(f) for f in frames), frames


def _on_a_terminal(cmd: list[str], env: dict) -> str:
    """Run ``cmd`` with stderr on a pseudo-terminal (stdout on a pipe); everything it wrote to the terminal."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))   # 160 columns, as a terminal has
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:   # EIO: every writer has closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.wait(timeout=300)
    proc.stdout.read()
    assert proc.returncode == 0, b"".join(chunks).decode(errors="replace")[-2000:]
    return b"".join(chunks).decode(errors="replace")
