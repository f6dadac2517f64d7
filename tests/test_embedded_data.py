"""The embedded world: valid episodes, decodable shots, byte-for-byte regeneration, known behaviours."""
import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from bench_assets.core.media import decode_video
from bench_assets.entitybench import dataset as D

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
GENS = ("faithful", "drift", "swap", "static")


def _script():
    spec = importlib.util.spec_from_file_location("make_embedded_data", ROOT / "scripts" / "make_embedded_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def episodes():
    return [D.load_episode(p) for p in sorted((DATA / "entitybench" / "episodes").glob("*.json"))]


def test_episodes_cover_tiers_and_long_gaps(episodes):
    assert len(episodes) >= 6
    assert {e.tier for e in episodes} == {"easy", "medium", "hard"}
    assert max(len(e.shots) for e in episodes) >= 30
    assert max(D.episode_statistics(e)["recurrence_gap_max"] for e in episodes) >= 20
    for e in episodes:
        assert e.tier == D.tier_for(len(e.shots)) and not e.warnings
        types = {x.type for x in e.entities}
        assert types == {"character", "object", "location"}


def test_every_shot_decodes(episodes):
    for g in GENS:
        for e in episodes[:2]:
            for s in e.shots:
                clip = decode_video(DATA / "generators" / g / e.episode_id / f"shot_{s.index:02d}.mp4")
                assert clip.frames.shape == (12, 144, 256, 3) and clip.fps == pytest.approx(8.0)
    n = sum(len(e.shots) for e in episodes)
    for g in GENS:
        assert len(list((DATA / "generators" / g).rglob("shot_*.mp4"))) == n


def test_regeneration_is_byte_for_byte(tmp_path):
    """Text regenerates byte for byte; media to the same pixels within scripts/datagen.py's stated tolerance
    (OpenCV's float paths differ in low bits between CPUs, and the encoder turns that into other bytes)."""
    import sys
    sys.path.insert(0, str(DATA.parent / "scripts"))
    from datagen import same_media

    mod = _script()
    eps = mod.build_episodes()
    mod.write_episode(tmp_path, eps[0])
    n = 0
    for f in sorted(tmp_path.rglob("*")):
        if f.is_file():
            committed = DATA / f.relative_to(tmp_path)
            n += 1
            same = hashlib.sha256(f.read_bytes()).digest() == hashlib.sha256(committed.read_bytes()).digest()
            assert same or same_media(f, committed), f
    assert n > 10


def test_known_behaviours(episodes):
    e = next(x for x in episodes if len(x.shots) >= 30)
    static = decode_video(DATA / "generators" / "static" / e.episode_id / "shot_01.mp4").frames.astype(int)
    faithful = decode_video(DATA / "generators" / "faithful" / e.episode_id / "shot_01.mp4").frames.astype(int)
    assert np.abs(static[1:] - static[:-1]).mean() < 0.5
    assert np.abs(faithful[1:] - faithful[:-1]).mean() > 5
    swap = json.loads((DATA / "entitybench" / "groundtruth" / "swap" / f"{e.episode_id}.json").read_text())
    swapped = [b for s in swap["shots"] for b in s["frames"][0]["entities"] if b["rendered_as"] != b["entity_id"]]
    assert swapped
    drift = json.loads((DATA / "entitybench" / "groundtruth" / "drift" / f"{e.episode_id}.json").read_text())
    levels = {}
    for s in drift["shots"]:
        for b in s["frames"][0]["entities"]:
            levels[(s["shot"], b["entity_id"])] = b["drift_level"]
    # appearances after long gaps drift more than appearances in the next shot
    after = {}
    for x in (x for x in e.entities if x.type != "location"):
        app = e.appearances(x.id)
        for prev, k in zip(app, app[1:]):
            after.setdefault(k - prev, []).append(levels[(k, x.id)])
    long_gap = max(after)
    assert long_gap >= 10 and min(after[long_gap]) > max(after[1])
