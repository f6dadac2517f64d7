"""Issue 39: progress moves inside a long shot. The real decode pass (core/media.py ``passes_now``) drives the count
of a Progress wired as `bench evaluate` wires it (media.opened_since, media.last_opened, media.passes_now)."""
from pathlib import Path

import pytest


def test_media_passes_now_follows_a_real_decode_pass_and_moves_the_count(tmp_path):
    """The real decode: a 120-frame shot streamed in chunks of 8 (as Pillar 1 walks a shot), the progress ticked
    after each chunk; the count moves inside the one shot, in tenths, up to the whole shot after the pass."""
    from bench_assets.core import media
    from bench_assets.core.runner import Progress
    from tests.support.media import write
    root = tmp_path / "gen" / "faithful"
    (root / "e1").mkdir(parents=True)
    shot = write(root / "e1" / "shot_01.mp4", 120, "mp4")
    p = Progress(16, "entitybench", clock=lambda: 1000.0, unit="shot", enabled=False, reading=media.last_opened,
                 opened=media.opened_since, frames=media.passes_now)
    p.plan("generator x episode", 16, unit="shot")
    p.label("g x episode e1 (1 shot)", "generator x episode", 1, root=str(root))
    p.expect(1)
    p.stage("entitybench_pillar1")
    assert media.passes_now() == []
    src = media.VideoSource(shot)
    seen, reading = [], []
    for idx, frames in src.iter_chunks(chunk=8):
        assert media.passes_now() == [(str(shot), idx[-1] + 1, 120)]
        p.tick()
        seen.append(p.shown)
        reading.append(p.file_now())
    assert media.passes_now() == []
    p.tick()
    assert seen == sorted(seen) and seen[0] == 0 and len(set(seen)) >= 9, seen   # tenths of the one shot
    assert max(seen) == pytest.approx(0.9) and reading[7] == "e1/shot_01.mp4 frame 64/120", (seen, reading)
    assert p.shown == pytest.approx(0.9)           # whole (1) only when the partition ends
    p.step()
    assert p.done == 1
