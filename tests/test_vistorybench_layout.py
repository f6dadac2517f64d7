"""ViStoryBench's official output trees (issue 35): ``<method>/<mode>/<language>/<timestamp>/<NN>/[shots/]`` read as
they are (language from the path, the newest timestamp unless the card names one), ``shots/`` looked into, a 0-based
set read as 1-based with a warning (as the official utils/normalize_shot_filenames.py renames it), a set that cannot
be aligned refused with one error naming the story, never scored as zero."""
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, AssetRecordsFilter, instance_for_test

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.vistorybench import dataset, layout
from tests.support import DATA
from tests.support.vistorybench import _run, _world

STORY_01 = DATA / "vistorybench" / "01"          # 6 shots
FAITHFUL = DATA / "generators" / "vistory_faithful"
DRIFT = DATA / "generators" / "vistory_drift"


def _card(gdir: Path, **extra) -> None:
    gdir.mkdir(parents=True, exist_ok=True)
    (gdir / "generator.yaml").write_text(yaml.safe_dump({"name": gdir.name, "benchmark": "vistorybench", **extra}))


def _shots(folder: Path, src: Path, numbers, name="shot_{:02d}{}") -> Path:
    """Copy ``src``'s images (in order) into ``folder`` as the given shot numbers."""
    folder.mkdir(parents=True, exist_ok=True)
    images = sorted(p for p in src.iterdir() if p.suffix in (".png", ".jpg"))
    for n, img in zip(numbers, images):
        shutil.copy(img, folder / name.format(n, img.suffix))
    return folder


# ----------------------------------------------------------------------------------------- the tree

def test_flat_generator_folder_keeps_its_layout(tmp_path):
    g = tmp_path / "g"
    _card(g, language="ch")
    _shots(g / "01", FAITHFUL / "01", range(1, 7))
    found = layout.resolve(g, {"language": "ch"})
    assert not found.official and found.root == g and found.story_dir("01") == g / "01"


def test_official_tree_language_from_the_path_and_the_newest_timestamp(tmp_path):
    g = tmp_path / "uno"
    run = g / "base" / "ch"
    for ts in ("20250101-120000", "20250312_090000", "20250211-000000"):
        (run / ts / "01" / "shots").mkdir(parents=True)
    (run / "notes").mkdir()
    found = layout.resolve(g, {})
    assert found.official and (found.mode, found.language, found.timestamp) == ("base", "ch", "20250312_090000")
    assert found.story_dir("01") == run / "20250312_090000" / "01"
    assert "newest timestamp 20250312_090000 read (of 3" in found.notes[0]
    assert "['notes']" in found.notes[1]
    # the card names another run; YAML reads 20250101_120000 unquoted as an integer: matched by its digits
    older = layout.resolve(g, yaml.safe_load("timestamp: 20250211_000000"))
    assert older.timestamp == "20250211-000000"
    assert layout.resolve(g, {"timestamp": "20250101-120000"}).timestamp == "20250101-120000"
    with pytest.raises(layout.LayoutError, match=r"names timestamp '20240101-000000', but base/ch/ holds"):
        layout.resolve(g, {"timestamp": "20240101-000000"})


def test_language_first_order_and_the_readme_shots_tree(tmp_path):
    g = tmp_path / "m"
    (g / "en" / "lora" / "20250101-000000" / "shots" / "07").mkdir(parents=True)   # README: <ts>/shots/<NN>/
    found = layout.resolve(g, {})
    assert (found.mode, found.language) == ("lora", "en")
    assert found.root == g / "en" / "lora" / "20250101-000000" / "shots"
    assert found.story_dir("07").is_dir() and found.story_ids() == ["07"]


def test_several_runs_need_the_card_to_choose(tmp_path):
    g = tmp_path / "m"
    for mode, lang in (("base", "en"), ("base", "ch"), ("plus", "en")):
        (g / mode / lang / "20250101-000000" / "01").mkdir(parents=True)
    with pytest.raises(layout.LayoutError, match=r"several runs \(base/ch, base/en, plus/en\); name the one"):
        layout.resolve(g, {})
    with pytest.raises(layout.LayoutError, match=r"several runs \(base/ch, base/en\)"):
        layout.resolve(g, {"mode": "base"})
    assert layout.resolve(g, {"mode": "base", "language": "ch"}).language == "ch"
    assert layout.resolve(g, {"mode": "plus"}).mode == "plus"
    with pytest.raises(layout.LayoutError, match=r"names mode: turbo, but the official tree holds base/ch, base/en"):
        layout.resolve(g, {"mode": "turbo"})


def test_a_run_without_timestamp_or_story_folders_is_one_error(tmp_path):
    g = tmp_path / "m"
    (g / "base" / "en" / "latest" / "01").mkdir(parents=True)
    with pytest.raises(layout.LayoutError, match=r"base/en/ holds no <timestamp>/ folder .*found \['latest'\]"):
        layout.resolve(g, {})
    shutil.rmtree(g / "base" / "en" / "latest")
    (g / "base" / "en" / "20250101-000000" / "misc").mkdir(parents=True)
    with pytest.raises(layout.LayoutError, match=r"base/en/20250101-000000/ holds no story folder"):
        layout.resolve(g, {})


def test_the_cli_check_finds_the_stories_of_an_official_tree(tmp_path):
    g = tmp_path / "uno"
    _card(g)
    _shots(g / "base" / "en" / "20250101-000000" / "01" / "shots", FAITHFUL / "01", range(6))
    _shots(g / "base" / "en" / "20250101-000000" / "8" / "shots", FAITHFUL / "08", range(1, 7))   # '8' is 08
    vsb = BENCHMARKS["vistorybench"]
    assert vsb.items_with_outputs(g, ["01", "02", "08"]) == ["01", "08"]


# ----------------------------------------------------------------------------------------- numbering

def test_align_reads_a_zero_based_set_as_one_based_with_a_warning():
    found = {i: f"/o/shot_{i:02d}.png" for i in range(6)}
    got = layout.align(found, 6, "generator 'g', story 01")
    assert got.files == {i + 1: f"/o/shot_{i:02d}.png" for i in range(6)} and got.missing == ()
    assert "numbered from 0 (shot_00.png ... shot_05.png); read as shots 1..6 (+1)" in got.renumbered
    assert "normalize_shot_filenames.py" in got.renumbered and got.warning is None
    # 0-based with a hole: shifted, and the hole is a missing shot of the story (not the last one)
    got = layout.align({0: "a", 1: "b", 3: "c", 4: "d", 5: "e"}, 6, "w")
    assert got.files == {1: "a", 2: "b", 4: "c", 5: "d", 6: "e"} and got.missing == (3,)
    assert layout.align({1: "a", 2: "b"}, 2, "w").renumbered is None


def test_align_refuses_what_cannot_be_aligned():
    with pytest.raises(layout.OutputError, match=r"story 02: outputs for shots \[7\] after the \+1 renumbering"):
        layout.align({i: str(i) for i in range(7)}, 6, "generator 'g', story 02")
    with pytest.raises(layout.OutputError, match=r"outputs for shots \[9\] but the story has 6 shots"):
        layout.align({1: "a", 9: "b"}, 6, "w")
    with pytest.raises(layout.OutputError, match="holds no shot image"):
        layout.align({}, 6, "w")
    # a sibling story starts at 0: this set lost its shot_00, wherever its other gaps are
    with pytest.raises(layout.OutputError, match=r"story 01: outputs are numbered from 0 \(story 08 of this generator "
                                                 r"has a shot 0\) and shot_00 is missing here \(files for \[1, 2, 4\]; "
                                                 r"story shots \[3, 5, 6\]"):
        layout.align({1: "a", 2: "b", 4: "c"}, 6, "generator 'g', story 01", zero_sibling=lambda: "08")
    got = layout.align({1: "a", 2: "b", 4: "c"}, 6, "w", zero_sibling=lambda: None)
    assert got.missing == (3, 5, 6) and got.warning is None       # plainly 1-based with gaps: scored, listed
    got = layout.align({1: "a", 2: "b"}, 4, "w", zero_sibling=lambda: None)
    assert got.missing == (3, 4) and "missing at the end" in got.warning


def test_index_outputs_looks_inside_shots_and_renumbers(tmp_path):
    story = dataset.load_story(STORY_01)
    folder = tmp_path / "g" / "01"
    _shots(folder / "shots", FAITHFUL / "01", range(6))
    idx = dataset.index_outputs(story, folder, "g")
    assert sorted(idx.files) == [1, 2, 3, 4, 5, 6] and idx.missing == ()
    assert Path(idx.files[1]).name == "shot_00.png" and Path(idx.files[1]).parent.name == "shots"
    assert "read as shots 1..6" in idx.renumbered
    # the official reader's bare names (00.png) in the story folder itself
    bare = _shots(tmp_path / "h" / "01", FAITHFUL / "01", range(6), name="{:02d}{}")
    assert Path(dataset.index_outputs(story, bare, "h").files[6]).name == "05.png"


def test_sibling_evidence_reads_the_siblings_shots_folders(tmp_path):
    story = dataset.load_story(STORY_01)
    ts = tmp_path / "uno" / "base" / "en" / "20250101-000000"
    _shots(ts / "08" / "shots", FAITHFUL / "08", range(6))           # the generator numbers from 0 ...
    _shots(ts / "01" / "shots", FAITHFUL / "01", range(1, 6))        # ... and story 01 lost its shot_00
    with pytest.raises(dataset.OutputError, match=r"story 01: outputs are numbered from 0 \(story 08"):
        dataset.index_outputs(story, ts / "01", "uno")


# ----------------------------------------------------------------------------------------- end to end

OFFICIAL = "uno_official"
NEWEST, OLDER = "20250102-080000", "20250101-080000"


def _official_world(tmp_path):
    """Stories 01, 02, 08; the flat vistory_faithful and the same images as an official tree: story 01 0-based in
    shots/ (newest timestamp; the older run holds other images), 02 without shots/, 08 0-based with shot_00 lost
    while 01 starts at 0 (refused)."""
    data = _world(tmp_path, generators=("vistory_faithful",))
    g = data / "generators" / OFFICIAL
    _card(g)                                               # no language: the path says en
    new = g / "base" / "en" / NEWEST
    _shots(new / "01" / "shots", FAITHFUL / "01", range(6))
    _shots(new / "02", FAITHFUL / "02", range(1, 6))
    _shots(new / "08" / "shots", FAITHFUL / "08", range(1, 6))   # shot_01..05 of a 0-based set: shot_00 lost
    _shots(g / "base" / "en" / OLDER / "01" / "shots", DRIFT / "01", range(1, 7))
    return data


def test_official_tree_scores_as_the_flat_copy_and_a_misaligned_story_fails_alone(tmp_path):
    data = _official_world(tmp_path)
    with instance_for_test() as instance:
        stats, resources, errors = _run(instance, data, tmp_path / "store")
        store = resources["store"]
        assert not errors
        failed = [(step, pk, msg) for step, pk, msg in stats.failed]
        assert len(failed) == 1, failed
        step, pk, msg = failed[0]
        assert step == "vistorybench_outputs" and pk == f"{OFFICIAL}|08"
        assert "story 08: outputs are numbered from 0 (story 01 of this generator has a shot 0)" in msg
        assert "story shots [6] have none as numbered" in msg

        out = store.query(f"SELECT story_id, shot, path, status, language FROM vistorybench_outputs "
                          f"WHERE generator = '{OFFICIAL}' ORDER BY story_id, shot")
        assert set(out["story_id"]) == {"01", "02"} and (out["status"] == "ok").all()
        assert set(out["language"]) == {"en"}
        first = out[(out.story_id == "01") & (out.shot == 1)]["path"].iloc[0]
        assert first.endswith(f"{NEWEST}/01/shots/shot_00.png")

        # the renumbering warning is in the item's metadata and in the run's warnings
        rec = instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey("vistorybench_outputs")),
                                              limit=50).records
        meta = {r.asset_materialization.partition: r.asset_materialization.metadata for r in rec}
        assert "read as shots 1..6 (+1)" in meta[f"{OFFICIAL}|01"]["renumbered"].value
        assert meta[f"{OFFICIAL}|02"]["renumbered"].value == "no"
        assert f"official layout base/en/{NEWEST}" in meta[f"{OFFICIAL}|01"]["layout"].value
        assert any("read as shots 1..6" in m for m in stats.warnings.get("vistorybench_outputs", []))

        # same pixels as the flat generator, shot for shot: the renumbered set is aligned, the older run unread
        scores = store.query("SELECT generator, item, metric_id, value FROM vistorybench_scores WHERE level = 'item' "
                             "AND value IS NOT NULL AND item IN ('01', '02')")
        wide = scores.pivot_table(index=["item", "metric_id"], columns="generator", values="value")
        assert len(wide) >= 6
        pd.testing.assert_series_equal(wide[OFFICIAL], wide["vistory_faithful"], check_names=False)

        # the refused story is no zero cell: the paper's mean is over the two stories scored
        board = store.query("SELECT * FROM vistorybench_leaderboard WHERE slice = 'full' "
                            f"AND generator = '{OFFICIAL}' AND metric_id = 'cids_cross'")
        assert len(board) == 1 and board["value"].iloc[0] > 0
        assert board["raw_mean"].iloc[0] == pytest.approx(wide.loc[(["01", "02"], "cids_cross"), OFFICIAL].mean())
