"""Issue 35 item 3: results exported in the benchmark authors' own schema.

EntityBench: the per-episode JSON and report_<method>.json of the authors' eval/evaluate_benchmark.py (3776439),
read the way their eval/compare_methods.py reads them (``_load_episodes`` / ``_flatten_metrics``, restated here
since the release's files are never committed). MBench: leaderboard_submission.json, one column per sub-dimension.
"""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from bench_assets.entitybench import official_export as EO
from bench_assets.mbench import official_export as MO

ADDITION = "cs_face_identity"


def _records(gen: str, episodes: dict[str, float], none_metric: str = "llm_scene_accuracy") -> pd.DataFrame:
    """Every authors' metric for each episode, valued by episode and metric (so a mix-up shows), one None."""
    rows = []
    ids = [*EO.VBENCH_DIMENSIONS, *EO.ALL_METRICS, "_meta_cross_shot_gate", ADDITION]
    for eid, base in episodes.items():
        for i, mid in enumerate(ids):
            none = mid == none_metric
            rows.append({"generator": gen, "item": eid, "metric_id": mid,
                         "value": None if none else round(base + i / 1000, 4),
                         "n_eval": 0 if none else 2 + i % 3, "n_failed": 3 if none else i % 2,
                         "n_skipped": 1 if none else 0, "n_failed_evaluator": 2 if none else 0,
                         "reason": f"judge outage in {eid}" if none else None})
    return pd.DataFrame(rows)


EPISODES = pd.DataFrame({"item": ["ep_a", "ep_b", "ep_c"], "tier": ["easy", "easy", "hard"], "n_shots": [5, 7, 40]})


def _flatten_like_authors(ep: dict) -> dict:
    # compare_methods._flatten_metrics, restated: vbench_means + metrics, a dict with "value" per metric
    out = {}
    for key in ("vbench_means", "metrics"):
        for k, v in (ep.get(key) or {}).items():
            if isinstance(v, dict) and "value" in v:
                out[k] = float(v["value"]) if isinstance(v["value"], (int, float)) else None
    return out


def test_entitybench_episode_files_carry_every_metric_as_metric_value():
    files = EO.export(_records("gen1", {"ep_a": 0.5, "ep_b": 0.7}), EPISODES, "gen1")
    assert set(files) == {"ep_a.json", "ep_b.json", "report_gen1.json", "_additions_gen1.json"}
    ep = files["ep_b.json"]
    assert list(ep) == ["episode_id", "tier", "num_shots", "vbench_means", "metrics", "per_entity_scores",
                        "gap_decay_data"]
    assert (ep["episode_id"], ep["tier"], ep["num_shots"]) == ("ep_b", "easy", 7)
    assert set(ep["vbench_means"]) == set(EO.VBENCH_DIMENSIONS)
    assert set(ep["metrics"]) == set(EO.ALL_METRICS) | {"_meta_cross_shot_gate"}
    for mv in [*ep["vbench_means"].values(), *ep["metrics"].values()]:
        assert list(mv) == ["value", "n_evaluated", "n_failed", "n_skipped"]
    # values follow the episode (0.7 base for ep_b, 0.5 for ep_a), counts come through
    assert ep["vbench_means"]["subject_consistency"] == {"value": 0.7, "n_evaluated": 2, "n_failed": 0,
                                                         "n_skipped": 0}
    assert files["ep_a.json"]["vbench_means"]["subject_consistency"]["value"] == 0.5
    # None stays null with its counts, never 0
    # (their n_failed holds every attempted-and-not-scored instance: the generator's 3 and the evaluator's 2)
    assert ep["metrics"]["llm_scene_accuracy"] == {"value": None, "n_evaluated": 0, "n_failed": 5, "n_skipped": 1}
    assert files["_additions_gen1.json"]["null_reasons"] == {e: {"llm_scene_accuracy": f"judge outage in {e}"}
                                                             for e in ("ep_a", "ep_b")}
    # our addition is kept, but outside the authors' metrics (their loader skips "_" files)
    assert ADDITION not in ep["metrics"]
    assert files["_additions_gen1.json"]["episodes"]["ep_b"][ADDITION]["value"] is not None
    flat = _flatten_like_authors(json.loads(json.dumps(ep)))
    assert flat["llm_scene_accuracy"] is None and flat["cs_face"] == ep["metrics"]["cs_face"]["value"]


def test_entitybench_report_aggregates_like_the_authors():
    files = EO.export(_records("g2", {"ep_a": 0.2, "ep_b": 0.6, "ep_c": 0.9}), EPISODES, "g2")
    rep = files["report_g2.json"]
    assert set(rep) == {"all", "easy", "hard", "_manifest"}        # no medium episode: no medium entry
    assert rep["all"]["num_episodes"] == 3 and rep["all"]["num_shots"] == 52
    assert rep["easy"]["num_shots"] == 12
    cs = rep["all"]["cs_face"]
    vals = [files[f"{e}.json"]["metrics"]["cs_face"]["value"] for e in ("ep_a", "ep_b", "ep_c")]
    mean = sum(vals) / 3
    assert cs["mean"] == round(mean, 4)
    assert cs["std"] == round(math.sqrt(sum((v - mean) ** 2 for v in vals) / 3), 4)
    assert (cs["min"], cs["max"]) == (round(min(vals), 4), round(max(vals), 4))
    assert rep["all"]["llm_scene_accuracy"] == {"value": None, "n_episodes_evaluated": 0, "n_episodes_total": 3}
    assert rep["all"]["vbench"]["motion_smoothness"]["n_episodes_evaluated"] == 3
    assert set(rep["all"]["vbench"]) == set(EO.VBENCH_DIMENSIONS)
    assert rep["_manifest"]["method_name"] == "g2"


def _gap_pairs(gen: str, base: float) -> pd.DataFrame:
    """Pair rows as consistency.cross_shot_rows writes them (adjacent + all-pairs ids), valued per generator."""
    rows = []
    # (item, entity, type, appearances' shots)
    for k, (item, ent, etype, shots) in enumerate([("ep_a", "c1", "character", [0, 1, 3]),
                                                   ("ep_a", "o1", "object", [1, 3]),
                                                   ("ep_b", "c1", "character", [2, 3]),
                                                   ("ep_c", "o2", "object", [0, 2])]):
        for i in range(len(shots)):
            for j in range(i + 1, len(shots)):
                d = shots[j] - shots[i]
                rows.append({"generator": gen, "item": item, "metric_id": "gap_decay_embedding" if j == i + 1
                             else "gap_decay_embedding_allpairs", "level": "pair", "entity_id": ent,
                             "value": round(base - 0.01 * d - 0.003 * k - 0.001 * i, 6),
                             "detail": json.dumps({"from_shot": shots[i], "shot_distance": d, "entity_type": etype,
                                                   "gap_bin": "1-2"})})
    rows.append({**rows[0], "value": None})   # a pair not computed: left out, as the authors drop crops
    return pd.DataFrame(rows)                 # without an embedding


def test_entitybench_export_writes_the_authors_gap_decay():
    """gap_decay_data per episode (compute_gap_decay's records) and aggregate_results' integer-gap curves per tier
    (np.mean / np.std over every pair, 4 decimals), from the project's adjacent + all-pairs rows."""
    import numpy as np
    pairs = pd.concat([_gap_pairs("g2", 0.9), _gap_pairs("other", 0.5)])
    files = EO.export(_records("g2", {"ep_a": 0.2, "ep_b": 0.6, "ep_c": 0.9}), EPISODES, "g2", gap_pairs=pairs,
                      names={"ep_a": {"c1": "Mara"}})
    a = files["ep_a.json"]["gap_decay_data"]
    # their order: entity, then i < j over its appearances by shot; names from the registry where given
    assert [(d["entity_name"], d["entity_type"], d["gap"]) for d in a] == [
        ("Mara", "character", 1), ("Mara", "character", 3), ("Mara", "character", 2), ("o1", "object", 2)]
    assert a[0]["similarity"] == pytest.approx(0.89)
    assert files["ep_b.json"]["gap_decay_data"][0]["entity_name"] == "c1"
    rep = files["report_g2.json"]
    pts = [d for e in ("ep_a", "ep_b", "ep_c") for d in files[f"{e}.json"]["gap_decay_data"]]
    want = {str(g): {"mean_sim": round(float(np.mean(s)), 4), "std_sim": round(float(np.std(s)), 4),
                     "n_pairs": len(s)}
            for g in sorted({d["gap"] for d in pts}) for s in [[d["similarity"] for d in pts if d["gap"] == g]]}
    assert rep["all"]["gap_decay_curve"] == want
    assert list(want) == ["1", "2", "3"] and want["2"]["n_pairs"] == 3 and want["2"]["std_sim"] > 0
    assert set(rep["all"]["gap_decay_curve_by_type"]) == {"character", "object"}
    assert rep["hard"]["gap_decay_curve"] == {"2": {"mean_sim": round(0.9 - 0.02 - 0.009, 4), "std_sim": 0.0,
                                                    "n_pairs": 1}}
    assert rep["easy"]["gap_decay_curve_by_type"]["object"] == {"2": {"mean_sim": round(0.9 - 0.02 - 0.003, 4),
                                                                      "std_sim": 0.0, "n_pairs": 1}}
    # without pair rows: empty records and no curve keys, as their aggregate writes for no pairs
    bare = EO.export(_records("g2", {"ep_a": 0.2}), EPISODES, "g2")
    assert bare["ep_a.json"]["gap_decay_data"] == [] and "gap_decay_curve" not in bare["report_g2.json"]["all"]


def test_entitybench_export_refuses_unknown_generator_and_episode():
    recs = _records("g", {"ep_a": 0.1, "ep_x": 0.2})
    with pytest.raises(ValueError, match="ep_x"):
        EO.export(recs, EPISODES, "g")
    with pytest.raises(ValueError, match="other"):
        EO.export(recs, EPISODES, "other")


def _mboard(gen: str, base: float, none_sub: str) -> list[dict]:
    rows = []
    for mode in ("T", "A"):
        for i, k in enumerate(MO.SUB_DIMENSIONS):
            none = k == none_sub
            rows.append({"generator": gen, "metric_id": f"m_score.{k}", "slice": mode,
                         "value": None if none else base + i + (0.5 if mode == "A" else 0),
                         "n_items": 4, "n_eval": 0 if none else 4, "n_failed": 2 if none else 0, "n_skipped": 1,
                         "coverage": None if none else 0.8, "reason": "no triggered case" if none else None})
        rows.append({"generator": gen, "metric_id": "m_score.entity", "slice": mode, "value": 50.0,
                     "n_items": 4, "n_eval": 4, "n_failed": 0, "n_skipped": 0, "coverage": 1.0, "reason": None})
    return rows


def test_mbench_submission_one_column_per_sub_dimension():
    board = pd.DataFrame(_mboard("wm1", 10.0, "lighting") + _mboard("wm2", 60.0, "style"))
    files = MO.export(board)
    rows = files["leaderboard_submission.json"]
    assert [(r["model_name"], r["mode"]) for r in rows] == [("wm1", "T"), ("wm1", "A"), ("wm2", "T"), ("wm2", "A")]
    for r in rows:
        assert list(r) == ["model_name", "mode", *MO.SUB_DIMENSIONS]
    assert rows[0]["identity"] == 10.0 and rows[1]["identity"] == 10.5 and rows[2]["geometry"] == 62.0
    assert rows[0]["lighting"] is None and rows[2]["lighting"] == 66.0 and rows[2]["style"] is None
    counts = files["leaderboard_submission_counts.json"]
    assert counts[0]["lighting"] == {"n_items": 4, "n_eval": 0, "n_failed": 2, "n_skipped": 1, "coverage": None,
                                     "reason": "no triggered case"}
    json.dumps(files)     # plain JSON (no numpy / NA values)


def test_cli_export_accepts_format_official():
    from bench_assets.cli import _parser
    args = _parser().parse_args(["export", "--benchmark", "mbench", "--format", "official", "--out", "x"])
    assert args.format == "official"


@pytest.fixture
def eb_env(small_world, tmp_path, monkeypatch):
    data, episodes = small_world(("faithful",))
    for k, v in {"BENCH_DATA_ROOT": data, "BENCH_GENERATORS_ROOT": data / "generators",
                 "BENCH_STORE_ROOT": tmp_path / "store", "DAGSTER_HOME": tmp_path / "home",
                 "BENCH_WEIGHTS_DIR": tmp_path / "weights", "BENCH_JUDGE_MODE": "off"}.items():
        monkeypatch.setenv(k, str(v))
    return data, episodes


def test_entitybench_official_export_end_to_end(eb_env, tmp_path, capsys):
    from bench_assets import cli
    data, episodes = eb_env
    assert cli.main(["evaluate", "--benchmark", "entitybench", "--generator", str(data / "generators" / "faithful")]) == 0
    capsys.readouterr()
    out = tmp_path / "official"
    assert cli.main(["export", "--benchmark", "entitybench", "--format", "official", "--out", str(out)]) == 0
    assert f"under {out}" in capsys.readouterr().out
    eid = json.loads(next((data / "entitybench" / "episodes").glob("*.json")).read_text())["episode_id"]
    names = sorted(p.name for p in (out / "faithful").iterdir())
    # run_manifest.json: the authors' main() writes it beside the results (issue 36's official export writes it too)
    assert names == sorted([f"{eid}.json", "report_faithful.json", "_additions_faithful.json", "run_manifest.json"])
    ep = json.loads((out / "faithful" / f"{eid}.json").read_text())
    assert ep["episode_id"] == eid and ep["num_shots"] > 0
    assert set(ep["vbench_means"]) == set(EO.VBENCH_DIMENSIONS)
    sc = ep["vbench_means"]["subject_consistency"]
    assert 0.5 < sc["value"] <= 1.0 and sc["n_evaluated"] == ep["num_shots"]
    # offline there is no MUSIQ: imaging_quality is null with its counts, not 0
    iq = ep["vbench_means"]["imaging_quality"]
    assert iq["value"] is None and iq["n_evaluated"] == 0 and iq["n_failed"] == ep["num_shots"]
    why = json.loads((out / "faithful" / "_additions_faithful.json").read_text())["null_reasons"][eid]
    assert "musiq" in why["imaging_quality"]
    assert _flatten_like_authors(ep)["cs_face"] == ep["metrics"]["cs_face"]["value"]
    # every pair of appearances as their gap_decay_data (registry names), pooled into the report's integer-gap curve
    pts = [d for p in (out / "faithful").glob("*.json") if not p.name.startswith(("_", "report", "run_"))
           for d in json.loads(p.read_text())["gap_decay_data"]]
    rep = json.loads((out / "faithful" / "report_faithful.json").read_text())["all"]
    assert pts and sum(c["n_pairs"] for c in rep["gap_decay_curve"].values()) == len(pts)
    assert {d["entity_type"] for d in pts} <= {"character", "object"} and all(d["gap"] >= 1 for d in pts)


def test_mbench_official_export_end_to_end(tmp_path, monkeypatch, capsys):
    from bench_assets import cli
    from tests.support import DATA
    for k, v in {"BENCH_DATA_ROOT": DATA, "BENCH_GENERATORS_ROOT": DATA / "generators",
                 "BENCH_STORE_ROOT": tmp_path / "store", "DAGSTER_HOME": tmp_path / "home",
                 "BENCH_JUDGE_MODE": "off"}.items():
        monkeypatch.setenv(k, str(v))
    (tmp_path / "home").mkdir()
    gen = DATA / "generators" / "mbench_consistent"
    assert cli.main(["evaluate", "--benchmark", "mbench", "--generator", str(gen), "--limit", "2"]) == 0
    capsys.readouterr()
    out = tmp_path / "official"
    assert cli.main(["export", "--benchmark", "mbench", "--format", "official", "--out", str(out)]) == 0
    rows = json.loads((out / "leaderboard_submission.json").read_text())
    counts = json.loads((out / "leaderboard_submission_counts.json").read_text())
    assert {(r["model_name"], r["mode"]) for r in rows} == {("mbench_consistent", "T"), ("mbench_consistent", "A")}
    valued = [(r["mode"], k) for r in rows for k in MO.SUB_DIMENSIONS if r[k] is not None]
    assert valued and all(0.0 <= r[k] <= 100.0 for r in rows for k in MO.SUB_DIMENSIONS if r[k] is not None)
    for r, c in zip(rows, counts):
        assert list(r) == ["model_name", "mode", *MO.SUB_DIMENSIONS]
        for k in MO.SUB_DIMENSIONS:     # every null says why
            assert r[k] is not None or c[k]["reason"], (r["mode"], k)
