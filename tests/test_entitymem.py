"""EntityMem (the EntityBench paper's baseline) with the offline stand-in: layout rules, classification, the bank
with a verification failure and chroma retry, incremental regeneration after one description changes, the
`bench entitymem` command writing two generator folders, and the comparison tables' maths."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bench_assets.entitybench.dataset import parse_episode
from bench_assets.entitymem import bank as B
from bench_assets.entitymem import configs, pipeline, rows
from bench_assets.entitymem import layout as L
from bench_assets.entitymem.agents import rule_classify
from bench_resources.generation.video import read_frames
from bench_resources.store import Store
from tests.support.entitymem import EPISODE  # noqa: F401

SMALL = configs.EntityMemConfig("tiny-offline", "offline stand-in, small", candidates=3, n_frames=8)


def make_run(tmp_path: Path, episode: dict = EPISODE, cfg: configs.EntityMemConfig = SMALL,
             store: Store | None = None) -> pipeline.Run:
    return pipeline.Run(parse_episode(copy.deepcopy(episode)), cfg, pipeline.Backends.from_config(cfg),
                        store or Store(root=str(tmp_path / "store")))


# ------------------------------------------------------------------------------------------------ layout

def test_continuation_pans_toward_newcomers_and_shifts_retained_the_other_way():
    # room for two on the left, one on the right: three newcomers do not fit, so the camera pans left
    prev = {"camera_angle": "center", "positions": {"A": "center-left", "B": "right"}, "description": ""}
    plan = L.rule_layout(["A", "B", "C", "D", "E"], [], "C, D and E enter the hall.", prev)
    assert plan["pan"] == "left" and plan["camera_angle"] == "left"
    final = {e["name"]: e["position"] for e in plan["keyframes"][-1]["entities"]}
    assert (final["A"], final["B"]) == ("center-right", "far-right")   # retained slide right as the camera pans left
    assert [final[c] for c in "CDE"] == ["center", "center-left", "left"]  # newcomers on the side it turned to
    assert len(plan["keyframes"]) == 2                                  # before and after they enter
    assert [e["name"] for e in plan["keyframes"][0]["entities"]] == ["A", "B"]
    assert plan["entering"] == ["C", "D", "E"] and plan["retained"] == ["A", "B"]
    # with room on the side, nobody moves and the camera stays
    roomy = L.rule_layout(["A", "B", "C"], [], "C enters.", prev)
    assert roomy["pan"] == "none" and roomy["camera_angle"] == "center"
    assert {e["name"]: e["position"] for e in roomy["keyframes"][-1]["entities"]}["A"] == "center-left"


def test_static_continuation_keeps_cells_and_one_keyframe():
    prev = {"camera_angle": "right", "positions": {"A": "left", "B": "center"}, "description": ""}
    plan = L.rule_layout(["A"], ["cup"], "A looks around.", prev)
    assert plan["camera_angle"] == "right" and plan["pan"] == "none" and plan["leaving"] == ["B"]
    assert len(plan["keyframes"]) == 1
    ents = {e["name"]: e for e in plan["keyframes"][0]["entities"]}
    assert ents["A"]["position"] == "left" and ents["cup"]["kind"] == "object" and ents["cup"]["position"] != "left"


def test_a_models_layout_is_repaired_with_notes():
    plan = {"camera_angle": "up", "keyframes": [{"description": "x", "entities": [
        {"name": "A", "position": "nowhere"}, {"name": "Ghost", "position": "left"}]}]}
    fixed, notes = L.repair(plan, ["A", "B"], [], None)
    names = [e["name"] for e in fixed["keyframes"][-1]["entities"]]
    assert fixed["camera_angle"] == "center" and names == ["A", "B"]
    assert any("Ghost" in n for n in notes) and any("'B'" in n for n in notes) and any("nowhere" in n for n in notes)


# ------------------------------------------------------------------------------------------------ bank

def test_classification_rules_and_textual_memory():
    assert rule_classify("the Hat", "a tall purple hat")["attach_to"] == "character"
    assert rule_classify("the Pew", "a wooden church pew")["attach_to"] == "location"
    assert rule_classify("the Cat", "a small orange tabby cat")["needs_reference"] is True
    ep = parse_episode(copy.deepcopy(EPISODE))
    mem = B.textual_memory(ep)
    assert mem["c3"]["first_shot"] == 2 and mem["o1"]["first_shot"] == 3
    prompt = B.injected_prompt(ep, 4)  # recurring entities get their stored description back
    assert "[Verdant Knight] a knight with grey hair" in prompt and prompt.endswith(EPISODE["shots"][3]["action"])
    assert B.rekey("x, green chroma-key background", "magenta") == "x, magenta chroma-key background"


def test_bank_retries_a_portrait_whose_coat_matched_the_key(tmp_path):
    run = make_run(tmp_path)
    cls, refs = pipeline.build_bank(run)
    by = {r["name"]: r for r in cls}
    assert by["the Hat"]["reference"] == "attached" and by["the Hat"]["owner"] == "c2"  # Mara wears it (shot 1)
    knight = refs["c1"]["attempts"]
    # the green coat vanished with the green key: the cut-out fell apart, the verifier failed it, magenta passed
    assert [a["chroma"] for a in knight] == ["green", "magenta"]
    assert knight[0]["verdict"] is False and knight[0]["failure"] == "missing_body_region"
    assert knight[1]["verdict"] is True and "magenta chroma-key" in knight[1]["prompt"]
    assert all(len(a["candidates"]) == SMALL.candidates for a in knight)
    assert [a["chroma"] for a in refs["c2"]["attempts"]] == ["green"]          # Mara's red dress keyed fine
    mara = [p for p in run.backends.image.prompts if "of Mara" in p]
    assert mara and all("a tall purple hat" in p for p in mara)              # drawn as part of her portrait
    pano = run.get(refs["l1"]["panorama"])
    assert pano.shape[:2] == (512, 1536) and set(refs["l1"]["crops"]) == {"left", "center", "right"}
    assert run.get(refs["l1"]["crops"]["left"]).shape[:2] == (512, 512)
    lab = run.get(refs["c2"]["labelled"])
    cut = run.get(refs["c2"]["cutout"])
    assert lab.shape[0] > cut.shape[0] and lab.shape[2] == 3 and cut.shape[2] == 4  # a name band under the cut-out
    grid = run.get(knight[0]["grid"])
    assert grid.shape[1] > 2 * grid.shape[0]                                  # the candidates side by side


def test_keyframes_and_shots_follow_the_bank(tmp_path):
    run = make_run(tmp_path)
    cls, refs = pipeline.build_bank(run)
    lays = pipeline.plan_layouts(run)
    assert lays[1]["prev"] is not None and lays[2]["prev"] is None          # shot 3 is a hard cut
    assert len(lays[1]["plan"]["keyframes"]) == 2                            # Bo enters mid-shot
    kfs = pipeline.compose_keyframes(run, cls, refs, lays)
    assert [k["shot"] for k in kfs] == [1, 2, 2, 3, 4]
    assert set(kfs[0]["drawn"]) == {"Verdant Knight", "Mara"}                 # the hat is part of Mara's portrait
    img = run.get(kfs[0]["image"])
    assert img.shape == (SMALL.frame[1], SMALL.frame[0], 3)
    shots = pipeline.generate_entitymem(run, cls, refs, kfs)
    reqs = run.backends.video.requests
    assert reqs[1]["roles"] == ["portrait", "portrait", "portrait", "keyframe", "keyframe"]
    assert reqs[1]["labels"][:3] == ["Verdant Knight", "Mara", "Bo"]
    assert [r["first_frame"] for r in reqs] == [False, True, False, True]     # continuations only
    assert shots[1]["first_frame_input"] == shots[0]["last_frame"]
    f = read_frames(run.store.get_bytes(shots[1]["video"], "mp4"))
    prev_last = run.get(shots[0]["last_frame"])
    assert len(f) == SMALL.n_frames and float(np.abs(f[0].astype(float) - prev_last).mean()) < 6
    # the backbone's text prompt opens with the shot's camera direction (paper C.1): angle, cut or pan, keyframes
    prompts = [r["prompt"].splitlines()[0] for r in reqs]
    assert prompts[0] == "Camera: hard cut; static camera, framing the centre of the location."
    assert prompts[1] == ("Camera: continues the previous shot; the camera holds, framing the centre of the location, "
                          "2 keyframes in order.")
    assert [k.get("pan") for k in kfs] == [lays[k["shot"] - 1]["plan"]["pan"] for k in kfs]
    control = pipeline.generate_control(run)
    creqs = run.backends.video.requests[len(shots):]
    assert creqs[0]["roles"] == [] and creqs[2]["roles"] == ["memory", "memory"]   # earlier shots' whole frames
    assert "portrait" not in {r for q in creqs for r in q["roles"]}
    assert control[3]["prompt"] == "Mara talks with Verdant Knight, next to the Cat at the Forest."


def test_one_changed_description_regenerates_only_what_uses_it(tmp_path):
    store = Store(root=str(tmp_path / "store"))

    def everything(episode):
        run = make_run(tmp_path, episode, store=store)
        cls, refs = pipeline.build_bank(run)
        lays = pipeline.plan_layouts(run)
        kfs = pipeline.compose_keyframes(run, cls, refs, lays)
        shots = pipeline.generate_entitymem(run, cls, refs, kfs)
        return run, shots

    first, shots_a = everything(EPISODE)
    again, shots_same = everything(EPISODE)
    assert again.memo.computed == [] and [s["video"] for s in shots_same] == [s["video"] for s in shots_a]
    changed = copy.deepcopy(EPISODE)
    changed["entities"][2]["description"] = "a boy with blonde hair in a yellow raincoat"   # Bo, in shot 2 only
    run, shots_b = everything(changed)
    computed = {(k, w) for k, w in run.memo.computed}
    # Bo's portrait, the keyframe that shows him (shot 2's second) and shot 2; shot 3 is a hard cut and shot 4
    # continues shot 3, so no first frame after shot 2 changes: nothing else is regenerated
    assert computed == {("reference", "Bo"), ("attempt", "Bo attempt 1"), ("keyframe", "shot 2 keyframe 2"),
                        ("shot", "entitymem shot 2")}
    assert [s["video"] for s in shots_b][:1] + [s["video"] for s in shots_b][2:] == \
        [s["video"] for s in shots_a][:1] + [s["video"] for s in shots_a][2:]
    assert shots_b[1]["video"] != shots_a[1]["video"]
    # Mara recurs in every shot: her change reaches every shot, and the continuation after each
    changed2 = copy.deepcopy(EPISODE)
    changed2["entities"][1]["description"] = "a girl with white hair in a black dress"
    run2, _ = everything(changed2)
    kinds = {}
    for k, w in run2.memo.computed:
        kinds.setdefault(k, set()).add(w)
    assert kinds["reference"] == {"Mara"} and len(kinds["shot"]) == 4 and "classify" not in kinds


# ------------------------------------------------------------------------------------------------ the command

@pytest.fixture
def data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "entitybench" / "episodes").mkdir(parents=True)
    (root / "entitybench" / "episodes" / "t0001.json").write_text(json.dumps(EPISODE))
    monkeypatch.setenv("BENCH_DATA_ROOT", str(root))
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "off")
    return root


def test_bench_entitymem_writes_two_generator_folders_and_resumes(data_root, tmp_path, capsys):
    from bench_assets.cli import main
    from bench_assets.core.generators import read_generator
    from bench_assets.entitybench.dataset import index_shot_files, load_episode
    out = tmp_path / "gens"
    assert main(["entitymem", "--episodes", "t0001", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "offline-stand-in (offline stand-in)" in text
    ep = load_episode(data_root / "entitybench" / "episodes" / "t0001.json")
    for name in ("entitymem_offline-stand-in", "storymem-control_offline-stand-in"):
        info = read_generator(out / name)
        assert info.benchmark == "entitybench" and "offline stand-in" in info.description
        assert info.card["entitymem"]["offline_stand_in"] is True
        files = index_shot_files(ep, out / name / "t0001", name)
        assert [f.error for f in files] == [None] * 4
        frames = read_frames(Path(files[0].path).read_bytes())
        assert len(frames) == 16 and frames[0].shape == (144, 256, 3)
    card = read_generator(out / "entitymem_offline-stand-in").card["entitymem"]
    assert card["pair"] == "storymem-control_offline-stand-in" and card["backends"]["prompts"]["entitymem_layout"]
    # the audit page shows every artifact, each link resolving to a stored file
    import re
    page = tmp_path / "store" / "reports" / "entitymem" / "offline-stand-in" / "t0001.html"
    html = page.read_text()
    links = re.findall(r'src="([^"]+)"', html)
    assert links and all((page.parent / link).resolve().is_file() for link in links)
    assert html.count("<video") == 8 and "fail: missing_body_region" in html and "on <b>magenta</b>" in html
    assert html.count('title="candidate') == 5 * 5                 # N = 5 per attempt: the Knight 2, Mara, Bo, the Cat
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*.mp4")}
    # again: every step is reused, and no file is rewritten (the sensor's fingerprint stays)
    assert main(["entitymem", "--episodes", "t0001", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "recomputed {}" in text
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.mp4")} == mtimes
    # Bo's description changes in the episode file: Dagster sees the partition's input changed, and the run
    # regenerates Bo's portrait, the one keyframe showing him, EntityMem's shot 2, and the control's shots 2-4
    # (its shot-2 prompt describes Bo; shots 3 and 4 remember shot 2's frames); nothing else
    from dagster import AssetKey, DagsterInstance

    from bench_assets.core.automation import stale_or_missing
    from bench_assets.entitymem import assets as A
    from bench_resources.paths import BenchPaths
    changed = copy.deepcopy(EPISODE)
    changed["entities"][2]["description"] = "a boy with blonde hair in a yellow raincoat"
    (data_root / "entitybench" / "episodes" / "t0001.json").write_text(json.dumps(changed))
    pk = "offline-stand-in|t0001"
    with DagsterInstance.get() as inst:
        stale = stale_or_missing(inst, A.PARTITIONED, [AssetKey("entitymem_bank")], lambda _k: [pk],
                                 paths=BenchPaths())
    assert [(k.to_user_string(), s) for k, _, s in stale] == [("entitymem_bank", "INPUT_CHANGED")]
    assert main(["entitymem", "--episodes", "t0001", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "recomputed {'attempt': 1, 'keyframe': 1, 'reference': 1, 'shot': 4}" in text, text
    now = {p: p.stat().st_mtime_ns for p in out.rglob("*.mp4")}
    moved = sorted(f"{p.parent.parent.name}/{p.name}" for p in now if now[p] != mtimes[p])
    assert moved == ["entitymem_offline-stand-in/shot_02.mp4", "storymem-control_offline-stand-in/shot_02.mp4",
                     "storymem-control_offline-stand-in/shot_03.mp4", "storymem-control_offline-stand-in/shot_04.mp4"]
    # a bad configuration or episode is one error line
    assert main(["entitymem", "--episodes", "nope", "--out", str(out)]) == 2
    assert "no EntityBench episode nope" in capsys.readouterr().err
    assert main(["entitymem", "--episodes", "t0001", "--config", "missing"]) == 2
    assert "configuration 'missing'" in capsys.readouterr().err


def test_a_configuration_file_is_read_and_checked(tmp_path):
    d = tmp_path / "entitymem" / "configs"
    d.mkdir(parents=True)
    (d / "mine.yaml").write_text(yaml.safe_dump({"name": "mine", "candidates": 2, "video": {"backend": "http",
                                                                                           "base_url": "x"}}))
    cfg = configs.load_config("mine", tmp_path)
    assert cfg.candidates == 2 and cfg.video["backend"] == "http" and not cfg.offline
    assert cfg.generator_names() == {"entitymem": "entitymem_mine", "control": "storymem-control_mine"}
    (d / "bad.yaml").write_text(yaml.safe_dump({"name": "bad", "candidatez": 2}))
    with pytest.raises(configs.ConfigError, match="unknown keys"):
        configs.load_config("bad", tmp_path)


def test_entitymem_sits_above_the_benchmark_folders():
    from tests.support.imports import GRAPH, rule_violations
    bad = rule_violations({"bench_assets.entitybench.metrics": [("bench_assets.entitymem.rows", 3)]})
    assert bad and "entitymem" in bad[0]
    assert any(t.startswith("bench_assets.entitybench") for t, _ in GRAPH["bench_assets.entitymem.rows"])


# ------------------------------------------------------------------------------------------------ comparison

def _records(d_face: float, rng) -> pd.DataFrame:
    out = []
    for cfg in ("cfgA",):
        for i in range(12):
            for mid, shift in (("intra_face_fidelity", d_face), ("intra_face_hair", d_face),
                               ("intra_object_presence", -0.5), ("imaging_quality", 0.0)):
                base = rng.normal(0.5, 0.1)
                out.append({"generator": f"entitymem_{cfg}", "item": f"e{i}", "metric_id": mid,
                            "value": base + shift * 0.1 + rng.normal(0, 0.02), "protocol": "p"})
                out.append({"generator": f"storymem-control_{cfg}", "item": f"e{i}", "metric_id": mid,
                            "value": base + rng.normal(0, 0.02), "protocol": "p"})
    # an unpaired generator and an episode only one arm scored are left out
    out.append({"generator": "drift", "item": "e0", "metric_id": "intra_face_fidelity", "value": 0.1, "protocol": "p"})
    out.append({"generator": "entitymem_cfgA", "item": "e99", "metric_id": "intra_face_fidelity", "value": 0.9,
                "protocol": "p"})
    return pd.DataFrame(out)


def test_table5_pairs_the_arms_per_category():
    from bench_assets.core.stats import cohens_d
    rec = _records(1.0, np.random.default_rng(0))
    t5 = rows.table5(rec)
    by = t5.set_index("category")
    assert list(t5["category"]) == ["Character fidelity (intra-shot)", "Object presence",
                                    "VBench intra-shot quality (Pillar 1)"]     # the paper's order
    assert by.loc["Character fidelity (intra-shot)", "n_metrics"] == 2
    assert by.loc["Character fidelity (intra-shot)", "avg_n_paired"] == 12       # e99 has no control score
    per = rows.metric_effects(rec).set_index("metric_id")
    a = rec[(rec.generator == "entitymem_cfgA") & (rec.metric_id == "intra_face_hair") & (rec.item != "e99")]
    b = rec[(rec.generator == "storymem-control_cfgA") & (rec.metric_id == "intra_face_hair")]
    assert per.loc["intra_face_hair", "cohens_d"] == pytest.approx(cohens_d(a.sort_values("item")["value"],
                                                                            b.sort_values("item")["value"]))
    face = by.loc["Character fidelity (intra-shot)", "avg_d"]
    assert face == pytest.approx((per.loc["intra_face_hair", "cohens_d"] + per.loc["intra_face_fidelity", "cohens_d"]) / 2)
    assert face > 0.5 and by.loc["Object presence", "avg_d"] < 0                    # the signs the data were built with
    # arms under different protocols are refused, with the reason
    rec2 = rec.copy()
    rec2.loc[(rec2.generator == "storymem-control_cfgA") & (rec2.metric_id == "intra_object_presence"), "protocol"] \
        = "other"
    row = rows.table5(rec2).set_index("category").loc["Object presence"]
    assert pd.isna(row["avg_d"]) and row["n_metrics"] == 0 and "protocols differ" in row["reason"]
    assert "Character fidelity" in rows.table5_markdown(t5)


def test_table19_reads_the_gap_decay_of_both_arms():
    gap = pd.DataFrame([
        {"generator": g, "signal": s, "entity_type": "character", "tier": "all", "gap_bin": b, "mean": m, "pairs": n,
         "embedder": ""}
        for g, m in (("entitymem_x", 0.7), ("storymem-control_x", 0.5), ("faithful", 0.9))
        for s in ("llm_sim", "embedding_cosine") for b, n in (("1-2", 10), ("3-5", 4))])
    t19 = rows.table19(gap)
    assert set(t19["arm"]) == {"EntityMem", "control"} and len(t19) == 8
    md = rows.table19_markdown(t19)
    assert "0.700 (10)" in md and "0.500 (4)" in md and "faithful" not in md
    assert "no character pair" in rows.table19_markdown(rows.table19(None))


def test_camera_direction_names_the_pan_and_the_angle():
    assert B.camera_direction("left", "left", True) == ("Camera: continues the previous shot; the camera pans left, "
                                                        "framing the left part of the location.")
    assert B.camera_direction("right", "none", False, 1) == ("Camera: hard cut; static camera, framing the right part "
                                                             "of the location.")
    ep = parse_episode(copy.deepcopy(EPISODE))
    p = B.injected_prompt(ep, 2, "Camera: x.")
    assert p.splitlines()[0] == "Camera: x." and p.endswith(EPISODE["shots"][1]["action"])
    assert B.injected_prompt(ep, 2) == "\n".join(p.splitlines()[1:])


def test_the_offline_card_says_offline_stand_in_once():
    cfg = configs.BUILTIN[configs.OFFLINE]
    run_backends = pipeline.Backends.from_config(cfg)
    for arm in ("entitymem", "control"):
        desc = pipeline.generator_card(cfg, arm, run_backends)["description"]
        assert desc.count("offline stand-in") == 1, desc
        assert "rule-based agents" in desc
    named = configs.EntityMemConfig("mine", "FLUX portraits", image={"backend": "openai"})
    assert pipeline.generator_card(named, "entitymem", run_backends)["description"] == (
        "EntityMem (per-entity memory bank); configuration mine: FLUX portraits")


def test_keyword_lookup_order_default_and_case():
    # One shared lookup serves the offline renderer's kinds and the style agent: order is priority, case is ignored,
    # and text without any keyword gets the default (not the first table entry).
    from bench_assets.entitymem.agents import infer_style
    from bench_resources.generation.offline import first_keyword, kind_of
    table = (("scene", "location"), ("object", "object"))
    assert first_keyword("An OBJECT in a scene", table, "character") == "location"
    assert first_keyword("a lamp", table, "character") == "character"
    assert kind_of("Panorama of the harbour") == "location" and kind_of("a tall woman") == "character"
    assert infer_style("A Pixar-like short") == "3D animated" and infer_style("a noir film") == "photorealistic"
