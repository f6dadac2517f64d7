"""Issue 35: ViStoryBench results in the official result tree (bench_assets/vistorybench/official.py), read back by
the official code itself where its mirror is on this machine (ViStoryBench/vistorybench: the ResultManager of
vistorybench/result_management/manager.py recomputes summary.json from our story_results.json, and
utils/export_bench_results_csv.py flattens the tree to its CSV), and imported back for bench import-results.
The official files are taken from the bare mirror at test time into tmp_path, never committed."""
from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from bench_assets.vistorybench import official as VO
from bench_assets.vistorybench.metric_specs import METRICS

MIRROR = Path("/work/.mirror/ViStoryBench+vistorybench/repo")
KNOWN = {s.id for s in METRICS.specs}
TS = "20261129_050000"


def _records() -> pd.DataFrame:
    """Two stories, values varying by story and metric; story 02's csd_cross missing (None)."""
    rows = []
    for story, base in (("01", 60.0), ("02", 40.0)):
        for i, mid in enumerate(VO.OFFICIAL):
            v = None if (story, mid) == ("02", "csd_cross") else base + i
            if mid.startswith("alignment."):
                v = 1.0 + i / 10 + (0.5 if story == "01" else 0.0)
            rows.append({"generator": "mygen", "item": story, "metric_id": mid, "value": v})
    rows.append({"generator": "other", "item": "01", "metric_id": "occm", "value": 3.0})
    return pd.DataFrame(rows)


def _write(files: dict, root: Path) -> None:
    for rel, doc in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(doc, indent=2))


def test_export_writes_the_official_tree_on_the_official_scale(tmp_path):
    files = VO.export(_records(), "mygen", language="ch", timestamp=TS, dataset_values={"inception_score": 7.5})
    run = f"mygen/base/ch/{TS}"
    assert set(files) == {f"{run}/metadata.json", f"{run}/summary.json", f"{run}/metrics/cids/story_results.json",
                          f"{run}/metrics/csd/story_results.json", f"{run}/metrics/prompt_align/story_results.json",
                          f"{run}/metrics/aesthetic/story_results.json", f"{run}/metrics/diversity/scores.json"}
    cids = files[f"{run}/metrics/cids/story_results.json"]
    assert sorted(cids) == ["01", "02"]
    s1 = cids["01"]
    assert s1["run"] == {"method": "mygen", "mode": "base", "language": "ch", "dataset": "ViStory", "timestamp": TS}
    assert s1["scope"] == {"level": "story", "story_id": "01"} and s1["status"] == "complete"
    # cosine x100 on our board -> cosine on theirs; OCCM 0-100 on both
    i_cross = list(VO.OFFICIAL).index("cids_cross")
    assert s1["metrics"]["cids_cross_mean"] == pytest.approx((60.0 + i_cross) / 100)
    assert s1["metrics"]["occm"] == pytest.approx(60.0 + list(VO.OFFICIAL).index("occm"))
    csd = files[f"{run}/metrics/csd/story_results.json"]
    assert csd["02"]["metrics"]["cross_csd"] is None        # missing stays null, never 0
    summ = files[f"{run}/summary.json"]["metrics"]
    i_csd = list(VO.OFFICIAL).index("csd_cross")
    assert summ["csd"]["metrics"]["cross_csd"] == pytest.approx((60.0 + i_csd) / 100)   # story 01 only
    assert summ["diversity"]["metrics"]["inception_score"] == 7.5


def test_read_results_round_trip(tmp_path):
    _write(VO.export(_records(), "mygen", timestamp=TS), tmp_path / "out")
    method, rows, problems, info = VO.read_results(tmp_path / "out", KNOWN)
    assert (method, problems, info["language"], info["timestamp"]) == ("mygen", [], "en", TS)
    df = pd.DataFrame(rows)
    items = df[df.level == "item"].set_index(["item", "metric_id"])
    recs = _records().query("generator == 'mygen'").set_index(["item", "metric_id"])["value"]
    for key, v in recs.items():
        got = items.loc[key, "value"]
        assert (pd.isna(got) if v is None or pd.isna(v) else got == pytest.approx(v)), key
    ov = df[df.level == "overall"].set_index("metric_id")
    assert ov.loc["cids_cross", "value"] == pytest.approx(recs.xs("cids_cross", level=1).mean())
    assert set(ov["slice"]) == {"full"}


def test_read_results_names_a_bad_story_file_and_reads_the_rest(tmp_path):
    _write(VO.export(_records(), "mygen", timestamp=TS), tmp_path)
    bad = tmp_path / "mygen" / "base" / "en" / TS / "metrics" / "csd" / "story_results.json"
    bad.write_text("{oops")
    method, rows, problems, _ = VO.read_results(tmp_path / "mygen", KNOWN)
    assert len(problems) == 1 and "metrics/csd/story_results.json" in problems[0]
    assert {r["metric_id"] for r in rows if r["level"] == "item"} >= {"cids_cross", "occm", "aesthetics"}
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no ViStoryBench run folders"):
        VO.read_results(tmp_path / "empty", KNOWN)


def _official(rel: str, dest: Path) -> Path:
    if not (MIRROR / "HEAD").exists():
        pytest.skip("ViStoryBench mirror not on this machine")
    text = subprocess.run(["git", "--git-dir", str(MIRROR), "show", f"HEAD:{rel}"], capture_output=True, text=True,
                          check=True).stdout
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_official_result_manager_recomputes_our_summary(tmp_path):
    """Their ResultManager.compute_and_save_summary over our story_results.json gives our summary.json."""
    base = tmp_path / "bench_results"
    files = VO.export(_records(), "mygen", timestamp=TS)
    _write(files, base)
    mod_path = _official("vistorybench/result_management/manager.py", tmp_path / "official" / "manager.py")
    mod = _load(mod_path, "vsb_official_manager")
    rm = mod.ResultManager("mygen", mode="base", language="en", timestamp=TS, base_path=str(base))
    assert rm.load_metric_result("cids", "story")["01"]["metrics"]["occm"] == pytest.approx(
        60.0 + list(VO.OFFICIAL).index("occm"))
    ours = json.loads((base / f"mygen/base/en/{TS}/summary.json").read_text())
    rm.compute_and_save_summary()
    theirs = rm.load_summary()
    assert theirs["run"] == ours["run"]
    assert set(theirs["metrics"]) == set(ours["metrics"])
    for m, block in ours["metrics"].items():
        for k, v in block["metrics"].items():
            assert theirs["metrics"][m]["metrics"][k] == pytest.approx(v), (m, k)


def test_official_csv_exporter_reads_our_tree(tmp_path):
    """Their utils/export_bench_results_csv.py readers (its main writes only the methods listed in its source, so
    its functions are called): summary.json flattened with the front columns parsed from our path, and the
    per-subset means from our story_results.json."""
    base = tmp_path / "bench_results"
    _write(VO.export(_records(), "mygen", language="ch", timestamp=TS, dataset_values={"inception_score": 7.5}),
           base)
    mod = _load(_official("utils/export_bench_results_csv.py", tmp_path / "official" / "utils" / "export.py"),
                "vsb_official_export_csv")
    files = mod.iter_summary_files(base)
    assert len(files) == 1
    front, metrics = mod.process_summary_file(base, files[0])
    # its front columns parsed from our path: method, model (= mode), mode (= language), timestamp
    assert front == {"method": "mygen", "model": "base", "mode": "ch", "timestamp": TS}
    i = list(VO.OFFICIAL).index("cids_self")
    assert float(metrics["metrics.cids.metrics.cids_self_mean"]) == pytest.approx((60.0 + 40.0 + 2 * i) / 2 / 100)
    assert float(metrics["metrics.diversity.metrics.inception_score"]) == 7.5
    run_dir = files[0].parent
    assert mod.derive_story_ids_from_run_story_results(run_dir) == {"01", "02"}
    only_02 = mod.aggregate_metrics_for_run_subset(run_dir, {"02"})
    assert only_02["metrics.cids.metrics.occm"] == pytest.approx(40.0 + list(VO.OFFICIAL).index("occm"))
    assert "metrics.csd.metrics.cross_csd" not in only_02      # our null is no number to them: left out, not 0


def test_cli_export_official_and_import_results_round_trip(tmp_path, monkeypatch, capsys):
    """bench export --format official from a store (board + story rows written into a real Store), then
    bench import-results of the written tree: the imported rows sit beside ours, never comparable."""
    from bench_assets import cli
    from tests.support import cli_env
    from bench_assets.core.metric_spec import board_frame
    from bench_resources.store import Store
    cli_env(monkeypatch, tmp_path)
    store = Store(root=str(tmp_path / "store"))
    board = board_frame("vistorybench", [
        {"generator": "mygen", "metric_id": "cids_cross", "slice": "full", "value": 50.0, "n_eval": 2},
        {"generator": "mygen", "metric_id": "inception_score", "slice": "full", "value": 6.25, "n_eval": 9}], METRICS)
    store.write_table(board, store.table_path("vistorybench_leaderboard", None))
    recs = _records().assign(level="item")
    store.write_table(recs, store.table_path("vistorybench_scores", None))
    store.write_table(pd.DataFrame([{"generator": "mygen", "story_id": "01", "language": "ch"}]),
                      store.table_path("vistorybench_outputs", None))
    out = tmp_path / "official"
    assert cli.main(["export", "--benchmark", "vistorybench", "--format", "official", "--out", str(out)]) == 0
    (run,) = [p.parent for p in out.rglob("summary.json")]
    assert run.relative_to(out).parts[:3] == ("mygen", "base", "ch")
    div = json.loads((run / "metrics" / "diversity" / "scores.json").read_text())
    assert div["metrics"]["inception_score"] == 6.25
    capsys.readouterr()
    assert cli.main(["import-results", "vistorybench", str(run), "--commit", "abc1234"]) == 0
    text = capsys.readouterr().out
    assert "side by side with mygen:" in text and "only theirs" in text
    assert cli.main(["leaderboard", "--benchmark", "vistorybench", "--json"]) == 0
    b = pd.DataFrame(json.loads(capsys.readouterr().out))
    imp = b[b.generator == "mygen [imported]"].set_index("metric_id")
    assert imp.loc["cids_cross", "value"] == pytest.approx(recs.query("generator == 'mygen' and metric_id == "
                                                                      "'cids_cross'")["value"].mean())
    assert not imp["comparable"].any() and imp.loc["cids_cross", "protocol"].endswith("@ abc1234")
