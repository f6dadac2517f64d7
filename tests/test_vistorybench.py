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
from bench_assets.core.generators import discover_generators
from bench_assets.core.runner import evaluate
from bench_assets.vistorybench import dataset as D
from bench_assets.vistorybench import metrics as M
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from tests.fake_anthropic import FakeAnthropic, tool_answer

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
VSB = BENCHMARKS["vistorybench"]
GENERATORS = ("vistory_faithful", "vistory_drift", "vistory_copy_paste", "vistory_faithful_ch")


# ----------------------------------------------------------------------------------------- metric math

def _unit(*v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def test_hungarian_beats_greedy_and_never_uses_nan_pairs():
    # greedy would give character 0 the 0.9 crop and leave character 1 with 0.1; Hungarian maximises the total
    s = np.array([[0.9, 0.8], [0.85, 0.1]])
    assert sorted(M.hungarian_match(s)) == [(0, 1), (1, 0)]
    s = np.array([[np.nan, 0.2], [np.nan, 0.3]])  # crop 0 has no face: one character stays unmatched
    assert M.hungarian_match(s) == [(1, 1)]


def test_cids_values_by_hand():
    a, b, c = _unit(1, 0), _unit(0.6, 0.8), _unit(0, 1)
    refs = np.stack([a, c])
    assert M.cids_cross(np.stack([a, b]), refs) == pytest.approx((1 + 0 + 0.6 + 0.8) / 4)
    assert M.cids_cross(np.zeros((0, 2)), refs) == 0.0           # never matched counts 0
    assert M.cids_self(np.stack([a, b, c])) == pytest.approx((0.6 + 0 + 0.8) / 3)  # strict upper triangle
    assert M.cids_self(np.stack([a])) == 1.0
    assert M.cids_self(np.zeros((0, 2))) == 0.0


def test_occm_copy_paste_is_alignment_by_hand():
    assert M.occm(3, 3) == pytest.approx(100.0)
    assert M.occm(1, 2) == pytest.approx(100 * np.exp(-1 / (2 + 1e-6)))
    assert M.occm(2, 0) is None
    ref, mirror = _unit(1, 0), _unit(0, 1)
    assert M.copy_paste_probability(ref, ref, mirror) == pytest.approx(1.0)           # an exact copy
    assert M.copy_paste_probability(_unit(1, 1), ref, mirror) == pytest.approx(0.5)   # as close to the mirror
    assert M.copy_paste_paper(ref, ref, np.stack([mirror, _unit(1, 1)])) == pytest.approx(1 - (0 + 2 ** -0.5) / 2)
    uniform = np.full((4, 10), 0.1)
    assert M.inception_score(uniform) == pytest.approx(1.0)
    onehot = np.eye(4)
    assert M.inception_score(onehot) == pytest.approx(4.0, rel=1e-6)  # 4 confident, distinct classes
    v, missing = M.alignment_score({"scene": [4, 2], "camera": [3], "character_action": [], "single_character_action": [1]})
    assert v == pytest.approx((3 + 3 + 1) / 3 * 25) and missing == ["character_action"]


def test_mean_rank_and_human_alignment_match_scipy():
    vals = {"a": {"cids_cross": 0.9, "occm": 80.0}, "b": {"cids_cross": 0.5, "occm": 90.0},
            "c": {"cids_cross": 0.5, "occm": None}}
    r = M.mean_rank(vals, ["cids_cross", "occm"])
    assert r["a"] == {"mean_rank": 1.5, "ranked_columns": 2}     # (1 + 2) / 2
    assert r["b"]["mean_rank"] == pytest.approx((2.5 + 1) / 2)   # tie on cids_cross
    assert r["c"] == {"mean_rank": 2.5, "ranked_columns": 1}
    human = {"m1": 1.0, "m2": 2.0, "m3": 3.5, "m4": 3.0, "m5": 9.0}
    metric = {"m1": 10.0, "m2": 30.0, "m3": 20.0, "m4": 40.0, "m5": None, "extra": 1.0}
    c = M.human_alignment(human, metric)
    assert c.methods == ("m1", "m2", "m3", "m4") and c.n_methods == 4
    x, y = [1, 2, 3.5, 3], [10, 30, 20, 40]
    assert c.kendall_tau == pytest.approx(stats.kendalltau(x, y).statistic)
    assert c.spearman_rho == pytest.approx(1 - 6 * 6 / (4 * 15))  # rank differences 0, -1, 2, -1
    assert c.pearson_r == pytest.approx(np.corrcoef(x, y)[0, 1])
    few = M.human_alignment({"m1": 1, "m2": 2}, {"m1": 1, "m2": 2})
    assert few.kendall_tau is None and "at least 3" in few.reason


# ----------------------------------------------------------------------------------------- the release reader

def test_release_reader_both_languages_and_lite():
    ids = D.discover_stories(DATA / "vistorybench")
    assert ids == ["01", "02", "08"]
    s = D.load_story(DATA / "vistorybench" / "01")
    assert s.lite and not D.load_story(DATA / "vistorybench" / "02").lite
    assert {c.tag for c in s.characters.values()} == set(D.TAGS)
    # the Chinese list maps to the same character keys as the English one
    assert all(sh.appearing["en"] == sh.appearing["ch"] for sh in s.shots)
    assert s.shot(1).text["Setting Description"]["ch"].endswith("白天。")
    assert all(1 <= len(c.references) <= 3 for c in s.characters.values())


@pytest.mark.parametrize("name,index", [("shot_07.png", 7), ("07.png", 7), ("x_7.jpg", 7), ("shot_7_v2_12.png", 12),
                                        ("cover.png", None)])
def test_shot_index_from_name(name, index):
    assert D.shot_index_from_name(name) == index


def _story_copy(tmp_path, sid="01") -> Path:
    dst = tmp_path / "vistorybench" / sid
    shutil.copytree(DATA / "vistorybench" / sid, dst)
    return dst


def test_bad_stories_one_clear_error_each(tmp_path):
    d = _story_copy(tmp_path, "01")
    raw = json.loads((d / "story.json").read_text(encoding="utf-8-sig"))
    shutil.rmtree(d / "image" / "Inky")
    with pytest.raises(D.StoryError, match=r"story 01: character 'Inky' has no reference folder"):
        D.load_story(d)
    d = _story_copy(tmp_path, "02")
    raw = json.loads((d / "story.json").read_text(encoding="utf-8-sig"))
    raw["Shots"][1]["Characters Appearing"]["en"].append("Nobody")
    (d / "story.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(D.StoryError, match=r"story 02: shot 2 lists 'Nobody' \(en\).*not in 'Characters'"):
        D.load_story(d)
    d = _story_copy(tmp_path, "08")
    (d / "image" / "Whiskers" / "00.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(D.StoryError, match=r"story 08: reference image 00.jpg of character 'Whiskers' does not decode"):
        D.load_story(d)
    raw = json.loads((DATA / "vistorybench" / "01" / "story.json").read_text(encoding="utf-8-sig"))
    raw["Shots"] = []
    d = tmp_path / "vistorybench" / "03"
    shutil.copytree(DATA / "vistorybench" / "01" / "image", d / "image")
    (d / "story.json").write_text(json.dumps(raw))
    with pytest.raises(D.StoryError, match="story 03: the story has no shots"):
        D.load_story(d)


def test_output_alignment_errors(tmp_path):
    story = D.load_story(DATA / "vistorybench" / "01")
    out = tmp_path / "gen" / "01"
    out.mkdir(parents=True)
    src = sorted((DATA / "generators" / "vistory_faithful" / "01").iterdir())
    for i, p in enumerate(src):                       # 0-based naming: shot_00 .. shot_05
        shutil.copy(p, out / f"shot_{i:02d}.png")
    with pytest.raises(D.OutputError, match=r"start at index 0 .*1-based"):
        D.index_outputs(story, out, "g")
    (out / "shot_00.png").unlink()                    # mixed: now 1..5 present, 6 missing -> scored, listed
    idx = D.index_outputs(story, out, "g")
    assert idx.missing == (6,) and sorted(idx.files) == [1, 2, 3, 4, 5]
    shutil.copy(src[0], out / "01.png")               # shot 1 twice
    with pytest.raises(D.OutputError, match="shot 1 has two outputs"):
        D.index_outputs(story, out, "g")
    (out / "01.png").unlink()
    shutil.copy(src[0], out / "shot_09.png")
    with pytest.raises(D.OutputError, match=r"outputs for shots \[9\] but the story has 6 shots"):
        D.index_outputs(story, out, "g")
    # video generators: the first frame is the shot image
    frame = D.read_shot_image(DATA / "generators" / "vistory_faithful_ch" / "01" / "shot_01.mp4")
    assert frame.shape == (160, 256, 3)


# ----------------------------------------------------------------------------------------- end to end

def _world(tmp_path, generators=GENERATORS, stories=("01", "02", "08")):
    data = tmp_path / "data"
    for s in stories:
        shutil.copytree(DATA / "vistorybench" / s, data / "vistorybench" / s)
    shutil.copy(DATA / "vistorybench" / "human_ratings.csv", data / "vistorybench" / "human_ratings.csv")
    for g in generators:
        shutil.copytree(DATA / "generators" / g, data / "generators" / g)
    return data


def _run(instance, data, store_root, judge=None):
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    overrides = {"judge": judge} if judge is not None else {}
    resources = build_resources(paths=paths, store_root=str(store_root), **overrides)
    gens, errors = discover_generators(paths.generators_dir, "vistorybench")
    stats = evaluate(instance, assets=VSB.assets, resources=resources, partitions=VSB.partitions,
                     items=VSB.item_ids(paths), generators=gens, item_assets=VSB.item_assets,
                     generator_assets=VSB.generator_assets, aggregate_assets=VSB.aggregate_assets,
                     progress=lambda s: None)
    return stats, resources, errors


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vsb")
    data = _world(tmp)
    with instance_for_test() as instance:
        stats, resources, errors = _run(instance, data, tmp / "store")
        board = resources["store"].query("SELECT * FROM vistorybench_leaderboard")
        yield stats, resources, errors, board, instance


def test_leaderboard_every_metric_every_generator(offline_run):
    stats, resources, errors, board, _ = offline_run
    assert not errors and not stats.failed, stats.failed
    full = board[board.split == "full"]
    v = full.pivot(index="metric_id", columns="generator", values="value")
    assert set(v.columns) == set(GENERATORS)
    assert set(v.index) == set(M.RANKED) | {"copy_paste", "copy_paste_paper"}
    nones = full[full.value.isna()]
    assert nones["reason"].notna().all() and (nones["reason"].str.len() > 0).all()
    # offline: no CSD or aesthetic v2.5 weights ship; no judge -> None with the slot's / judge's reason
    assert set(nones.metric_id) == {"csd_cross", "csd_self", "aesthetics", "alignment"}
    assert nones[nones.metric_id == "csd_cross"]["reason"].str.contains("style_csd").all()
    assert nones[nones.metric_id == "alignment"]["reason"].str.contains("judge off").all()
    # validity: the copy-paste baseline copies the references; faithful keeps identities, drift loses them
    assert v.loc["cids_cross"].idxmax() == "vistory_copy_paste", v.loc["cids_cross"].to_dict()
    assert v.loc["cids_self", "vistory_faithful"] > v.loc["cids_self", "vistory_drift"] + 10
    assert v.loc["copy_paste", "vistory_copy_paste"] > v.loc["copy_paste", "vistory_faithful"]
    assert v.loc["occm", "vistory_faithful"] > v.loc["occm", "vistory_drift"]
    # both languages evaluate: the Chinese run of faithful scores close to the English one
    assert v.loc["cids_self", "vistory_faithful_ch"] == pytest.approx(v.loc["cids_self", "vistory_faithful"], abs=15)
    # the baseline is shown, not ranked; ranks cover the rest
    ranks = full.drop_duplicates("generator").set_index("generator")
    assert pd.isna(ranks.loc["vistory_copy_paste", "mean_rank"]) and not ranks.loc["vistory_copy_paste", "ranked"]
    assert ranks.loc["vistory_faithful", "mean_rank"] < ranks.loc["vistory_drift", "mean_rank"]
    lite = board[board.split == "lite"]
    assert set(lite[lite.metric_id == "cids_self"]["stories"]) == {2}   # 01 and 08


def test_provenance_and_human_alignment(offline_run):
    _, resources, _, board, _ = offline_run
    store = resources["store"]
    rows = store.query("SELECT * FROM vistorybench_scores WHERE metric_id = 'cids_self' AND level = 'character' "
                       "AND generator = 'vistory_faithful'")
    detail = json.loads(rows["detail"].iloc[0])
    assert detail["crop_ids"] and all(store.has_artifact(c) for c in detail["crop_ids"])
    crops = store.query("SELECT crop_id, source_sha256, matched FROM vistorybench_matches WHERE kind = 'crop'")
    assert crops["source_sha256"].notna().all() and crops["matched"].notna().any()
    ha = store.query("SELECT * FROM vistorybench_human_alignment WHERE metric_id = 'cids_self'")
    assert ha["n_methods"].iloc[0] == 4
    # the embedded ratings order faithful > faithful_ch > copy_paste > drift; cids_self must agree in sign
    assert ha["kendall_tau"].iloc[0] > 0 and ha["spearman_rho"].iloc[0] > 0


def test_incremental_second_run_does_nothing(offline_run, tmp_path):
    stats, resources, _, _, instance = offline_run
    data = Path(resources["paths"].data_root)
    again, _, _ = _run(instance, data, Path(resources["store"].root))
    assert again.materialized == [] and again.forwards == 0


def test_bad_story_fails_alone_and_zero_based_outputs_are_counted(tmp_path):
    data = _world(tmp_path, generators=("vistory_faithful",), stories=("01", "02"))
    raw = json.loads((data / "vistorybench" / "02" / "story.json").read_text(encoding="utf-8-sig"))
    raw["Shots"][0]["Characters Appearing"]["en"] = ["Ghost"]
    (data / "vistorybench" / "02" / "story.json").write_text(json.dumps(raw))
    gdir = data / "generators" / "vistory_faithful" / "01"
    for p in sorted(gdir.iterdir()):                     # shift story 01's outputs to 0-based
        p.rename(gdir / f"shot_{int(p.stem.split('_')[1]) - 1:02d}.png")
    shutil.copytree(DATA / "vistorybench" / "08", data / "vistorybench" / "08")
    with instance_for_test() as instance:
        stats, resources, _ = _run(instance, data, tmp_path / "store")
        failed = {(pk, msg) for _, pk, msg in stats.failed}
        assert any(pk == "02" and "shot 1 lists 'Ghost' (en)" in msg for pk, msg in failed), failed
        scores = resources["store"].query("SELECT item, metric_id, value, n_failed, reason FROM vistorybench_scores "
                                          "WHERE level = 'item' AND metric_id = 'cids_self'").set_index("item")
        assert pd.isna(scores.loc["01", "value"]) and "1-based" in scores.loc["01", "reason"]
        assert pd.notna(scores.loc["08", "value"])
        board = resources["store"].query("SELECT * FROM vistorybench_leaderboard WHERE split = 'full' "
                                         "AND metric_id = 'cids_self'")
        assert board["stories_scored"].iloc[0] == 1 and "stories not evaluated: ['02']" in board["reason"].iloc[0]


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
        board = resources["store"].query("SELECT * FROM vistorybench_leaderboard WHERE split = 'full'")
        a = board[board.metric_id == "alignment"].set_index("generator")["value"]
        # copy-paste: scene 0, camera 1, action 1 on the grey canvas; its character crops are the references (4)
        assert a["vistory_copy_paste"] == pytest.approx((0 + 1 + 1 + 4) / 4 * 25)
        assert a["vistory_faithful"] > 75
        assert a.idxmin() == "vistory_copy_paste"
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
    from dagster import DagsterInstance, build_sensor_context
    from bench_assets.core.automation import generator_sensor_factory
    data = _world(tmp_path, generators=("vistory_drift",), stories=("08",))
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    sensor = generator_sensor_factory(benchmark="vistorybench", partitions=VSB.partitions,
                                      item_ids=lambda: VSB.item_ids(paths), generators_root=lambda: str(paths.generators_dir),
                                      item_assets=VSB.item_assets, generator_assets=VSB.generator_assets)
    with instance_for_test() as instance:
        res = sensor(build_sensor_context(instance=instance))
        assert instance.get_dynamic_partitions("vistorybench_stories") == ["08"]
        assert instance.get_dynamic_partitions("vistorybench_generators") == ["vistory_drift"]
        keys = {r.partition_key for r in res.run_requests}
        assert "08" in keys  # the story's own assets first; generator runs follow once it is materialised


def test_leaderboard_cells_carry_one_protocol(offline_run):
    _, _, _, board, _ = offline_run
    assert board["comparable"].all() and board.loc[board.metric_id == "cids_self", "protocol"].str.len().gt(0).all()


def test_report_links_every_cell_to_an_audit_page_with_crops(offline_run):
    _, resources, _, board, _ = offline_run
    root = Path(resources["store"].root) / "reports"
    html = (root / "vistorybench.html").read_text()
    assert "vistorybench_audit/cids_self__vistory_faithful.html" in html
    page = (root / "vistorybench_audit" / "cids_self__vistory_faithful.html").read_text()
    assert "<h2>Per story</h2>" in page
    import re
    crops = re.findall(r'<img class="crop" src="([^"]+)"', page)
    assert crops and all((root / "vistorybench_audit" / c).resolve().is_file() for c in crops)
    n_pages = len(list((root / "vistorybench_audit").glob("*.html")))
    assert n_pages == len(board[board.split == "full"])
