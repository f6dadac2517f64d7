"""Issue 39 item 2 on MBench's own assets: "MBench kept its old protocol after the judge model changed". The user
switches BENCH_JUDGE_MODEL from model-a to model-b (same endpoint, a live judge on 127.0.0.1 whose answers differ
per model and per input); the next `bench evaluate` re-runs exactly MBench's judge-using assets (the T trigger, the
scores that read it, the board), nothing upstream of them, and afterwards no answer, protocol digest, substitute
label or manifest of model-a is left in MBench's tables or the board's record. The general rule is tested on
EntityBench's and synthetic assets in test_judge_identity_staleness.py."""
import hashlib
import json

import pandas as pd
from dagster import (
    AssetKey,
    AssetRecordsFilter,
    build_sensor_context,
    instance_for_test,
)

from bench_assets.core.automation import (
    JUDGE_ID_TAG,
    Staleness,
    generator_sensor_factory,
    rerun_plan,
    uses_judge,
)
from bench_assets.mbench import wiring as W
from bench_resources.config import build_resources
from bench_resources.paths import BenchPaths
from tests.support import run_benchmark
from tests.support.fake_anthropic import FakeAnthropic, tool_answer
from tests.support.mbench import MB, _world

# read from the code (metric_assets.py, aggregate_assets.py: the assets whose definitions take ``judge``), and
# checked against the definitions below: the trigger asks the judge, the scores ask it for self-evolution and carry
# the trigger, the board records the judge in its manifest
JUDGED = {"mbench_trigger", "mbench_scores", "mbench_leaderboard"}
UNJUDGED = {"mbench_case", "mbench_poses", "mbench_tracks"}
CASES = ("t_cau01", "t_obj01")   # a causal case (trigger + self-evolution) and an object case (trigger)
GENERATOR = "mbench_consistent"


def by_model_and_input(body):
    """Answers that depend on the model asked and on the whole question (frames and text): model-a's and
    model-b's ranges do not overlap, so a value left from model-a is told apart from any value of model-b."""
    model = body["model"]
    h = int(hashlib.sha256((json.dumps(body["messages"], sort_keys=True) + model).encode()).hexdigest(), 16)
    b = model == "model-b"
    props = body["tools"][0]["input_schema"]["properties"]
    if "triggered" in props:
        return tool_answer({"triggered": True, "confidence": (0.80 if b else 0.50) + (h % 10) / 100,
                            "reason": f"{model} saw the camera leave and return (#{h % 997})"})
    return tool_answer({"state_evolution": (4 if b else 1) + h % 2, "evolution_correctness": (4 if b else 2) + h % 2,
                        "reason": f"{model}: the process ran while unseen (#{h % 991})"})


def _tables(store):
    names = sorted(t for t in store.asset_tables() if t.startswith("mbench_"))
    return {t: store.query(f"SELECT * FROM {t}") for t in names}


def _strings(tables):
    """Every string cell of every MBench table, with where it was."""
    out = []
    for t, df in tables.items():
        for col in df.columns:
            for v in df[col].dropna():
                out.append((t, col, v if isinstance(v, str) else json.dumps(v, default=str)))
    return out


def _protocols(tables):
    """Every protocol digest a row of an MBench table records (the board joins a cell's digests with '+')."""
    return {p for df in tables.values() if "protocol" in df.columns
            for v in df["protocol"].dropna() for p in str(v).split("+") if p}


def _materialized_since(instance, mark):
    out = []
    for a in MB.assets:
        for key in a.keys:
            recs = instance.fetch_materializations(AssetRecordsFilter(asset_key=key, after_storage_id=mark),
                                                   limit=100).records
            out += [(key.to_user_string(), r.asset_materialization.partition) for r in recs]
    return sorted(out, key=str)


def _latest_metadata(instance, pks):
    """The metadata of the latest materialization of every MBench asset partition, as text, with where it was."""
    out = {}
    for a in MB.assets:
        for key in a.keys:
            name = key.to_user_string()
            parts = ([None] if name == "mbench_leaderboard" else
                     sorted({MB.partitions.split(pk)[1] for pk in pks}) if name in MB.item_assets else pks)
            for pk in parts:
                flt = AssetRecordsFilter(asset_key=key, asset_partitions=None if pk is None else [pk])
                rec = instance.fetch_materializations(flt, limit=1).records[0]
                out[(name, pk)] = json.dumps({k: str(v.value) for k, v in rec.asset_materialization.metadata.items()})
    return out


def _board_record(instance):
    rec = instance.fetch_materializations(AssetKey("mbench_leaderboard"), limit=1).records[0]
    meta = rec.asset_materialization.metadata
    return meta["manifest"].value, meta["protocol_digest"].value


def test_a_judge_model_change_reruns_exactly_mbench_judged_work_and_leaves_nothing_of_model_a(tmp_path, monkeypatch):
    # the assets that take the judge, from their definitions: what the rule keys on
    taking = {k.to_user_string() for a in MB.assets for k in a.keys if uses_judge(MB.assets, k)}
    assert taking == JUDGED and {k.to_user_string() for a in MB.assets for k in a.keys} == JUDGED | UNJUDGED

    data = _world(tmp_path, generators=(GENERATOR,))
    for p in (data / "mbench" / "cases").glob("*.json"):
        if p.stem not in CASES:
            p.unlink()
    store_root = tmp_path / "store"
    with FakeAnthropic(responder=by_model_and_input) as srv, instance_for_test() as instance:
        # the user's way: the BENCH_JUDGE_* variables (bench_resources/config.py builds the Judge from them)
        for k, v in {"ANTHROPIC_API_KEY": "sk-test", "BENCH_JUDGE_MODE": "live", "BENCH_JUDGE_BASE_URL": srv.base_url,
                     "BENCH_JUDGE_RETRIES": "0"}.items():
            monkeypatch.setenv(k, v)

        def evaluate(model):
            monkeypatch.setenv("BENCH_JUDGE_MODEL", model)
            stats, resources, errors = run_benchmark("mbench", instance, data, store_root)
            assert not stats.failed and not errors, (stats.failed, errors)
            assert resources["judge"].model == model
            return stats, resources

        # ---- model-a
        first, res_a = evaluate("model-a")
        pks = sorted(MB.partitions.generator_x_item.get_partition_keys(dynamic_partitions_store=instance))
        assert len(pks) == len(CASES)
        assert {a for a, _ in first.materialized} == JUDGED | UNJUDGED
        asked_a = len(srv.requests)
        assert asked_a == 3 and {b["model"] for b in srv.bodies} == {"model-a"}   # two triggers, one self-evolution
        store = res_a["store"]
        before = _tables(store)
        protocol_a = W.protocol(res_a["models"], res_a["judge"])
        assert _protocols(before) == {protocol_a}
        trig_a = before["mbench_trigger"].set_index("case_id")
        assert trig_a["confidence"].between(0.5, 0.6).all() and trig_a["reason"].str.startswith("model-a ").all()
        evo_a = before["mbench_scores"].query("metric_id == 'state_evolution'")
        assert evo_a["value"].notna().all() and (evo_a["value"] <= 0.25).all()   # (x-1)/4 with x in {1, 2}
        assert any("model-a" in m for m in _latest_metadata(instance, pks).values())   # the trigger's reason
        manifest_a, digest_a = _board_record(instance)
        assert manifest_a["judge"]["model"] == "model-a"
        a_words = [s for s in _strings(before) if "model-a" in s[2]]
        assert {t for t, _, _ in a_words} >= {"mbench_trigger", "mbench_scores", "mbench_leaderboard"}, a_words

        # ---- the UI's path: MBench's generator sensor (one run per partition, its asset selection) over the same
        # data and store; after the CLI's run under model-a it requests nothing, under model-b exactly the trigger
        # and the scores of each partition (the board follows its inputs by automation condition)
        for k, v in {"BENCH_DATA_ROOT": data, "BENCH_GENERATORS_ROOT": data / "generators",
                     "BENCH_STORE_ROOT": store_root}.items():
            monkeypatch.setenv(k, str(v))
        sensor = generator_sensor_factory(
            benchmark="mbench", partitions=MB.partitions, item_ids=lambda: MB.item_ids(BenchPaths()),
            generators_root=lambda: str(BenchPaths().generators_dir), item_assets=MB.item_assets,
            generator_assets=MB.generator_assets, assets_fn=lambda: MB.assets, full_check_seconds=0)
        tick = sensor(build_sensor_context(instance=instance))
        assert not tick.run_requests, [(r.partition_key, r.asset_selection) for r in tick.run_requests]
        monkeypatch.setenv("BENCH_JUDGE_MODEL", "model-b")
        tick = sensor(build_sensor_context(instance=instance, cursor=tick.cursor))
        requested = sorted((str(r.partition_key), k.to_user_string()) for r in tick.run_requests
                           for k in r.asset_selection)
        assert requested == sorted((pk, a) for pk in pks for a in ("mbench_scores", "mbench_trigger")), requested
        assert {json.loads(r.tags[JUDGE_ID_TAG])["model"] for r in tick.run_requests} == {"model-b"}

        # ---- switch to model-b: exactly the judge-using assets are stale, for the judge, nothing else
        res_b = build_resources(paths=BenchPaths(data_root=str(data), generators_root=str(data / "generators")),
                                store_root=str(store_root))
        words = "judge changed: model model-a -> model-b"
        gen_keys = [AssetKey(n) for n in MB.generator_assets]
        for pk in pks:
            plan = {k.to_user_string(): why for k, why in rerun_plan(instance, MB.assets, gen_keys, pk, res_b).items()}
            assert plan == {"mbench_trigger": words, "mbench_scores": words}, (pk, plan)
        st = Staleness(instance, MB.assets, judge=res_b["judge"])
        assert st.status(AssetKey("mbench_leaderboard"), None) == Staleness.JUDGE_CHANGED
        for pk in pks:
            assert {n: st.status(AssetKey(n), pk) for n in ("mbench_poses", "mbench_tracks")} == \
                {"mbench_poses": None, "mbench_tracks": None}
            assert st.status(AssetKey("mbench_case"), MB.partitions.split(pk)[1]) is None

        # ---- re-run under model-b
        mark = instance.event_log_storage.get_maximum_record_id()
        second, res_b = evaluate("model-b")
        got = _materialized_since(instance, mark)
        assert got == sorted([(a, pk) for a in ("mbench_trigger", "mbench_scores") for pk in pks]
                             + [("mbench_leaderboard", None)], key=str), got
        assert not {a for a, _ in got} & UNJUDGED   # case, poses and tracks did not re-run
        # the run says why: the judge, for each of them (not "evaluator failures", not "upstream re-runs")
        assert set(second.reruns) == {words} and sorted(second.reruns[words], key=str) == got, second.reruns
        assert {b["model"] for b in srv.bodies[asked_a:]} == {"model-b"} and len(srv.requests) == 2 * asked_a

        after = _tables(res_b["store"])
        for t in UNJUDGED:   # the unjudged tables are the same rows
            pd.testing.assert_frame_equal(after[t], before[t])
        # nothing of model-a anywhere in MBench's tables: its words, its protocol, its answers' cache keys
        assert [s for s in _strings(after) if "model-a" in s[2]] == []
        protocol_b = W.protocol(res_b["models"], res_b["judge"])
        assert protocol_b != protocol_a and _protocols(after) == {protocol_b}
        trig_b = after["mbench_trigger"].set_index("case_id")
        assert trig_b["confidence"].between(0.8, 0.9).all() and trig_b["reason"].str.startswith("model-b ").all()
        assert not set(trig_b["cache_key"]) & set(trig_a["cache_key"])
        evo_b = after["mbench_scores"].query("metric_id == 'state_evolution'")
        assert evo_b["value"].notna().all() and (evo_b["value"] >= 0.75).all()   # x in {4, 5}
        carried = after["mbench_scores"]["trigger_reason"]   # the scores carry the trigger's verdict and words
        assert carried.notna().all() and carried.str.startswith("model-b ").all()
        # the board: its judged cells moved with the answers, and its substitute labels name model-b
        key = ["generator", "slice", "metric_id"]
        board_a, board_b = (t["mbench_leaderboard"].set_index(key).sort_index() for t in (before, after))
        assert board_a.index.equals(board_b.index)
        se = (GENERATOR, "T", "m_score.state_evolution")
        assert board_b.loc[se, "value"] > board_a.loc[se, "value"]
        assert "model-b" in board_b.loc[se, "substitute"]
        # the board's record: manifest and protocol digest are model-b's
        manifest_b, digest_b = _board_record(instance)
        assert manifest_b["judge"] == res_b["judge"].fingerprint() and manifest_b["judge"]["model"] == "model-b"
        assert digest_b != digest_a
        # and no latest materialization of an MBench asset keeps model-a in its metadata (the UI's record)
        assert [k for k, m in _latest_metadata(instance, pks).items() if "model-a" in m] == []

        # the same judge again: nothing re-runs, nothing is asked
        mark = instance.event_log_storage.get_maximum_record_id()
        third, _ = evaluate("model-b")
        assert third.materialized == [] and _materialized_since(instance, mark) == []
        assert len(srv.requests) == 2 * asked_a
