"""Issue 35 (EntityBench): the official release imported as it is published, and generator folders in the official
``<SSS>_<KKK>.mp4`` layout scored without renaming. Fixtures are written here in the release's schema
(tests/support/entitybench_official.py), never copied from it."""
import json
import warnings

import pandas as pd
import pytest

from bench_assets import cli
from bench_assets.entitybench import dataset as D
from bench_assets.entitybench import official as O
from tests.support.entitybench_official import (
    EPISODE_ID,
    official_episode,
    official_generator,
    plain_episode,
    write_release,
)


def converted(raw=None, eid=EPISODE_ID, tier=None):
    canonical, quirks = O.convert_episode(official_episode() if raw is None else raw, eid, tier)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the never-scheduled lantern is warned about; the quirks say it
        return canonical, D.parse_episode(canonical), quirks


def kinds(quirks):
    out = {}
    for q in quirks:
        out.setdefault(q["quirk"], []).append(q)
    return out


# ---------------------------------------------------------------- the converter

def test_every_quirk_of_the_release_is_resolved_and_counted():
    _, ep, quirks = converted()
    k = kinds(quirks)
    assert sorted(k) == ["duplicate_name", "name_map_only", "never_scheduled", "prompt_differs_from_first_appearances",
                         "undescribed_name", "unprefixed_label"]
    by_name = {e.name: e for e in ep.entities}
    # scheduled with no description: an entity of the schedule's type, described by its name; both mentions counted
    (und,) = k["undescribed_name"]
    assert (und["subject"], und["mentions"], und["type"]) == ("the wooden crate", 2, "object")
    assert by_name["the wooden crate"].type == "object" and by_name["the wooden crate"].description == "the wooden crate"
    # two labels, one name: one entity with the last label's description, both labels listed
    (dup,) = k["duplicate_name"]
    assert dup["labels"] == ["Object 1", "Object 2"] and dup["mentions"] == 2
    assert [e.name for e in ep.entities].count("the brass key") == 1
    assert by_name["the brass key"].description == "A small brass key on a ring."
    # Gen_<name>: typed by the schedule
    assert [q["subject"] for q in k["unprefixed_label"]] == ["Gen_The Stranger"]
    assert by_name["The Stranger"].type == "character"
    # described, never scheduled: kept (the canonical loader warns), typed by its label
    assert [q["subject"] for q in k["never_scheduled"]] == ["the red lantern"]
    assert by_name["the red lantern"].type == "object" and not ep.appearances(by_name["the red lantern"].id)
    assert [q["subject"] for q in k["name_map_only"]] == ["Object 4"]
    assert "the old map" not in by_name
    # shot 1:2 first shows The Stranger and the crate, and its prompt describes neither
    (pd,) = k["prompt_differs_from_first_appearances"]
    assert pd["subject"] == "1:2" and pd["first_not_described"] == ["The Stranger", "the wooden crate"]
    assert all(q["resolution"] == O.RESOLUTIONS[q["quirk"]] for q in quirks)
    # shots in the release's order, scheduled by name, the official text kept as the prompt
    ids = {e.name: e.id for e in ep.entities}
    assert [s.entities for s in ep.shots] == [
        (ids["Mira"], ids["The Harbour"], ids["the brass key"]),
        (ids["Mira"], ids["The Stranger"], ids["The Harbour"], ids["the wooden crate"]),
        (ids["Tomas"], ids["the wooden crate"]),
        (ids["Mira"], ids["Tomas"], ids["The Harbour"], ids["the brass key"]),
        (ids["The Stranger"], ids["The Harbour"])]
    assert [s.cut for s in ep.shots] == [True, False, True, True, False]
    assert [(s.scene, s.scene_shot) for s in ep.shots] == [(1, 1), (1, 2), (2, 1), (3, 1), (3, 2)]
    assert ep.shots[1].action == "Mira turns as The Stranger steps off a wooden crate."
    assert ep.tier == "easy" and ep.summary == "A key changes hands at a foggy harbour."


def test_the_official_prompt_is_the_shot_prompt():
    _, ep, _ = converted()
    raw = official_episode()
    # the derived prompt would describe The Stranger in shot 2; the release gave generators this text
    assert D.shot_prompt(ep, 2) == raw["scenes"][0]["video_prompts"][1]
    assert D.shot_prompt(ep, 3) == raw["scenes"][1]["video_prompts"][0]
    # kept through the canonical JSON the assets pass along
    again = D.parse_episode(json.loads(json.dumps(ep.to_json())))
    assert [s.prompt for s in again.shots] == [s.prompt for s in ep.shots]
    assert [(s.scene, s.scene_shot) for s in again.shots] == [(s.scene, s.scene_shot) for s in ep.shots]
    # an episode without prompts still derives them, and serialises without the optional keys
    plain = D.parse_episode({"episode_id": "e1", "entities": [{"id": "c1", "type": "character", "name": "A",
                                                               "description": "a man"}],
                             "shots": [{"index": 1, "cut": True, "entities": ["c1"], "action": "waves"}]})
    assert D.shot_prompt(plain, 1) == "[A] a man\nwaves"
    assert set(plain.to_json()["shots"][0]) == {"index", "cut", "entities", "action"}


def test_less_common_quirks_each_resolved():
    raw = plain_episode("e_odd", 2, 2, name="Ann")
    raw["entity_descriptions"]["Location 1"] = {"name": "Bob", "label": "Location 1", "description": "a tall man"}
    raw["entity_descriptions"]["Gen_Ghost"] = {"name": "Ghost", "label": "Gen_Ghost", "description": "a pale shape"}
    raw["entity_schedule"]["1:1"]["characters"] = ["Ann", "Ann", "Bob"]          # twice in one shot; Bob labelled a place
    raw["entity_schedule"]["2:1"]["objects"] = ["Ann"]                            # one name, two types
    raw["entity_schedule"]["9:9"] = {"characters": ["Ann"]}                       # a key no shot has
    del raw["entity_schedule"]["2:2"]                                             # a shot with no schedule
    raw["scenes"][1]["cut"] = [False, False]                                      # a scene that starts without a cut
    raw["_num_shots"] = 7
    _, ep, quirks = converted(raw, "e_odd")
    k = kinds(quirks)
    assert k["duplicate_in_shot"][0]["subject"] == "Ann" and k["duplicate_in_shot"][0]["shot"] == "1:1"
    # Bob is labelled a location, Ann a character: the schedule's type wins for each
    assert sorted((q["subject"], q["scheduled_as"]) for q in k["type_conflict"]) == [("Ann", "object"),
                                                                                      ("Bob", "character")]
    assert k["name_in_several_types"][0]["types"] == ["character", "object"]
    assert [q["subject"] for q in k["schedule_key_without_shot"]] == ["9:9"]
    assert [q["subject"] for q in k["shot_without_schedule"]] == ["2:2"]
    assert [q["subject"] for q in k["scene_start_not_cut"]] == ["2:1"]
    assert k["count_field_differs"][0]["stated"] == 7 and k["count_field_differs"][0]["found"] == 4
    assert [q["subject"] for q in k["never_scheduled_untyped"]] == ["Ghost"]
    assert "Ghost" not in {e.name for e in ep.entities}
    anns = sorted(e.type for e in ep.entities if e.name == "Ann")
    assert anns == ["character", "object"]
    assert [s.cut for s in ep.shots] == [True, False, True, False] and ep.shots[3].entities == ()
    assert next(e for e in ep.entities if e.name == "Bob").type == "character"
    assert ep.shots[0].entities.count(next(e.id for e in ep.entities if e.name == "Ann" and e.type == "character")) == 1


@pytest.mark.parametrize("mutate, msg", [
    (lambda r: r["scenes"][1].update(cut=[True, False]), "scene 2 has 1 video_prompts but 2 'cut' entries"),
    (lambda r: r["scenes"][0].update(scene_num="1"), "positive integer 'scene_num', got '1'"),
    (lambda r: r["scenes"][2].update(scene_num=1), "scene_num 1 appears twice"),
    (lambda r: r["scenes"][0]["video_prompts"].__setitem__(0, ""), "scene 1 shot 1: the video prompt"),
    (lambda r: r["entity_schedule"]["1:1"].update(characters="Mira"), "entity_schedule['1:1']['characters']"),
])
def test_a_broken_episode_is_one_error_naming_it(mutate, msg):
    raw = official_episode()
    mutate(raw)
    with pytest.raises(O.OfficialError, match=rf"episode '{EPISODE_ID}': .*") as e:
        O.convert_episode(raw, EPISODE_ID)
    assert msg in str(e.value)


# ---------------------------------------------------------------- the release on disk and `bench import`

def release(tmp_path):
    eps = {EPISODE_ID: official_episode(), "ep_med": plain_episode("ep_med", 16), "ep_nosplit": plain_episode(
        "ep_nosplit", 3, name="Bea"), "ep_broken": {**plain_episode("ep_broken", 2), "scenes": []}}
    return write_release(tmp_path / "EntityBench", eps, {"easy": [EPISODE_ID, "ep_broken", "ep_gone"],
                                                          "medium": [], "hard": ["ep_med"]})


def test_import_release_writes_loadable_episodes_tiers_and_a_report(tmp_path):
    rel = release(tmp_path)
    rep = O.import_release(rel, tmp_path / "out")
    assert (rep["scripts_found"], rep["episodes_imported"], rep["shots"]) == (4, 3, 5 + 16 + 3)
    assert rep["tiers"] == {"easy": 2, "medium": 0, "hard": 1}
    assert len(rep["errors"]) == 1 and rep["errors"][0].startswith("ep_broken.json: episode 'ep_broken'")
    q = rep["quirks"]
    assert q["undescribed_name"]["mentions"] == 2 and q["duplicate_name"]["episodes"] == 1
    assert q["not_in_split"]["records"] == 1 and q["split_id_without_script"]["records"] == 1
    # the split says hard for a 16-shot episode: kept, and said
    assert q["tier_differs_from_shot_count"]["records"] == 1
    folder = tmp_path / "out" / "entitybench"
    tiers = json.loads((folder / "tiers.json").read_text())
    assert tiers["easy"] == sorted([EPISODE_ID, "ep_nosplit"]) and tiers["hard"] == ["ep_med"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = {e: D.load_episode(folder / "episodes" / f"{e}.json") for e in D.discover_episodes(folder / "episodes")}
    assert sorted(loaded) == sorted([EPISODE_ID, "ep_med", "ep_nosplit"])
    assert loaded["ep_med"].tier == "hard" and len(loaded["ep_med"].shots) == 16
    assert json.loads((folder / "import_report.json").read_text())["episodes_imported"] == 3


def test_bench_import_subcommand(tmp_path, capsys):
    rel = release(tmp_path)
    assert cli.main(["import", "entitybench", str(rel), "--out", str(tmp_path / "data")]) == 1  # ep_broken failed
    out, err = capsys.readouterr()
    assert "imported 3 of 4 episodes (24 shots)" in out and "tiers easy 2 / medium 0 / hard 1" in out
    assert "quirk undescribed_name: 1 records, 2 mentions, 1 episodes" in out
    assert "error: ep_broken.json: episode 'ep_broken': 'scenes' must be a non-empty list" in err
    assert (tmp_path / "data" / "entitybench" / "episodes" / f"{EPISODE_ID}.json").is_file()
    # no release here; and never into this repository's embedded data (the release has no licence)
    assert cli.main(["import", "entitybench", str(tmp_path / "nothing"), "--out", str(tmp_path / "d2")]) == 2
    assert "no EntityBench release here" in capsys.readouterr().err
    assert cli.main(["import", "entitybench", str(rel), "--out", str(cli.PROJECT_ROOT / "data")]) == 2
    assert "refusing to write the release into this repository's embedded data" in capsys.readouterr().err


# ---------------------------------------------------------------- Table 3

def test_table3_shot_distances_and_cross_shot_counts():
    _, ep, _ = converted()
    (easy, all_) = O.table3([ep])
    assert easy["tier"] == "easy" and all_["tier"] == "all" and easy["shots"] == 5 and easy["scenes"] == 3
    # characters Mira, Tomas, The Stranger; the harbour; the key and the crate (the lantern is never scheduled)
    assert [easy[f"cross_shot_{t}s"][0] for t in ("character", "location", "object")] == [3, 1, 2]
    # consecutive appearances: Mira 1-2-4, Tomas 3-4, Stranger 2-5, Harbour 1-2-4-5, key 1-4, crate 2-3
    dists = [1, 2, 1, 3, 1, 2, 1, 3, 1]
    assert easy["shot_distance"][0] == pytest.approx(sum(dists) / 9)
    assert easy["recurrence_gap_intervening"][0] == pytest.approx(sum(dists) / 9 - 1)
    assert easy["episode_max_shot_distance"] == (3.0, 0.0) and easy["max_shot_distance"] == 3
    assert easy["memory_only_rate"] == pytest.approx(2 / 5)             # shots 4 and 5 only re-show entities
    assert easy["prompt_without_descriptions_rate"] == pytest.approx(3 / 5)
    cells = {(c["tier"], c["statistic"]): c for c in O.compare_table3(O.table3([ep]))}
    assert cells[("easy", "episodes")]["within_rounding"] is False           # 1 episode, not the paper's 80
    assert cells[("easy", "cross_shot_locations.sd")]["ours"] == 0.0


def test_compare_table3_rounding():
    row = {"tier": "easy", "episodes": 80, "shots": 873, "cross_shot_characters": (5.0625, 1.3724),
           "cross_shot_locations": (2.3875, 0.844), "cross_shot_objects": (3.8625, 2.0356),
           "shot_distance": (2.049, 1.801), "episode_max_shot_distance": (8.0125, 2.03)}
    cells = {c["statistic"]: c["within_rounding"] for c in O.compare_table3([row])}
    assert cells["cross_shot_characters.mean"] and cells["cross_shot_objects.mean"]
    assert not cells["cross_shot_objects.sd"]  # 2.04 is not the paper's 2.1
    assert cells["episodes"] and cells["shots"]


# ---------------------------------------------------------------- generator folders in the official layout

def touch(folder, *names):
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        (folder / n).write_bytes(b"\x00")


def test_official_layout_maps_through_the_scene_shot_order(tmp_path):
    _, ep, _ = converted()
    folder = tmp_path / "g" / EPISODE_ID
    touch(folder, "001_001.mp4", "001_002.mp4", "002_001.mp4", "003_001.mp4", "003_002.mp4")
    files = D.index_shot_files(ep, folder, "g")
    assert [(f.index, f.path and f.path.rsplit("/", 1)[1], f.error) for f in files] == [
        (1, "001_001.mp4", None), (2, "001_002.mp4", None), (3, "002_001.mp4", None), (4, "003_001.mp4", None),
        (5, "003_002.mp4", None)]


def test_official_keys_follow_the_release_not_the_cuts(tmp_path):
    raw = plain_episode("e_cut", 1, 2)
    raw["scenes"][0]["cut"] = [True, True]           # a cut inside scene 1: the file is still 001_002
    _, ep, _ = converted(raw, "e_cut")
    assert D.official_keys(ep) == {1: (1, 1), 2: (1, 2)}
    folder = tmp_path / "g" / "e_cut"
    touch(folder, "001_001.mp4", "001_002.mp4")
    assert [f.error for f in D.index_shot_files(ep, folder, "g")] == [None, None]
    # an episode without the release's numbering counts scenes from its cuts
    bare = D.parse_episode({**ep.to_json(), "shots": [{k: v for k, v in s.items() if k not in ("scene", "shot_in_scene")}
                                                      for s in ep.to_json()["shots"]]})
    assert D.official_keys(bare) == {1: (1, 1), 2: (2, 1)}


def test_a_gapped_official_set_names_the_episode_and_every_missing_file(tmp_path):
    _, ep, _ = converted()
    folder = tmp_path / "g" / EPISODE_ID
    touch(folder, "001_001.mp4", "003_001.mp4", "003_002.mp4")
    files = {f.index: f for f in D.index_shot_files(ep, folder, "g")}
    assert files[1].path and files[3].error and files[4].path and files[5].path
    for k, name in ((2, "001_002.mp4"), (3, "002_001.mp4")):
        err = files[k].error
        assert f"generator 'g', episode '{EPISODE_ID}', shot {k}: no {name} file" in err
        assert "2 of 5 files missing: 001_002.mp4, 002_001.mp4" in err


@pytest.mark.parametrize("names, says", [
    (["000_001.mp4", "001_001.mp4"], "1-based"),
    (["001_000.mp4", "001_001.mp4"], "1-based"),
    (["001_001.mp4", "001_003.mp4"], "001_003.mp4"),                    # scene 1 has two shots
    (["001_001.mp4", "004_001.mp4"], "004_001.mp4"),                    # there is no scene 4
])
def test_official_names_that_fit_no_shot_reject_the_whole_set(tmp_path, names, says):
    _, ep, _ = converted()
    folder = tmp_path / "g" / EPISODE_ID
    touch(folder, *names)
    files = D.index_shot_files(ep, folder, "g")
    assert all(f.path is None for f in files) and len({f.error for f in files}) == 1
    assert says in files[0].error and "rejected rather than misaligned" in files[0].error
    assert "1:2, 2:1, 3:2" in files[0].error  # the episode's scenes and their shot counts


def test_mixed_layouts_are_refused(tmp_path):
    _, ep, _ = converted()
    folder = tmp_path / "g" / EPISODE_ID
    touch(folder, "shot_01.mp4", "001_002.mp4")
    files = D.index_shot_files(ep, folder, "g")
    assert all(f.path is None and "mixes shot_NN files" in f.error for f in files)


# ---------------------------------------------------------------- end to end, real Dagster

def test_an_official_layout_folder_is_evaluated_without_renaming(tmp_path):
    from dagster import instance_for_test

    from bench_assets import definitions as d
    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_resources.config import build_resources
    from bench_resources.judge import Judge
    from bench_resources.paths import BenchPaths

    rel = write_release(tmp_path / "EntityBench", {EPISODE_ID: official_episode()}, {"easy": [EPISODE_ID]})
    data = tmp_path / "data"
    assert cli.main(["import", "entitybench", str(rel), "--out", str(data)]) == 0
    keys = [(1, 1), (1, 2), (2, 1), (3, 1), (3, 2)]
    official_generator(data / "generators", "official_full", EPISODE_ID, keys)
    official_generator(data / "generators", "official_gap", EPISODE_ID, [k for k in keys if k != (2, 1)], seed=5)
    before = sorted(p.name for p in (data / "generators" / "official_full" / EPISODE_ID).iterdir())
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(tmp_path / "store"),
                                judge=Judge(mode="off", cache_dir=str(tmp_path / "jc")))
    gens, errs = discover_generators(paths.generators_dir, "entitybench")
    assert sorted(g.name for g in gens) == ["official_full", "official_gap"] and not errs
    with instance_for_test() as instance:
        stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=d.ENTITYBENCH,
                         items=[EPISODE_ID], generators=gens, item_assets=list(d.ENTITYBENCH_ITEM_ASSETS),
                         generator_assets=["entitybench_outputs", "entitybench_pillar1"], aggregate_assets=[],
                         progress=lambda s: None, show_progress=False)
    assert not stats.failed, stats.failed
    store = resources["store"]
    out = store.query("SELECT generator, shot, path, error, sha256 FROM entitybench_outputs ORDER BY generator, shot")
    full = out[out.generator == "official_full"]
    assert [p.rsplit("/", 1)[1] for p in full.path] == [f"{s:03d}_{k:03d}.mp4" for s, k in keys]
    assert full.error.isna().all() and full.sha256.nunique() == 5
    gap = out[out.generator == "official_gap"].set_index("shot")
    assert pd.isna(gap.loc[3, "path"]) and "no 002_001.mp4 file" in gap.loc[3, "error"]
    assert f"episode '{EPISODE_ID}'" in gap.loc[3, "error"] and gap.drop(3).error.isna().all()
    p1 = store.query("SELECT generator, shot, value, n_failed FROM entitybench_pillar1 "
                     "WHERE metric_id = 'temporal_flickering' AND level = 'shot' ORDER BY generator, shot")
    f = p1[p1.generator == "official_full"]
    assert len(f) == 5 and f.value.notna().all() and f.value.nunique() > 1
    g = p1[p1.generator == "official_gap"].set_index("shot")
    assert g.value.isna().tolist() == [False, False, True, False, False] and g.loc[3, "n_failed"] == 1
    # read as they are: nothing renamed or added in the generator's folder
    assert sorted(p.name for p in (data / "generators" / "official_full" / EPISODE_ID).iterdir()) == before
    stored = json.loads(store.query("SELECT episode_json FROM entitybench_episode")["episode_json"].iloc[0])
    assert stored["shots"][1]["prompt"] == official_episode()["scenes"][0]["video_prompts"][1]
