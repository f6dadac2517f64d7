"""NarrativeTrack's contextual recognition and second-step flags count the judge's failures like every other
judge-using asset, so a live judge re-asks them (README, Staleness: "an asset holding judge failures is re-run on
every run while the judge is live"). Before, ``narrativetrack_context`` and ``narrativetrack_entity_registry`` kept
a failed call only in a row's reason and wrote no ``evaluator_failures``: the next live run re-ran nothing and the
offline heuristic's rows stayed (found by following the README on a clean clone, session 9)."""
from __future__ import annotations

import os

from dagster import AssetKey, instance_for_test, materialize

from bench_assets.core.automation import rerun_plan
from bench_assets.narrativetrack import assets as A
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from tests.support import DATA, QUIET
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.narrativetrack import JUDGE_VIDEO, PipelineJudge

JUDGED = ("narrativetrack_context", "narrativetrack_entity_registry")


class Outage:
    """The recorded pipeline judge, except that context and flag questions get HTTP 529 while ``down``."""

    def __init__(self):
        self.answers, self.down, self.refused = PipelineJudge(), True, 0

    def __call__(self, body):
        props = body["tools"][0]["input_schema"]["properties"]
        if self.down and (("scene" in props and "action" in props) or "similar_looking_existence" in props):
            self.refused += 1
            return {"status": 529, "body": {"type": "error", "error": {"type": "overloaded_error",
                                                                        "message": "overloaded"}}}
        return self.answers(body)


def _meta(instance, key: str) -> dict:
    ev = instance.get_latest_materialization_event(AssetKey(key))
    return ev.asset_materialization.metadata


def test_failed_context_and_flag_calls_are_counted_and_re_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    paths = BenchPaths(data_root=str(DATA), generators_root=str(DATA / "generators"))
    resources = build_resources(store_root=str(tmp_path / "store"), paths=paths,
                                judge=Judge(mode="off", cache_dir=str(tmp_path / "jc")))
    fake = Outage()
    with instance_for_test() as instance, FakeAnthropic(responder=fake) as srv:
        instance.add_dynamic_partitions(A.P.items.name, [JUDGE_VIDEO])
        live = {**resources, "judge": Judge(mode="live", base_url=srv.base_url, cache_dir=str(tmp_path / "jc_live"),
                                            max_retries=0)}
        assert materialize(A.ASSETS, selection=A.ITEM_ASSETS, partition_key=JUDGE_VIDEO, instance=instance,
                           resources=live, run_config=QUIET).success
        ctx = resources["store"].query("SELECT source, reason FROM narrativetrack_context")
        reg = resources["store"].query("SELECT flag_source, reason FROM narrativetrack_entity_registry")
        assert len(ctx) > 1 and (ctx.source == "offline heuristic").all()
        # every context call was refused; the flag calls after them met the judge's breaker (5 failures in a row)
        assert fake.refused == len(ctx) and reg.reason.str.startswith("judge failed").all(), reg
        meta = {k: _meta(instance, k) for k in JUDGED}
        assert meta["narrativetrack_context"]["evaluator_failures"].value == len(ctx)
        assert meta["narrativetrack_entity_registry"]["evaluator_failures"].value == len(reg)
        assert "529" in meta["narrativetrack_context"]["evaluator_failure_reasons"].value
        keys = [AssetKey(k) for k in A.ITEM_ASSETS]
        # the judge is back (a new process, a new client): the judged assets (and what reads them) are planned,
        # for their failures
        fake.down = False
        from bench_resources.judge import retry
        retry._STATES.clear()   # a new process: the circuit breaker's open state is per process
        live = {**live, "judge": Judge(mode="live", base_url=srv.base_url, cache_dir=str(tmp_path / "jc_live"),
                                       max_retries=0)}
        plan = {k.to_user_string(): why for k, why in rerun_plan(instance, A.ASSETS, keys, JUDGE_VIDEO, live).items()}
        assert "evaluator failures, judge live: re-asking" in plan.get("narrativetrack_context", ""), plan
        assert not {"narrativetrack_video", "narrativetrack_frames", "narrativetrack_detections"} & set(plan), plan
        assert materialize(A.ASSETS, selection=sorted(plan), partition_key=JUDGE_VIDEO, instance=instance,
                           resources=live, run_config=QUIET).success
        ctx = resources["store"].query("SELECT source FROM narrativetrack_context")
        reg = resources["store"].query("SELECT flag_source FROM narrativetrack_entity_registry")
        assert ctx.source.str.startswith("judge:").all() and reg.flag_source.str.startswith("judge:").all()
        assert all(_meta(instance, k)["evaluator_failures"].value == 0 for k in JUDGED)
        assert rerun_plan(instance, A.ASSETS, keys, JUDGE_VIDEO, live) == {}
    assert os.environ.get("ANTHROPIC_API_KEY") == "test-key-not-real"
