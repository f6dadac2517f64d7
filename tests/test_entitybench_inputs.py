"""Issue 18 (items 4 and 6) for EntityBench inputs: every bad shot or episode gives one clear error naming it,
and its neighbours still score."""
import json

import cv2
import numpy as np
import pytest

from bench_assets.entitybench import outputs as OUT
from bench_assets.entitybench import pillar1 as PL
from bench_assets.entitybench import counts as C
from bench_assets.entitybench import dataset as D


def write_mp4(path, n=10, size=(48, 32), seed=0):
    rng = np.random.default_rng(seed)
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 8.0, size)
    assert w.isOpened()
    base = (rng.random((size[1], size[0] + 2 * n, 3)) * 255).astype(np.uint8)
    for i in range(n):
        w.write(np.ascontiguousarray(base[:, 2 * i:2 * i + size[0]]))
    w.release()


def ep_with(n):
    return D.parse_episode({"episode_id": "e0001", "entities": [{"id": "c1", "type": "character", "name": "Ann",
                                                                 "description": "a woman"}],
                            "shots": [{"index": k, "cut": True, "entities": ["c1"], "action": "waves"}
                                      for k in range(1, n + 1)]})


def test_bad_shots_each_get_one_clear_error_and_neighbours_score(tmp_path):
    """Old: the 2x2 video turned all six Pillar 1 metrics into NaN, the PNG renamed .mp4 was a one-frame video,
    the folder shot_04.mp4 was 'file not found' and the .gif shot 'missing'."""
    folder = tmp_path / "g" / "e0001"
    folder.mkdir(parents=True)
    write_mp4(folder / "shot_01.mp4")
    write_mp4(folder / "shot_02.mp4", size=(2, 2))                        # 2x2 video
    (folder / "shot_03.mp4").write_bytes(cv2.imencode(".png", np.zeros((64, 64, 3), np.uint8) + 90)[1].tobytes())  # PNG named .mp4
    (folder / "shot_04.mp4").mkdir()                                      # a folder
    from PIL import Image
    frames = [Image.fromarray((np.random.default_rng(i).random((32, 40, 3)) * 255).astype(np.uint8)) for i in range(6)]
    frames[0].save(folder / "shot_05.gif", save_all=True, append_images=frames[1:], duration=125, loop=0)
    write_mp4(folder / "shot_06.mp4", seed=1)
    ep = ep_with(6)
    rows = {r["shot"]: r for r in OUT.output_rows(ep, folder, "g")}
    assert rows[1]["error"] is None and rows[6]["error"] is None
    assert "shot 2" in rows[2]["error"] and "2x2" in rows[2]["error"] and "minimum" in rows[2]["error"]
    assert "shot 3" in rows[3]["error"] and "still image" in rows[3]["error"]
    assert "shot 4" in rows[4]["error"] and "is a directory, not a video" in rows[4]["error"]
    assert rows[5]["error"] is None and rows[5]["n_frames"] == 6  # the .gif is found and decoded
    errors = {k: r["error"] for k, r in rows.items() if r["error"]}
    paths = {k: r["path"] for k, r in rows.items() if not r["error"]}
    slots = {"image_embedder": (None, "no embedder"), "flow": (None, "no flow"), "aesthetic": (None, "none"),
             "musiq": (None, "none")}
    out = PL.pillar1_rows("g", ep, lambda k: PL.ShotStream(paths[k]), errors, slots)
    shot_vals = {r["shot"]: r for r in out if r["level"] == "shot" and r["metric_id"] == "temporal_flickering"}
    assert all(shot_vals[k]["value"] is not None for k in (1, 5, 6))
    assert all(shot_vals[k]["value"] is None and shot_vals[k]["n_failed"] == 1 for k in (2, 3, 4))
    rec = next(r for r in out if r["level"] == "item" and r["metric_id"] == "temporal_flickering")
    assert rec["value"] is not None and np.isfinite(rec["value"]) and (rec["n_eval"], rec["n_failed"]) == (3, 3)


def test_unsupported_extension_is_named(tmp_path):
    folder = tmp_path / "e0001"
    folder.mkdir()
    (folder / "shot_01.png").write_bytes(b"x")
    (sf,) = D.index_shot_files(ep_with(1), folder, "g")
    assert "shot_01.png is not a video container" in sf.error


def test_utf16_episode_names_the_file_and_the_encoding(tmp_path):
    """Old: a bare UnicodeDecodeError without the file."""
    raw = {"episode_id": "e0001", "entities": [{"id": "c1", "type": "character", "name": "A", "description": "a"}],
           "shots": [{"index": 1, "cut": True, "entities": ["c1"], "action": "x"}]}
    p = tmp_path / "e0001.json"
    p.write_text(json.dumps(raw), encoding="utf-16")
    with pytest.raises(D.EpisodeError, match=r"e0001.json: episode files must be UTF-8 text, this one is UTF-16"):
        D.load_episode(p)


def test_dinov2_checkpoint_with_other_keys_fails_with_the_slot_name(tmp_path):
    """Old: strict=False loaded 174 missing keys as random weights without a word."""
    import torch
    from bench_resources.models.vision import CheckpointMismatch, dinov2_module
    p = tmp_path / "dinov2_vitb14.pth"
    torch.save({"backbone.weight": torch.zeros(3)}, p)
    with pytest.raises(CheckpointMismatch, match=r"model slot 'image_embedder'.*missing keys"):
        dinov2_module(p)


def test_offline_grounding_refuses_indefensible_coco_matches():
    """Old (MiniLM floor .3): pocket watch -> handbag (.48), oil lamp -> spoon, crystal -> vase: false 'absent'
    and wrong crops. New: no class named -> None (the entity is 'unavailable' with the reason)."""
    from bench_resources.models import ModelRegistry
    det = ModelRegistry(profile="offline").slot("open_vocab_detector")
    for q in ("a silver pocket watch", "a brass oil lamp", "a glowing blue crystal"):
        assert det.match_label(q, "object")[0] is None, q
        det.detect([np.zeros((32, 32, 3), np.uint8)], q, kind="object")
        assert "names no COCO class" in det.last_reason
    assert det.match_label("a cup of coffee with latte art on a saucer", "object")[0] == "cup"
    assert det.match_label("a small orange tabby cat with green eyes", "object")[0] == "cat"
    assert det.match_label("a leather sofa", "object")[0] == "couch"
    assert det.match_label("a woman in a red dress", None)[0] == "person"
