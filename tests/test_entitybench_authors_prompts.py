"""``judge_prompts: authors`` (issue 36 item 3): the authors' judge prompt texts read at run time from a local clone
whose path the user gives, parsed with ``ast`` (tests/support/entitybench_authors_code.py is a stand-in in their
code shape, our wording); one clear error when the path or a prompt is missing; the prompt set enters the request
versions, the protocol digest, the manifest and core/automation's prompt-set record; answers in the authors'
field names become the same values."""
from __future__ import annotations

import numpy as np
import pytest

from bench_assets.entitybench import judging as J
from tests.support.entitybench_authors_code import authors_module, write_clone

IM = np.zeros((4, 4, 3), np.uint8)


@pytest.fixture
def authors(tmp_path, monkeypatch):
    write_clone(tmp_path / "clone")
    monkeypatch.setenv(J.PROMPTS_ENV, "authors")
    monkeypatch.setenv(J.AUTHORS_CODE_ENV, str(tmp_path / "clone"))
    return tmp_path / "clone"


def test_paper_set_is_the_default_and_unchanged(monkeypatch):
    monkeypatch.delenv(J.PROMPTS_ENV, raising=False)
    assert J.prompt_set_name() == "paper" and J.prompt_set_id() == "paper"
    req = J.fidelity_request("object", "Cup", "a red cup", IM)
    assert req.prompt_version == "v1" and req.system == J.SYSTEM and "Cup" in req.text


def test_authors_texts_are_rendered_from_their_file(authors):
    fid = J.fidelity_request("object", "Cup", "a red cup", IM)
    assert fid.text == ('FIDELITY object Cup: a red cup\n- shape: S-f\n- color_texture: T-f\n- proportions: R-f\n'
                        '- details: D-f\n{"shape": N, "color_texture": N, "proportions": N, "details": N, '
                        '"fidelity": N}')
    assert fid.system == "" and fid.prompt_version == J.prompt_set_id() and J.prompt_set_id().startswith("authors@")
    assert fid.schema["required"] == ["shape", "color_texture", "proportions", "details", "fidelity"]
    pair = J.identity_request("character", "Mia", "a girl", IM, IM)
    assert pair.text.startswith("PAIR character / Mia / a girl\n- face: F-c\n") and len(pair.images) == 2
    act = J.action_request(IM, "Mia waves", {"Mia": "a girl"}, names_object=False, n_frames=5)
    assert act.text.startswith("ACTION over 5 frames: Mia waves [Mia]\n- subject_identity: who\n")
    assert "object_interaction" not in act.text and "object_interaction" not in act.schema["properties"]


def test_location_set_samples_as_the_authors_and_names_the_shots(authors):
    frames = [[IM + i, IM + i, IM + i] for i in range(10)]
    req, kept = J.location_set_request("Kitchen", "a kitchen", frames, [f"1:{i}" for i in range(10)])
    assert kept == [0, 1, 3, 4, 5, 6, 8, 9]                      # round(i * 9 / 7): both ends kept
    assert len(req.images) == 16 and req.text.startswith("SET Kitchen in 10 shots (16 frames over 8); a kitchen\n")
    assert "Image 3: from shot 1:1\n  Image 4: from shot 1:1\n  Image 5: from shot 1:3" in req.text
    small, kept = J.location_set_request("Kitchen", "a kitchen", frames[:3], ["a", "b", "c"])
    assert kept == [0, 1, 2] and small.text.startswith("SET Kitchen in 3 shots; a kitchen")   # no sampling clause
    with pytest.raises(ValueError, match="needs >= 2 shots"):
        J.location_set_request("Kitchen", "a kitchen", frames[:1], ["a"])


def test_answers_in_the_authors_fields(authors):
    crit = {c: 7 for c in J.CRITERIA["character"]}
    assert J.pair_values({**crit, "similarity": 8, "is_same": True}, "character") == \
        {"same": 1.0, "sim": 0.8, **{c: 0.7 for c in crit}}
    assert J.fidelity_values({**crit, "fidelity": 6}, "character")["overall"] == 0.6
    vals = J.action_values({"subject_identity": 9, "subject_action": 5, "motion_quality": 4, "overall": 3,
                            "action_depicted": False})
    assert vals["depicted"] == 0.0 and vals["overall"] == 0.3 and vals["object_interaction"] is None
    loc = J.location_set_values({"layout": 2, "color_mood": 3, "landmarks": 4, "perspective": 5, "consistency": 6,
                                 "all_consistent": False, "outlier_indices": [2]})
    assert loc == {"all_consistent": 0.0, "consistency": 0.6, "layout": 0.2, "color_mood": 0.3, "landmarks": 0.4,
                   "perspective": 0.5}


def test_missing_clone_or_prompt_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(J.PROMPTS_ENV, "authors")
    monkeypatch.delenv(J.AUTHORS_CODE_ENV, raising=False)
    with pytest.raises(J.PromptSetError, match=J.AUTHORS_CODE_ENV):
        J.prompt_set_id()
    monkeypatch.setenv(J.AUTHORS_CODE_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(J.PromptSetError, match="nowhere/eval/evaluate_benchmark.py does not exist"):
        J.fidelity_request("object", "Cup", "a red cup", IM)
    write_clone(tmp_path / "partial", drop="vlm_judge_scene_set")
    monkeypatch.setenv(J.AUTHORS_CODE_ENV, str(tmp_path / "partial"))
    with pytest.raises(J.PromptSetError, match=r"lacks the location_set prompt .*vlm_judge_scene_set\(\)"):
        J.prompt_set_id()
    monkeypatch.setenv(J.PROMPTS_ENV, "theirs")
    with pytest.raises(J.PromptSetError, match="use one of paper, authors"):
        J.prompt_set_name()


@pytest.mark.parametrize("expr", ["__import__('os').getcwd()", "str(description)", "description.upper()"])
def test_only_fstring_templates_are_rendered(expr, tmp_path, monkeypatch):
    write_clone(tmp_path / "c", inject=expr)
    monkeypatch.setenv(J.PROMPTS_ENV, "authors")
    monkeypatch.setenv(J.AUTHORS_CODE_ENV, str(tmp_path / "c"))
    with pytest.raises(J.PromptSetError, match="location_set"):
        J.prompt_set_id()


def test_the_set_enters_digest_manifest_and_rerun_record(authors, monkeypatch):
    """Answers of different sets are never comparable (protocol digest), the manifest says which set, and
    core/automation's prompt-set record changes (so exactly the judge-using assets re-run). Without a judge the
    digest does not depend on the set."""
    from bench_assets.core.automation import prompt_sets
    from bench_assets.entitybench import manifest, wiring
    from bench_resources.judge import Judge
    from bench_resources.models import ModelRegistry
    models, judge = ModelRegistry(profile="offline"), Judge(mode="off")
    theirs = (wiring.protocol(models, ["clip_b32"], judge), wiring.protocol(models, ["clip_b32"]),
              prompt_sets()["bench_assets.entitybench"], manifest.entitybench_manifest(models, judge))
    (authors / "eval" / "evaluate_benchmark.py").write_text(
        (authors / "eval" / "evaluate_benchmark.py").read_text().replace("PAIR ", "PAIR: "))
    edited = (wiring.protocol(models, ["clip_b32"], judge), prompt_sets()["bench_assets.entitybench"])
    monkeypatch.setenv(J.PROMPTS_ENV, "paper")
    ours = (wiring.protocol(models, ["clip_b32"], judge), wiring.protocol(models, ["clip_b32"]),
            prompt_sets()["bench_assets.entitybench"], manifest.entitybench_manifest(models, judge))
    assert theirs[0] != ours[0] and edited[0] not in (theirs[0], ours[0])   # another text, another digest
    assert theirs[1] == ours[1]
    assert len({theirs[2], edited[1], ours[2]}) == 3 and "+authors@" in theirs[2] and "+" not in ours[2]
    assert theirs[3]["judge_prompts"].startswith("authors@") and ours[3]["judge_prompts"] == "paper"
    assert theirs[3]["judge_prompts_source"].endswith("eval/evaluate_benchmark.py")


def _grid_inputs():
    rng = np.random.default_rng(3)
    frames = [rng.integers(0, 256, (120, 200, 3), dtype=np.uint8) for _ in range(5)]
    colours = J.schedule_colours(["Mia", "Tom"], ["Cup"])
    dets = [[("Mia", (10, 30, 60, 100)), ("Cup", (120.7, 5.2, 190, 60))], [], [("Tom", (0, 0, 50, 50))],
            [("Mia", (20, 40, 80, 110)), ("Mia", (100, 40, 150, 110))], [("Cup", (5, 80, 40, 118))]]
    return frames, dets, colours


def test_authors_action_grid_layout():
    frames, dets, colours = _grid_inputs()
    assert colours == {"Mia": (255, 64, 64), "Tom": (64, 192, 255), "Cup": (64, 255, 96)}
    grid = J.authors_action_grid(frames, dets, colours)
    assert grid.shape == (2 * 240 + 3 * 8, 3 * 360 + 4 * 8, 3)
    assert (grid[:8] == 32).all() and (grid[-8:] == 32).all()        # the grey canvas around the cells
    assert (grid[8 + 240 + 8:, 8 + 2 * (360 + 8):] == 32).all()      # the sixth cell stays empty
    oy, ox = 8 + (240 - 120) // 2, 8 + (360 - 200) // 2                 # frame 0 is centred, not scaled up
    assert tuple(grid[oy + 100, ox + 35]) == (255, 64, 64)             # Mia's box, bottom edge, in her colour
    assert tuple(grid[oy + 5, ox + 120 + 360 + 8]) != (64, 255, 96)    # the Cup is not on frame 1


def test_authors_action_grid_is_their_drawing():
    """Pixel for pixel the authors' _draw_labeled_bbox + _build_action_grid (their module, from a clone)."""
    mod = authors_module()
    frames, dets, colours = _grid_inputs()
    theirs = []
    for fr, ds in zip(frames, dets):
        out = fr.copy()
        for name, box in ds:
            out = mod._draw_labeled_bbox(out, box, name, colours[name])
        theirs.append(out)
    assert tuple(tuple(c) for c in mod._ENTITY_COLORS) == J.AUTHORS_COLOURS
    assert np.array_equal(mod._build_action_grid(theirs), J.authors_action_grid(frames, dets, colours))
