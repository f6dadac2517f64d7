"""Issue 25: a judge outage, a plain rerun while it lasts (the failed questions are re-asked again, and counted),
then a plain rerun against the healed endpoint, on a real Dagster instance (EntityBench, offline profile, one
episode). The rerun re-asks exactly the questions that failed (counted), runs no model forward (grounding is not
re-run), and ends with tables equal to a run that never saw the outage; the judge-independent grounding table is
identical throughout."""
import hashlib
import threading

import pandas as pd
from dagster import instance_for_test

from bench_resources.judge import Judge
from tests.support.entitybench import evaluate_judged as run
from tests.support.entitybench import world  # noqa: F401
from tests.support.fake_anthropic import FakeAnthropic, server_error, tool_answer

# grounding (models), then the two judge-only families; the consistency families add minutes, not coverage here
GEN = ["entitybench_outputs", "entitybench_grounding", "entitybench_fidelity", "entitybench_action"]
JUDGE_ASSETS = {"entitybench_fidelity", "entitybench_action"}


class Endpoint:
    """Answers from the images asked about (a judge that says the same to everything tests nothing); while
    ``outage`` is set, every question whose images hash to 0 mod 3 gets HTTP 500 (counted)."""

    def __init__(self):
        self.outage = False
        self.failed = 0
        self.lock = threading.Lock()

    def __call__(self, body):
        content = body["messages"][0]["content"]
        blob = "".join(c["source"]["data"] for c in content if c["type"] == "image")
        h = int(hashlib.sha256(blob.encode()).hexdigest(), 16)
        if self.outage and h % 3 == 0:
            with self.lock:
                self.failed += 1
            return server_error(500)
        score = 3 + h % 7
        schema = body["tools"][0]["input_schema"]
        out = {}
        for k in schema["required"]:
            p = schema["properties"][k]
            t = p.get("type")
            out[k] = ("a place" if t == "string" else (p["enum"][h % len(p["enum"])] if "enum" in p else
                      score / 10 if t == "number" else score))
        return tool_answer(out)


def table(store, name):
    cols = "metric_id, level, shot, entity_id, value, n_failed_evaluator"
    if name == "entitybench_grounding":
        cols = "shot, entity_id, status, crop_id"
    df = store.query(f"SELECT {cols} FROM {name}")
    return df.sort_values(list(df.columns[:4])).reset_index(drop=True)


def test_outage_then_healed_rerun_reasks_exactly_the_failed_questions(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    data = world(tmp_path)
    endpoint = Endpoint()
    with FakeAnthropic(responder=endpoint) as srv, instance_for_test() as instance:
        def judge(cache):
            return Judge(mode="live", base_url=srv.base_url, cache_dir=str(cache), backoff_s=0.001, max_retries=0,
                         breaker_threshold=0)

        endpoint.outage = True
        first, store = run(instance, data, tmp_path / "store", judge(tmp_path / "cache"))
        failed = endpoint.failed
        assert failed > 0 and len(srv.requests) > failed  # some questions answered, some lost
        fid = table(store, "entitybench_fidelity")
        assert fid["n_failed_evaluator"].fillna(0).sum() > 0
        grounding_before = table(store, "entitybench_grounding")

        # still failing: a plain rerun re-asks exactly the failed questions once more (an evaluator failure is
        # never final, by design), re-runs only the judge-using assets, and its summary says how many it re-asked
        n0, f0 = len(srv.requests), endpoint.failed
        still, store = run(instance, data, tmp_path / "store", judge(tmp_path / "cache"))
        assert len(srv.requests) - n0 == failed and endpoint.failed - f0 == failed
        assert still.judge["questions_reasked"] == failed and still.forwards == 0
        assert {a for a, _ in still.materialized} <= JUDGE_ASSETS and still.materialized
        from bench_assets.cli import _judge_summary, rerun_lines
        assert f"{failed} questions re-asked" in _judge_summary(still)
        assert any("judge live: re-asking" in line for line in rerun_lines(still)), rerun_lines(still)
        assert table(store, "entitybench_grounding").equals(grounding_before)

        endpoint.outage = False
        n0 = len(srv.requests)
        healed, store = run(instance, data, tmp_path / "store", judge(tmp_path / "cache"))
        # exactly the failed questions, each asked once more; every answered one reused from the cache
        assert len(srv.requests) - n0 == failed
        assert healed.judge["questions_reasked"] == failed
        assert healed.judge["answers_reused"] > 0
        assert sum(healed.judge["requests_by_endpoint"].values()) == failed
        # only the judge-using assets of the partition re-ran, for their evaluator failures: no model forward
        assert {a for a, _ in healed.materialized} <= JUDGE_ASSETS and healed.materialized
        assert healed.forwards == 0
        assert any("evaluator failures" in why for why in healed.reruns)
        assert table(store, "entitybench_grounding").equals(grounding_before)

        again, _ = run(instance, data, tmp_path / "store", judge(tmp_path / "cache"))
        assert again.materialized == [] and sum(again.judge["requests_by_endpoint"].values()) == 0

        # a run that never saw the outage (fresh home, store and cache) ends with the same tables
        with instance_for_test() as fresh:
            _, ref = run(fresh, data, tmp_path / "store_ref", judge(tmp_path / "cache_ref"))
        for name in ("entitybench_grounding", "entitybench_fidelity", "entitybench_action"):
            mine, theirs = table(store, name), table(ref, name)
            pd.testing.assert_frame_equal(mine, theirs, check_dtype=False, obj=name)
