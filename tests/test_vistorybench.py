"""ViStoryBench: the release reader, protocol 1.3 metric math on hand values, and the embedded set end to end."""
import base64
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import AssetKey, instance_for_test
from PIL import Image
from scipy import stats

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.metric_spec import detail_of
from bench_assets.vistorybench import dataset
from bench_assets.vistorybench import metrics
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from tests.support.fake_anthropic import FakeAnthropic, tool_answer
from tests.support.vistorybench import GENERATORS, _run, _world  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
VSB = BENCHMARKS["vistorybench"]


# ----------------------------------------------------------------------------------------- metric math

def _unit(*v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def test_hungarian_beats_greedy_and_never_uses_nan_pairs():
    # greedy would give character 0 the 0.9 crop and leave character 1 with 0.1; Hungarian maximises the total
    s = np.array([[0.9, 0.8], [0.85, 0.1]])
    assert sorted(metrics.hungarian_match(s)) == [(0, 1), (1, 0)]
    s = np.array([[np.nan, 0.2], [np.nan, 0.3]])  # crop 0 has no face: one character stays unmatched
    assert metrics.hungarian_match(s) == [(1, 1)]


def test_cids_values_by_hand():
    a, b, c = _unit(1, 0), _unit(0.6, 0.8), _unit(0, 1)
    refs = np.stack([a, c])
    assert metrics.cids_cross(np.stack([a, b]), refs) == pytest.approx((1 + 0 + 0.6 + 0.8) / 4)
    assert metrics.cids_cross(np.zeros((0, 2)), refs) == 0.0           # never matched counts 0
    assert metrics.cids_self(np.stack([a, b, c])) == pytest.approx((0.6 + 0 + 0.8) / 3)  # strict upper triangle
    assert metrics.cids_self(np.stack([a])) == 1.0
    assert metrics.cids_self(np.zeros((0, 2))) == 0.0


def test_occm_copy_paste_is_alignment_by_hand():
    assert metrics.occm(3, 3) == pytest.approx(100.0)
    assert metrics.occm(1, 2) == pytest.approx(100 * np.exp(-1 / (2 + 1e-6)))
    assert metrics.occm(2, 0) is None
    ref, mirror = _unit(1, 0), _unit(0, 1)
    assert metrics.copy_paste_probability(ref, ref, mirror) == pytest.approx(1.0)           # an exact copy
    assert metrics.copy_paste_probability(_unit(1, 1), ref, mirror) == pytest.approx(0.5)   # as close to the mirror
    assert metrics.copy_paste_paper(ref, ref, np.stack([mirror, _unit(1, 1)])) == pytest.approx(1 - (0 + 2 ** -0.5) / 2)
    uniform = np.full((4, 10), 0.1)
    assert metrics.inception_score(uniform) == pytest.approx(1.0)
    onehot = np.eye(4)
    assert metrics.inception_score(onehot) == pytest.approx(4.0, rel=1e-6)  # 4 confident, distinct classes
    v, missing = metrics.alignment_score({"scene": [4, 2], "camera": [3], "character_action": [],
                                          "single_character_action": [1]})
    assert v == pytest.approx((3 + 3 + 1) / 3 * 25) and missing == ["character_action"]


def test_mean_rank_and_human_alignment_match_scipy():
    vals = {"a": {"cids_cross": 0.9, "occm": 80.0}, "b": {"cids_cross": 0.5, "occm": 90.0},
            "c": {"cids_cross": 0.5, "occm": None}}
    r = metrics.mean_rank(vals, ["cids_cross", "occm"])
    assert r["a"] == {"mean_rank": 1.5, "ranked_columns": 2}     # (1 + 2) / 2
    assert r["b"]["mean_rank"] == pytest.approx((2.5 + 1) / 2)   # tie on cids_cross
    assert r["c"] == {"mean_rank": 2.5, "ranked_columns": 1}
    human = {"m1": 1.0, "m2": 2.0, "m3": 3.5, "m4": 3.0, "m5": 9.0}
    metric = {"m1": 10.0, "m2": 30.0, "m3": 20.0, "m4": 40.0, "m5": None, "extra": 1.0}
    c = metrics.human_alignment(human, metric)
    assert c.methods == ("m1", "m2", "m3", "m4") and c.n_methods == 4
    x, y = [1, 2, 3.5, 3], [10, 30, 20, 40]
    assert c.kendall_tau == pytest.approx(stats.kendalltau(x, y).statistic)
    assert c.spearman_rho == pytest.approx(1 - 6 * 6 / (4 * 15))  # rank differences 0, -1, 2, -1
    assert c.pearson_r == pytest.approx(np.corrcoef(x, y)[0, 1])
    few = metrics.human_alignment({"m1": 1, "m2": 2}, {"m1": 1, "m2": 2})
    assert few.kendall_tau is None and "at least 3" in few.reason


# ----------------------------------------------------------------------------------------- the release reader

def test_release_reader_both_languages_and_lite():
    ids = dataset.discover_stories(DATA / "vistorybench")
    assert ids == ["01", "02", "08"]
    s = dataset.load_story(DATA / "vistorybench" / "01")
    assert s.lite and not dataset.load_story(DATA / "vistorybench" / "02").lite
    assert {c.tag for c in s.characters.values()} == set(dataset.TAGS)
    # the Chinese list maps to the same character keys as the English one
    assert all(sh.appearing["en"] == sh.appearing["ch"] for sh in s.shots)
    assert s.shot(1).text["Setting Description"]["ch"].endswith("白天。")
    assert all(1 <= len(c.references) <= 3 for c in s.characters.values())


@pytest.mark.parametrize("name,index", [("shot_07.png", 7), ("07.png", 7), ("x_7.jpg", 7), ("shot_7_v2_12.png", 12),
                                        ("cover.png", None)])
def test_shot_index_from_name(name, index):
    assert dataset.shot_index_from_name(name) == index


def _story_copy(tmp_path, sid="01") -> Path:
    dst = tmp_path / "vistorybench" / sid
    shutil.copytree(DATA / "vistorybench" / sid, dst)
    return dst


def test_bad_stories_one_clear_error_each(tmp_path):
    d = _story_copy(tmp_path, "01")
    raw = json.loads((d / "story.json").read_text(encoding="utf-8-sig"))
    shutil.rmtree(d / "image" / "Inky")
    with pytest.raises(dataset.StoryError, match=r"story 01: character 'Inky' has no reference folder"):
        dataset.load_story(d)
    d = _story_copy(tmp_path, "02")
    raw = json.loads((d / "story.json").read_text(encoding="utf-8-sig"))
    raw["Shots"][1]["Characters Appearing"]["en"].append("Nobody")
    (d / "story.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(dataset.StoryError, match=r"story 02: shot 2 lists 'Nobody' \(en\).*not in 'Characters'"):
        dataset.load_story(d)
    d = _story_copy(tmp_path, "08")
    (d / "image" / "Whiskers" / "00.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(dataset.StoryError,
                       match=r"story 08: reference image 00.jpg of character 'Whiskers' does not decode"):
        dataset.load_story(d)
    raw = json.loads((DATA / "vistorybench" / "01" / "story.json").read_text(encoding="utf-8-sig"))
    raw["Shots"] = []
    d = tmp_path / "vistorybench" / "03"
    shutil.copytree(DATA / "vistorybench" / "01" / "image", d / "image")
    (d / "story.json").write_text(json.dumps(raw))
    with pytest.raises(dataset.StoryError, match="story 03: the story has no shots"):
        dataset.load_story(d)


def test_output_alignment_errors(tmp_path):
    story = dataset.load_story(DATA / "vistorybench" / "01")
    out = tmp_path / "gen" / "01"
    out.mkdir(parents=True)
    src = sorted((DATA / "generators" / "vistory_faithful" / "01").iterdir())
    for i, p in enumerate(src):                       # 0-based naming: shot_00 .. shot_05
        shutil.copy(p, out / f"shot_{i:02d}.png")
    idx = dataset.index_outputs(story, out, "g")      # read as 1..6, as ViStoryBench's normalizer renames it
    assert sorted(idx.files) == [1, 2, 3, 4, 5, 6] and "numbered from 0" in idx.renumbered
    assert Path(idx.files[1]).name == "shot_00.png"
    (out / "shot_00.png").unlink()                    # mixed: now 1..5 present, 6 missing -> scored, listed
    idx = dataset.index_outputs(story, out, "g")
    assert idx.missing == (6,) and sorted(idx.files) == [1, 2, 3, 4, 5]
    shutil.copy(src[0], out / "01.png")               # shot 1 twice
    with pytest.raises(dataset.OutputError, match="shot 1 has two outputs"):
        dataset.index_outputs(story, out, "g")
    (out / "01.png").unlink()
    shutil.copy(src[0], out / "shot_09.png")
    with pytest.raises(dataset.OutputError, match=r"outputs for shots \[9\] but the story has 6 shots"):
        dataset.index_outputs(story, out, "g")
    # video generators: the first frame is the shot image
    frame = dataset.read_shot_image(DATA / "generators" / "vistory_faithful_ch" / "01" / "shot_01.mp4")
    assert frame.shape == (160, 256, 3)


# ----------------------------------------------------------------------------------------- end to end


def test_leaderboard_every_metric_every_generator(vistorybench_offline):
    stats, resources, errors, board, _ = vistorybench_offline
    assert not errors and not stats.failed, stats.failed
    full = board[board.slice == "full"]
    v = full.pivot(index="metric_id", columns="generator", values="value")
    assert set(v.columns) == set(GENERATORS)
    subscores = {f"alignment.{a}" for a in metrics.ALIGNMENT_ASPECTS}
    additions = {"cids_cross_good_faces_only", "cids_self_good_faces_only"}   # issue 23: beside the paper's CIDS
    assert set(v.index) == set(metrics.RANKED) | {"copy_paste", "copy_paste_paper"} | subscores | additions
    nones = full[full.value.isna()]
    assert nones["reason"].notna().all() and (nones["reason"].str.len() > 0).all()
    # offline: no CSD or aesthetic v2.5 weights ship; no judge -> None with the slot's / judge's reason
    assert set(nones.metric_id) == {"csd_cross", "csd_self", "aesthetics", "alignment"} | subscores
    assert nones[nones.metric_id == "csd_cross"]["reason"].str.contains("style_csd").all()
    assert nones[nones.metric_id.str.startswith("alignment")]["reason"].str.contains("judge off").all()
    # validity: the copy-paste baseline copies the references; faithful keeps identities, drift loses them
    assert v.loc["cids_cross"].idxmax() == "vistory_copy_paste", v.loc["cids_cross"].to_dict()
    assert v.loc["cids_self", "vistory_faithful"] > v.loc["cids_self", "vistory_drift"] + 10
    assert v.loc["copy_paste", "vistory_copy_paste"] > v.loc["copy_paste", "vistory_faithful"]
    assert v.loc["occm", "vistory_faithful"] > v.loc["occm", "vistory_drift"]
    # both languages evaluate: the Chinese run of faithful scores close to the English one
    assert v.loc["cids_self", "vistory_faithful_ch"] == pytest.approx(v.loc["cids_self", "vistory_faithful"], abs=15)
    # the baseline is shown, not ranked; ranks cover the rest
    ranks = pd.concat([full, detail_of(full)], axis=1).drop_duplicates("generator").set_index("generator")
    assert pd.isna(ranks.loc["vistory_copy_paste", "mean_rank"]) and ranks.loc["vistory_copy_paste", "baseline"]
    assert not ranks.drop(index="vistory_copy_paste")["baseline"].any()
    assert ranks.loc["vistory_faithful", "mean_rank"] < ranks.loc["vistory_drift", "mean_rank"]
    lite = board[(board.slice == "lite") & (board.metric_id == "cids_self")]
    assert set(detail_of(lite)["stories"]) == {2} and set(lite["n_items"]) == {2}   # 01 and 08


def test_provenance_and_human_alignment(vistorybench_offline):
    _, resources, _, board, _ = vistorybench_offline
    store = resources["store"]
    rows = store.query("SELECT * FROM vistorybench_scores WHERE metric_id = 'cids_self' AND level = 'character' "
                       "AND generator = 'vistory_faithful'")
    detail = json.loads(rows["detail"].iloc[0])
    assert detail["crop_ids"] and all(store.has_artifact(c) for c in detail["crop_ids"])
    crops = store.query("SELECT crop_id, source_sha256, matched FROM vistorybench_matches WHERE kind = 'crop'")
    assert crops["source_sha256"].notna().all() and crops["matched"].notna().any()
    ha = store.query("SELECT * FROM vistorybench_human_alignment WHERE metric_id = 'cids_self' AND slice = 'lite'")
    assert ha["n_methods"].iloc[0] == 4 and len(store.query(
        "SELECT * FROM vistorybench_human_alignment WHERE metric_id = 'cids_self' AND slice = 'full'")) == 1
    # the embedded ratings order faithful > faithful_ch > copy_paste > drift; cids_self must agree in sign
    assert ha["kendall_tau"].iloc[0] > 0 and ha["spearman_rho"].iloc[0] > 0


def test_incremental_second_run_does_nothing(vistorybench_offline, tmp_path):
    stats, resources, _, _, instance = vistorybench_offline
    data = Path(resources["paths"].data_root)
    again, _, _ = _run(instance, data, Path(resources["store"].root))
    assert again.materialized == [] and again.forwards == 0


def test_bad_story_and_refused_outputs_fail_alone(tmp_path):
    data = _world(tmp_path, generators=("vistory_faithful",), stories=("01", "02"))
    raw = json.loads((data / "vistorybench" / "02" / "story.json").read_text(encoding="utf-8-sig"))
    raw["Shots"][0]["Characters Appearing"]["en"] = ["Ghost"]
    (data / "vistorybench" / "02" / "story.json").write_text(json.dumps(raw))
    gdir = data / "generators" / "vistory_faithful" / "01"
    shutil.copy(gdir / "shot_01.png", gdir / "01.png")    # two files for shot 1: story 01's outputs are refused
    shutil.copytree(DATA / "vistorybench" / "08", data / "vistorybench" / "08")
    with instance_for_test() as instance:
        stats, resources, _ = _run(instance, data, tmp_path / "store")
        failed = {(step, pk, msg) for step, pk, msg in stats.failed}
        assert any(pk == "02" and "shot 1 lists 'Ghost' (en)" in msg for _, pk, msg in failed), failed
        # a refused set fails its partition with one error naming the story (issue 35), never a 0 story score
        assert any(step == "vistorybench_outputs" and pk == "vistory_faithful|01"
                   and "story 01: shot 1 has two outputs (01.png, shot_01.png)" in msg
                   for step, pk, msg in failed), failed
        scores = resources["store"].query("SELECT item, metric_id, value, n_eval, n_failed, reason FROM vistorybench_scores "
                                          "WHERE level = 'item' AND metric_id = 'cids_self'").set_index("item")
        assert "01" not in scores.index
        assert pd.notna(scores.loc["08", "value"])
        board = resources["store"].query("SELECT * FROM vistorybench_leaderboard WHERE slice = 'full' "
                                         "AND metric_id = 'cids_self'")
        assert detail_of(board)["stories_scored"].iloc[0] == 1
        assert board["n_eval"].iloc[0] == scores.loc["08", "n_eval"] > 0     # counts are instances (characters)
        assert "stories not evaluated: ['01', '02']" in board["reason"].iloc[0]
        # 01 has no outputs index: the generator's failure (each of its 3 characters, and a 0 story in the ranking
        # value); 02's story.json failed validation (nobody's: one skip)
        assert detail_of(board)["stories_not_delivered"].iloc[0] == ["01"]
        assert (board["n_failed"].iloc[0], board["n_skipped"].iloc[0], board["n_items"].iloc[0]) == (3, 1, 3)
        n = board["n_eval"].iloc[0]
        assert board["coverage"].iloc[0] == pytest.approx(n / (n + 3 + 1))
        assert board["value"].iloc[0] == pytest.approx(scores.loc["08", "value"] / 2)
        assert board["raw_mean"].iloc[0] == pytest.approx(scores.loc["08", "value"])


def _plain_background(body: dict) -> float:
    """Fraction of the judged image that is the copy-paste canvas grey (128 +- 6)."""
    msg = body["messages"][-1]["content"] if body["messages"][-1]["role"] == "user" else body["messages"][0]["content"]
    img = next(b for b in msg if b["type"] == "image")
    arr = np.asarray(Image.open(io.BytesIO(base64.b64decode(img["source"]["data"]))).convert("RGB")).astype(int)
    return float((np.abs(arr - 128).max(axis=2) <= 6).mean())


def test_alignment_through_the_judge_copy_paste_lowest(tmp_path, monkeypatch):
    """A judge on 127.0.0.1 that answers like a careful rater: a shot on a plain grey canvas shows no scene, no
    camera design and no action (0-1); a rendered shot gets 3-4."""
    def responder(body):
        grey = _plain_background(body)
        text = body["messages"][0]["content"][-1]["text"]
        score = (0 if "Setting Description" in text else 1) if grey > 0.2 else (4 if "camera" not in text else 3)
        return tool_answer({"analysis": f"grey canvas fraction {grey:.2f}", "score": score})

    data = _world(tmp_path, generators=("vistory_faithful", "vistory_copy_paste"), stories=("01",))
    with FakeAnthropic(responder=responder) as srv, instance_for_test() as instance:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        judge = Judge(mode="live", base_url=srv.base_url, cache_dir=str(tmp_path / "cache"), backoff_s=0.01)
        stats, resources, _ = _run(instance, data, tmp_path / "store", judge=judge)
        assert not stats.failed, stats.failed
        board = resources["store"].query("SELECT * FROM vistorybench_leaderboard WHERE slice = 'full'")
        a = board[board.metric_id == "alignment"].set_index("generator")["value"]
        # copy-paste: scene 0, camera 1, action 1 on the grey canvas; its character crops are the references (4)
        assert a["vistory_copy_paste"] == pytest.approx((0 + 1 + 1 + 4) / 4 * 25)
        assert a["vistory_faithful"] > 75
        assert a.idxmin() == "vistory_copy_paste"
        # the sub-scores on the paper's 0-4 scale (its Table 7), beside the 0-100 total
        sub = board[board.metric_id.str.startswith("alignment.")].pivot(index="metric_id", columns="generator",
                                                                         values="value")
        assert sub["vistory_copy_paste"].to_dict() == {"alignment.scene": 0.0, "alignment.camera": 1.0,
                                                       "alignment.character_action": 1.0,
                                                       "alignment.single_character_action": 4.0}
        assert sub.loc["alignment.camera", "vistory_faithful"] == 3.0 and sub.max().max() <= 4.0
        rows = resources["store"].query("SELECT metric_id, detail FROM vistorybench_alignment WHERE level = 'question'")
        assert {"alignment.scene", "alignment.camera", "alignment.character_action",
                "alignment.single_character_action"} <= set(rows.metric_id)
        assert all(json.loads(d)["cache_key"] for d in rows["detail"])
        # identical questions (a copy-paste canvas repeats when the cast repeats) are asked once
        assert len(srv.requests) == len({json.loads(d)["cache_key"] for d in rows["detail"]}) < len(rows)


def test_embedded_set_regenerates_byte_for_byte():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_vistorybench_data.py"), "--check"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 differ" in r.stdout


def test_sensor_requests_a_new_vistorybench_generator(tmp_path):
    from dagster import build_sensor_context
    from bench_assets.core.automation import generator_sensor_factory
    data = _world(tmp_path, generators=("vistory_drift",), stories=("08",))
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    sensor = generator_sensor_factory(benchmark="vistorybench", partitions=VSB.partitions,
                                      item_ids=lambda: VSB.item_ids(paths), generators_root=lambda: str(paths.generators_dir),
                                      item_assets=VSB.item_assets, generator_assets=VSB.generator_assets,
                                      assets_fn=lambda: VSB.assets)
    with instance_for_test() as instance:
        res = sensor(build_sensor_context(instance=instance))
        assert instance.get_dynamic_partitions("vistorybench_stories") == ["08"]
        assert instance.get_dynamic_partitions("vistorybench_generators") == ["vistory_drift"]
        keys = {r.partition_key for r in res.run_requests}
        assert "08" in keys  # the story's own assets first; generator runs follow once it is materialised


def test_leaderboard_cells_carry_one_protocol(vistorybench_offline):
    _, _, _, board, _ = vistorybench_offline
    assert board["comparable"].all() and board.loc[board.metric_id == "cids_self", "protocol"].str.len().gt(0).all()


def test_site_links_every_cell_to_an_audit_page_with_crops(vistorybench_offline, tmp_path):
    """The store-wide site is ViStoryBench's one report (its own report asset is gone): every full-slice cell links
    an audit page (headline -> per story -> per character / crop / judge question) whose crop images resolve."""
    import re
    from bench_assets.core.site import build_site
    _, resources, _, board, _ = vistorybench_offline
    assert VSB.page is not None, "bench_assets/benchmarks.py: the vistorybench entry has no site page"
    root = tmp_path / "site"
    build_site(resources["store"], {"vistorybench": VSB}, root)
    html = (root / "vistorybench.html").read_text()
    assert "audit/vistorybench/cids_self__vistory_faithful.html" in html
    audit = root / "audit" / "vistorybench"
    page = (audit / "cids_self__vistory_faithful.html").read_text()
    assert "<h2>Per story</h2>" in page
    crops = re.findall(r'<img class="crop" src="([^"]+)"', page)
    assert crops and all((audit / c).resolve().is_file() for c in crops)
    full = board[board.slice == "full"]
    pages = {p.name for p in audit.glob("*.html")}
    from bench_assets.core.audit import audit_filename
    assert pages == {audit_filename(m, g) for m, g in zip(full["metric_id"], full["generator"])}


# ----------------------------------------------------------------------------------------- issue 15 / 18 fixes

def test_chinese_appearing_list_is_paired_with_english_by_position(tmp_path):
    """The release's Chinese names drift from name_ch (variants, nicknames); it pairs the lists by position."""
    d = _story_copy(tmp_path, "01")
    raw = json.loads((d / "story.json").read_text(encoding="utf-8-sig"))
    raw["Shots"][0]["Characters Appearing"]["ch"] = ["艾伦", "墨墨", "胡须"]          # none is a name_ch
    raw["Shots"][4]["Characters Appearing"]["ch"] = ["胡须猫", "艾伦指挥官"]          # same length, other order
    (d / "story.json").write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    s = dataset.load_story(d)
    assert s.shot(1).appearing["ch"] == s.shot(1).appearing["en"] == ("Ellen", "Inky", "Whiskers")
    assert s.shot(5).appearing["ch"] == ("Ellen", "Whiskers")                     # position, as the release
    assert any("'艾伦' paired by position with 'Ellen'" in w for w in s.warnings)
    # lengths differ: no position to pair by, Chinese names resolve through name_ch (or fail naming the name)
    raw["Shots"][1]["Characters Appearing"]["ch"] = ["艾伦指挥官"]
    (d / "story.json").write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    s = dataset.load_story(d)
    assert s.shot(2).appearing["ch"] == ("Ellen",) and any("1 Chinese vs 3 English" in w for w in s.warnings)
    raw["Shots"][1]["Characters Appearing"]["ch"] = ["无名氏"]
    (d / "story.json").write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(dataset.StoryError, match=r"story 01: shot 2 lists '无名氏' \(ch\)"):
        dataset.load_story(d)


def test_zero_based_set_missing_shot_00_is_detected_from_sibling_stories(tmp_path):
    story = dataset.load_story(DATA / "vistorybench" / "01")
    gen = tmp_path / "gen"
    src = sorted((DATA / "generators" / "vistory_faithful" / "01").iterdir())
    for sid in ("01", "08"):                     # the generator numbers every story from 0
        (gen / sid).mkdir(parents=True)
        for i, p in enumerate(src):
            shutil.copy(p, gen / sid / f"shot_{i:02d}.png")
    (gen / "01" / "shot_00.png").unlink()        # story 01 alone now looks 1-based with shot 6 missing
    with pytest.raises(dataset.OutputError, match=r"numbered from 0 \(story 08 of this generator has a shot 0\) and "
                                            r"shot_00 is missing here"):
        dataset.index_outputs(story, gen / "01", "g")
    shutil.rmtree(gen / "08")                    # no sibling to tell: accepted, the ambiguity is named
    idx = dataset.index_outputs(story, gen / "01", "g")
    assert idx.missing == (6,) and "if these outputs are numbered from 0" in idx.warning
    (gen / "01" / "shot_03.png").unlink()        # a gap in the middle: plainly 1-based, no warning
    assert dataset.index_outputs(story, gen / "01", "g").warning is None


def bomb_png(path: Path, w: int = 20000, h: int = 20000) -> None:
    """A valid 1-bit PNG of w x h (400 Mpx): 48 KB on disk, 50 MB of rows, 400 MB as RGB... x3."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    c = zlib.compressobj(1)
    block = (b"\x00" * (1 + (w + 7) // 8)) * 500
    idat = b"".join(c.compress(block) for _ in range(h // 500)) + c.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 1, 0, 0, 0, 0))
                     + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def test_decompression_bomb_is_one_clear_error_and_the_rest_scores(tmp_path, monkeypatch):
    """A 20000x20000 PNG among a generator's shots: that shot is unreadable with one message; the generator still
    scores on its other shots and stories, and the judge answers that failed count as evaluator failures that do
    not lower alignment."""
    data = _world(tmp_path, generators=("vistory_faithful",), stories=("01", "08"))
    bomb = data / "generators" / "vistory_faithful" / "01" / "shot_02.png"
    bomb_png(bomb)
    with pytest.raises(dataset.ShotReadError, match=r"shot_02.png: image has 400 Mpx, above the 179 Mpx "
                                              r"decompression-bomb limit; not decoded"):
        dataset.read_shot_image(bomb)
    ref = tmp_path / "refbomb" / "01"
    shutil.copytree(DATA / "vistorybench" / "01", ref)
    bomb_png(ref / "image" / "Inky" / "00.jpg")
    with pytest.raises(dataset.StoryError, match=r"story 01: reference image of character 'Inky': 00.jpg: image has "
                                           r"400 Mpx"):
        dataset.load_story(ref)

    def responder(body):  # camera questions hit an outage; the others are answered from the prompt
        text = body["messages"][0]["content"][-1]["text"]
        if "Shot Perspective Design" in text:
            return {"status": 500, "body": {"type": "error", "error": {"type": "api_error", "message": "down"}}}
        return tool_answer({"analysis": "ok", "score": 4 if "Setting Description" in text else 2})

    with FakeAnthropic(responder=responder) as srv, instance_for_test() as instance:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        judge = Judge(mode="live", base_url=srv.base_url, cache_dir=str(tmp_path / "cache"), backoff_s=0.001,
                      max_retries=1, breaker_threshold=0)
        stats, resources, _ = _run(instance, data, tmp_path / "store", judge=judge)
        assert not stats.failed, stats.failed
        store = resources["store"]
        out = store.query("SELECT shot, status, error FROM vistorybench_outputs WHERE story_id = '01'").set_index("shot")
        assert out.loc[2, "status"] == "unreadable" and "decompression-bomb limit" in out.loc[2, "error"]
        assert (out.drop(index=2)["status"] == "ok").all()
        board = store.query("SELECT * FROM vistorybench_leaderboard WHERE slice = 'full'").set_index("metric_id")
        assert json.loads(board.loc["cids_self", "detail"])["stories_scored"] == 2
        assert pd.notna(board.loc["inception_score", "value"])
        # the unreadable shot is not read by the Inception Score: coverage = images read / shots
        assert board.loc["inception_score", "n_failed"] == 1 and board.loc["inception_score", "coverage"] < 1
        # 0-4 sub-scores on the leaderboard; the failed aspect is None with its reason and does not lower the total;
        # the unreadable shot is the generator's: a 0 question in value, left out of the paper's raw mean
        assert board.loc["alignment.scene", "raw_mean"] == 4.0
        assert board.loc["alignment.character_action", "raw_mean"] == 2.0
        assert board.loc["alignment.scene", "value"] == pytest.approx((4 * 5 / 6 + 4) / 2)
        assert board.loc["alignment.scene", "n_failed"] == 1
        assert pd.isna(board.loc["alignment.camera", "value"])
        assert "judge failed: HTTP 500 after 1 retries" in board.loc["alignment.camera", "reason"]
        sub = store.query("SELECT metric_id, value FROM vistorybench_alignment WHERE level = 'item'")
        single = sub[sub.metric_id == "alignment.single_character_action"]["value"].mean()
        assert board.loc["alignment", "raw_mean"] == pytest.approx((4 + 2 + single) / 3 * 25)
        assert board.loc["alignment", "value"] < board.loc["alignment", "raw_mean"]
        items = store.query("SELECT item, n_failed, n_failed_evaluator FROM vistorybench_alignment "
                            "WHERE level = 'item' AND metric_id = 'alignment.camera'")
        assert (items["n_failed"] > 0).all() and (items["n_failed"] == items["n_failed_evaluator"]).all()
        ev = instance.get_latest_materialization_event(AssetKey("vistorybench_alignment"),
                                                       ).asset_materialization.metadata
        assert ev["evaluator_failures"].value > 0 and "HTTP 500" in ev["evaluator_failure_reasons"].value
        assert ev["judge_state"].value == judge.state_digest()


def test_cids_without_a_detector_is_none_with_the_detectors_reason(tmp_path):
    from bench_resources.models import ModelRegistry

    class NoDetectorRegistry(ModelRegistry):
        def slot_or_reason(self, name, device=None):
            if name == "character_detector":
                return None, "slot 'character_detector' unavailable: weights not found (test)"
            return super().slot_or_reason(name, device)

    data = _world(tmp_path, generators=("vistory_faithful",), stories=("08",))
    with instance_for_test() as instance:
        stats, resources, _ = _run(instance, data, tmp_path / "store", models=NoDetectorRegistry())
        assert not stats.failed, stats.failed
        store = resources["store"]
        rows = store.query("SELECT metric_id, level, value, n_eval, n_skipped, n_failed_evaluator, reason "
                           "FROM vistorybench_scores WHERE metric_id IN ('cids_cross', 'cids_self', 'occm')")
        items = rows[rows.level == "item"].set_index("metric_id")
        n_chars = len(dataset.load_story(data / "vistorybench" / "08").characters)
        for mid in ("cids_cross", "cids_self"):
            assert pd.isna(items.loc[mid, "value"]) and items.loc[mid, "n_eval"] == 0, items.loc[mid].to_dict()
            assert items.loc[mid, "n_skipped"] == n_chars == items.loc[mid, "n_failed_evaluator"]
            assert "character_detector" in items.loc[mid, "reason"]
        assert (rows[rows.level == "character"]["value"].isna()).all()  # no character scored 0
        assert pd.isna(items.loc["occm", "value"]) and "character_detector" in items.loc["occm", "reason"]
        meta = instance.get_latest_materialization_event(AssetKey("vistorybench_scores")).asset_materialization.metadata
        assert meta["evaluator_failures"].value > 0 and "character_detector" in meta["evaluator_failure_reasons"].value
        board = store.query("SELECT value, reason FROM vistorybench_leaderboard WHERE slice = 'full' AND "
                            "metric_id = 'cids_self'")
        assert pd.isna(board["value"].iloc[0]) and "character_detector" in board["reason"].iloc[0]


def test_character_rows_zero_only_where_detection_ran():
    """Pure: a character scheduled only in a shot that was not searched is skipped; one searched and never matched
    counts 0 (protocol 1.3)."""
    from bench_assets.vistorybench.scores import character_rows
    story = dataset.load_story(DATA / "vistorybench" / "01")
    refs = pd.DataFrame([{"character": k, "ref_index": 0, "embedding": list(_unit(1, i, 0)), "reason": None,
                          "mirror_embedding": None} for i, k in enumerate(story.characters)])
    # shot 5 (Ellen, Whiskers) was searched and found nobody; every other shot was not searched
    matches = pd.DataFrame([{"kind": "shot", "shot": s.index, "n_detections": 0 if s.index == 5 else None,
                             "reason": None if s.index == 5 else "detector down", "matched": None, "crop_id": None,
                             "source_sha256": None, "box": None, "match_score": None, "face": None,
                             "features": None} for s in story.shots])
    rows = pd.DataFrame(character_rows("g", story, "en", refs, matches, [1, 2, 3, 4, 5, 6], True))
    ch = rows[(rows.level == "character") & (rows.metric_id == "cids_cross")].set_index("entity_id")
    assert ch.loc["Ellen", "value"] == 0.0 and ch.loc["Whiskers", "value"] == 0.0   # searched, never matched
    assert pd.isna(ch.loc["Inky", "value"]) and "detector down" in ch.loc["Inky", "reason"]
    item = rows[(rows.level == "item") & (rows.metric_id == "cids_cross")].iloc[0]
    assert (item["value"], item["n_eval"], item["n_skipped"]) == (0.0, 2, 1)


# ----------------------------------------------------------------------------------------- human alignment

def test_human_alignment_wide_and_long_tables_and_splits(tmp_path):
    from bench_assets.vistorybench import human_alignment
    long = pd.DataFrame({"method": list("abcde") * 2, "dimension": ["id"] * 5 + ["aes"] * 5,
                         "rating": [1, 2, 3, 4, 5, 5, 3, 4, 1, 2]})
    wide = pd.DataFrame({"method": list("abcde"), "id": [1, 2, 3, 4, 5], "aes": [5, 3, 4, 1, 2]})
    assert human_alignment.ratings_long(wide).sort_values(["dimension", "method"]).reset_index(drop=True).equals(
        human_alignment.ratings_long(long).sort_values(["dimension", "method"]).reset_index(drop=True))
    board = pd.DataFrame({"generator": list("abcde") * 2, "slice": ["lite"] * 5 + ["full"] * 5,
                          "metric_id": "cids_self", "value": [10, 20, 30, 40, 50, 50, 40, 30, 20, 10]})
    lite = human_alignment.human_alignment_table(long, board, "lite").set_index("dimension")
    full = human_alignment.human_alignment_table(wide, board, "full").set_index("dimension")
    assert lite.loc["id", "kendall_tau"] == pytest.approx(1.0) and full.loc["id", "kendall_tau"] == pytest.approx(-1.0)
    x, y = [5, 3, 4, 1, 2], [10, 20, 30, 40, 50]
    assert lite.loc["aes", "spearman_rho"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert lite.loc["aes", "pearson_r"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert set(lite["slice"]) == {"lite"} and lite.loc["id", "n_methods"] == 5
    # an outside table may call the slice column 'split' (the paper's word)
    assert human_alignment.human_alignment_table(long, board.rename(columns={"slice": "split"}), "lite").equals(
        human_alignment.human_alignment_table(long, board, "lite"))
    # an outside metrics table, wide, without a slice column: taken as is
    outside = tmp_path / "metrics.csv"
    pd.DataFrame({"method": list("abcde"), "cids_self": [1, 2, 3, 5, 4], "occm": [9, 8, 7, 6, 5]}).to_csv(outside,
                                                                                                   index=False)
    ratings = tmp_path / "ratings.csv"
    wide.to_csv(ratings, index=False)
    import argparse
    parser = argparse.ArgumentParser()
    human_alignment.add_arguments(parser)
    args = parser.parse_args(["--ratings", str(ratings), "--metrics", str(outside), "--metric", "occm"])
    assert args.slice == "lite"
    t = human_alignment.table_from_args(args, leaderboard=lambda: pytest.fail("the leaderboard is not needed"))
    assert list(t["metric_id"].unique()) == ["occm"]
    assert t.set_index("dimension").loc["id", "kendall_tau"] == pytest.approx(-1.0)
    # errors name the file and what is wrong
    (tmp_path / "bad.csv").write_text("who,score\nx,1\n")
    with pytest.raises(human_alignment.TableError, match=r"ratings .*bad.csv: no method column"):
        human_alignment.read_ratings(tmp_path / "bad.csv")
    (tmp_path / "bad2.csv").write_text("method,dimension,rating\na,id,high\n")
    with pytest.raises(human_alignment.TableError, match=r"column 'rating' holds non-numeric value 'high'"):
        human_alignment.read_ratings(tmp_path / "bad2.csv")
    args = parser.parse_args(["--ratings", str(ratings), "--split", "full", "--metric", "nope"])
    with pytest.raises(human_alignment.TableError, match="unknown metric id"):
        human_alignment.table_from_args(args, leaderboard=lambda: board)
    few = human_alignment.human_alignment_table(long, board[board.generator.isin(["a", "b"])], "lite")
    assert few["kendall_tau"].isna().all() and "correlations need at least 3" in few["reason"].iloc[0]
