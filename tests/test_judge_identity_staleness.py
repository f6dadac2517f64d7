"""Issue 39 item 1: a judge's identity (backend, model, endpoint, answer-shaping settings; or off) is recorded on
every run like the slots' fingerprints, and a change re-runs exactly the assets that ask the judge (and what reads
them), nothing else: BENCH_JUDGE_MODEL a -> b used to re-run only an asset holding evaluator failures, leaving
model a's answers and protocol beside a rebuilt board (core/automation.py ``Staleness.judge_changed``)."""
import hashlib
import json

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    MetadataValue,
    Output,
    asset,
    instance_for_test,
    materialize,
)

from bench_assets.core import automation
from bench_assets.core.automation import (
    JUDGE_ID_TAG,
    JUDGE_STATE_TAG,
    Staleness,
    evaluator_tags,
    judge_change_words,
    judge_identity,
    judge_state,
    rerun_plan,
)
from bench_resources.judge import Judge
from tests.support.entitybench import evaluate_judged as _evaluate
from tests.support.entitybench import world  # noqa: F401
from tests.support.fake_anthropic import FakeAnthropic, tool_answer

# ------------------------------------------------------------------------------------------------ identity, pure

def test_identity_is_who_answers(tmp_path):
    c = str(tmp_path / "c")
    a = Judge(mode="live", model="model-a", cache_dir=c)
    assert judge_identity(a) == judge_identity(Judge(mode="replay", model="model-a", cache_dir=c))  # same answers
    assert judge_identity(a) == judge_identity(Judge(mode="live", model="model-a", cache_dir=c, max_retries=9,
                                                     api_key_env="OTHER_KEY"))   # retries and keys do not answer
    others = [Judge(mode="live", model="model-b", cache_dir=c),
              Judge(mode="live", model="model-a", base_url="http://127.0.0.1:8001", cache_dir=c),
              Judge(mode="live", model="model-a", backend="openai", cache_dir=c),
              Judge(mode="live", model="model-a", temperature=0.0, cache_dir=c),
              Judge(mode="off", model="model-a", cache_dir=c)]
    idents = {judge_identity(j) for j in others}
    assert len(idents) == len(others) and judge_identity(a) not in idents
    assert "sk-" not in judge_identity(a) and judge_identity(None) is None


def test_change_words_name_what_changed():
    a = judge_identity(Judge(mode="live", model="claude-a"))
    b = judge_identity(Judge(mode="live", model="claude-b", base_url="http://127.0.0.1:9/v1"))
    assert judge_change_words(a, b) == ("judge changed: endpoint default -> http://127.0.0.1:9/v1, "
                                        "model claude-a -> claude-b")
    assert judge_change_words(a, judge_identity(Judge(mode="off"))) == "judge changed: judge switched off"
    assert judge_change_words(judge_identity(Judge(mode="off")), a).startswith("judge changed: judge switched on")
    assert judge_change_words("not json", a).startswith("judge changed: ")


def test_runs_record_the_identity():
    j = Judge(mode="live", model="model-x")
    assert json.loads(evaluator_tags({"judge": j})[JUDGE_ID_TAG])["model"] == "model-x"
    assert JUDGE_ID_TAG not in evaluator_tags({})


def test_sensor_and_schedule_runs_record_the_environment_judge(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "replay")   # not off: an off judge is one identity whatever its model
    monkeypatch.setenv("BENCH_JUDGE_MODEL", "model-from-env")
    _paths, _models, tags, _io = automation.sensor_staleness_inputs()
    assert json.loads(tags[JUDGE_ID_TAG])["model"] == "model-from-env"
    monkeypatch.setenv("BENCH_JUDGE_MODEL", "model-other")
    assert json.loads(automation.sensor_staleness_inputs()[2][JUDGE_ID_TAG])["model"] == "model-other"


# ------------------------------------------------------------------------------------------------ small graph

@asset(required_resource_keys={"judge"})
def t_asks():
    return Output(1, metadata={"evaluator_failures": 0})


@asset
def t_plain():
    return Output(1)


@asset(required_resource_keys={"judge"}, deps=[t_asks, t_plain])
def t_board():   # an aggregate that records the judge in its protocol
    return Output(1)


ASSETS = [t_asks, t_plain, t_board]
KEYS = [AssetKey(n) for n in ("t_asks", "t_plain", "t_board")]


def _plan(instance, judge, keys=KEYS):
    return {k.to_user_string(): why for k, why in rerun_plan(instance, ASSETS, keys, None, {"judge": judge}).items()}


def test_a_judge_change_makes_exactly_the_judge_using_assets_stale(tmp_path):
    c = str(tmp_path / "c")
    a = Judge(mode="live", model="model-a", cache_dir=c)
    with instance_for_test() as instance:
        assert materialize(ASSETS, instance=instance, resources={"judge": a}, tags=evaluator_tags({"judge": a})).success
        assert _plan(instance, a) == {}
        assert _plan(instance, Judge(mode="replay", model="model-a", cache_dir=c)) == {}
        b = Judge(mode="live", model="model-b", cache_dir=c)
        words = "judge changed: model model-a -> model-b"
        assert _plan(instance, b) == {"t_asks": words, "t_board": words}
        assert _plan(instance, Judge(mode="off", cache_dir=c)) == {
            "t_asks": "judge changed: judge switched off", "t_board": "judge changed: judge switched off"}
        st = Staleness(instance, ASSETS, judge=b)
        assert st.status(AssetKey("t_asks"), None) == Staleness.JUDGE_CHANGED
        assert st.status(AssetKey("t_plain"), None) is None
        # the nightly schedule's check sees it too
        stale = automation.stale_or_missing(instance, ASSETS, KEYS, lambda _k: [None], judge=b)
        assert {(k.to_user_string(), s) for k, _, s in stale} == {("t_asks", "JUDGE_CHANGED"),
                                                                  ("t_board", "JUDGE_CHANGED")}
        # after the re-run under b, b is the recorded identity
        assert materialize([t_asks, t_board], instance=instance, resources={"judge": b},
                           tags=evaluator_tags({"judge": b})).success
        assert _plan(instance, b) == {}


def test_runs_that_recorded_no_identity(tmp_path):
    """A run from before identities were recorded is compared through its judge-state digest; Materialize in the
    UI (no run tags) through the judge fingerprint an asset keeps in its metadata; with neither, unknown is not
    changed (as for weights)."""
    c = str(tmp_path / "c")
    a, b = Judge(mode="live", model="model-a", cache_dir=c), Judge(mode="live", model="model-b", cache_dir=c)

    @asset(required_resource_keys={"judge"})
    def t_ui():
        return Output(1, metadata={"judge": MetadataValue.json(a.fingerprint())})

    @asset(required_resource_keys={"judge"})
    def t_ui_bare():
        return Output(1)

    with instance_for_test() as instance:
        assert materialize([t_asks], instance=instance, resources={"judge": a},
                           tags={JUDGE_STATE_TAG: judge_state({"judge": a})}).success
        assert materialize([t_ui, t_ui_bare], instance=instance, resources={"judge": a}).success
        for judge, changed in ((a, set()), (b, {"t_asks", "t_ui"})):
            st = Staleness(instance, [t_asks, t_ui, t_ui_bare], judge=judge)
            got = {n for n in ("t_asks", "t_ui", "t_ui_bare") if st.judge_changed(AssetKey(n), None)}
            assert got == changed, (judge.model, got)


# ------------------------------------------------------------------------------------------------ end to end

GEN = ["entitybench_outputs", "entitybench_grounding", "entitybench_fidelity", "entitybench_action"]
JUDGE_ASSETS = {"entitybench_fidelity", "entitybench_action"}


def by_model_and_image(body):
    """Answers that depend on the model asked and the images asked about: model b's answers differ from a's."""
    content = body["messages"][0]["content"]
    blob = "".join(c["source"]["data"] for c in content if c["type"] == "image") + body["model"]
    h = int(hashlib.sha256(blob.encode()).hexdigest(), 16)
    score = 3 + h % 7
    schema = body["tools"][0]["input_schema"]
    out = {}
    for k in schema["required"]:
        p = schema["properties"][k]
        out[k] = ("a place" if p.get("type") == "string" else p["enum"][h % len(p["enum"])] if "enum" in p
                  else score / 10 if p.get("type") == "number" else score)
    return tool_answer(out)


def _materialized_since(instance, mark):
    """(asset, partition) of every materialization stored after event ``mark``: what the run really wrote."""
    out = []
    for name in ["entitybench_episode", "entitybench_entity_registry", *GEN]:
        recs = instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey(name), after_storage_id=mark),
                                               limit=100).records
        out += [(name, r.asset_materialization.partition) for r in recs]
    return sorted(out)


KEY_COLS = ["metric_id", "level", "shot", "entity_id"]


def _values(store):
    df = store.query(f"SELECT {', '.join(KEY_COLS)}, value FROM entitybench_fidelity")
    return df.sort_values(KEY_COLS, na_position="first").reset_index(drop=True)


def _judge_models(store, table):
    models = set()
    for d in store.query(f"SELECT detail FROM {table}")["detail"].dropna():
        doc = json.loads(d) if isinstance(d, str) else d
        if isinstance(doc, dict) and doc.get("judge_model"):
            models.add(doc["judge_model"])
    return models


def test_a_judge_model_change_reruns_exactly_the_judged_partitions(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    data = world(tmp_path)
    with FakeAnthropic(responder=by_model_and_image) as srv, instance_for_test() as instance:
        def judge(model):
            return Judge(mode="live", base_url=srv.base_url, model=model, cache_dir=str(tmp_path / "cache"),
                         backoff_s=0.001, max_retries=0, breaker_threshold=0)

        first, store = _evaluate(instance, data, tmp_path / "store", judge("judge-a"))
        assert {a for a, _ in first.materialized} >= set(GEN)
        asked_a = len(srv.requests)
        assert asked_a > 0 and {b["model"] for b in srv.bodies} == {"judge-a"}
        fidelity_a = _values(store)
        assert _judge_models(store, "entitybench_fidelity") == {"judge-a"}
        grounding_a = store.query("SELECT shot, entity_id, status, crop_id FROM entitybench_grounding")

        mark = instance.event_log_storage.get_maximum_record_id()
        second, store = _evaluate(instance, data, tmp_path / "store", judge("judge-b"))
        pk = next(p for a, p in first.materialized if a == "entitybench_fidelity")
        # exactly the judge-using assets of the partition re-ran (the run's materializations), for the judge
        assert _materialized_since(instance, mark) == sorted((a, pk) for a in JUDGE_ASSETS)
        assert {a for a, _ in second.materialized} == JUDGE_ASSETS
        assert set(second.reruns) == {"judge changed: model judge-a -> judge-b"}, second.reruns
        assert second.forwards == 0   # no model re-ran: grounding and its crops stand
        # the stored answers and protocol are model b's: every question asked of b, none of a's answers kept
        assert {b["model"] for b in srv.bodies[asked_a:]} == {"judge-b"} and len(srv.requests) > asked_a
        assert _judge_models(store, "entitybench_fidelity") == {"judge-b"}
        assert _judge_models(store, "entitybench_action") == {"judge-b"}
        fidelity_b = _values(store)
        assert fidelity_b[KEY_COLS].equals(fidelity_a[KEY_COLS]) and not fidelity_b["value"].equals(fidelity_a["value"])
        assert store.query("SELECT shot, entity_id, status, crop_id FROM entitybench_grounding").equals(grounding_a)

        # the same judge again: nothing re-runs; back to a: the judged assets re-run from the cache (no request)
        third, _ = _evaluate(instance, data, tmp_path / "store", judge("judge-b"))
        assert third.materialized == []
        n = len(srv.requests)
        back, store = _evaluate(instance, data, tmp_path / "store", judge("judge-a"))
        assert {a for a, _ in back.materialized} == JUDGE_ASSETS and len(srv.requests) == n
        assert _judge_models(store, "entitybench_fidelity") == {"judge-a"}


# ------------------------------------------------------------------------------------------------ prompt set

def test_the_prompt_set_is_each_benchmarks_judging_module():
    from bench_assets.entitybench import assets as eb  # noqa: F401 - loads its judging module
    from bench_assets.entitybench import judging
    sets = automation.prompt_sets()
    assert sets["bench_assets.entitybench"] == automation.file_digest(judging.__file__)[:12]
    fidelity = next(a for a in eb.ASSETS if AssetKey("entitybench_fidelity") in a.keys)
    assert automation.asset_package(fidelity) == "bench_assets.entitybench"
    assert automation.asset_package(t_asks) is None   # outside bench_assets: no prompt set, unknown


def test_an_edited_prompt_set_reruns_that_benchmarks_judge_using_assets(tmp_path, monkeypatch):
    c = str(tmp_path / "c")
    a = Judge(mode="live", model="model-a", cache_dir=c)
    monkeypatch.setattr(automation, "asset_package",
                        lambda d: {"t_asks": "bench_assets.tbench"}.get(next(iter(d.keys)).to_user_string()))
    monkeypatch.setattr(automation, "prompt_sets", lambda: {"bench_assets.tbench": "v1", "bench_assets.other": "o1"})
    with instance_for_test() as instance:
        assert materialize(ASSETS, instance=instance, resources={"judge": a}, tags=evaluator_tags({"judge": a})).success
        # a fresh judge object per plan: the runner's plan cache keeps one Staleness per judge (prompts do not
        # change within a process, except here)
        assert _plan(instance, a.model_copy()) == {}
        monkeypatch.setattr(automation, "prompt_sets", lambda: {"bench_assets.tbench": "v1", "bench_assets.other": "o2"})
        assert _plan(instance, a.model_copy()) == {}   # another benchmark's prompts
        monkeypatch.setattr(automation, "prompt_sets", lambda: {"bench_assets.tbench": "v2", "bench_assets.other": "o2"})
        assert _plan(instance, a.model_copy()) == {"t_asks": "judge prompts changed: bench_assets.tbench.judging",
                                      "t_board": "upstream t_asks re-runs"}
        assert _plan(instance, Judge(mode="off", cache_dir=c))["t_asks"] == "judge changed: judge switched off"


# ------------------------------------------------------------------------------------------------ the sensors

def test_the_generator_sensor_requests_exactly_the_judged_assets_after_a_judge_change(tmp_path, monkeypatch):
    """The UI's path: the sensor's runs record the environment's judge; after BENCH_JUDGE_MODEL changes, its next
    tick requests the judge-using asset of each partition and nothing else."""
    from dagster import RunRequest, build_sensor_context

    from bench_assets.core.partitions import BenchmarkPartitions

    pj = BenchmarkPartitions("tinyjudge", "thing")

    @asset(partitions_def=pj.items)
    def tj_item():
        return Output(1)

    @asset(partitions_def=pj.generator_x_item, deps=[tj_item], required_resource_keys={"judge"})
    def tj_judged():
        return Output(1)

    @asset(partitions_def=pj.generator_x_item, deps=[tj_item])
    def tj_plain():
        return Output(1)

    assets = [tj_item, tj_judged, tj_plain]
    root = tmp_path / "generators"
    for g in ("g1", "g2"):
        (root / g).mkdir(parents=True)
        (root / g / "generator.yaml").write_text(f"name: {g}\nbenchmark: mbench\n")
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "replay")
    sensor = automation.generator_sensor_factory(
        benchmark="mbench", partitions=pj, item_ids=lambda: ["a"], generators_root=lambda: str(root),
        item_assets=["tj_item"], generator_assets=["tj_judged", "tj_plain"], assets_fn=lambda: assets,
        full_check_seconds=0)

    def tick(instance, model):
        """The tick's run requests, each run as the daemon would (its tags, the environment's judge)."""
        monkeypatch.setenv("BENCH_JUDGE_MODEL", model)
        res = sensor(build_sensor_context(instance=instance))
        requests = [r for r in (res.run_requests or []) if isinstance(r, RunRequest)]
        for r in requests:
            assert materialize(assets, instance=instance, selection=r.asset_selection, partition_key=r.partition_key,
                               tags=r.tags, resources={"judge": Judge(mode="replay", model=model,
                                                                      cache_dir=str(tmp_path / "c"))}).success
        return sorted((str(r.partition_key), k.to_user_string()) for r in requests for k in r.asset_selection)

    with instance_for_test() as instance:
        assert tick(instance, "judge-a") == [("a", "tj_item")]
        assert {k for _, k in tick(instance, "judge-a")} == {"tj_judged", "tj_plain"}
        assert tick(instance, "judge-a") == []
        changed = tick(instance, "judge-b")
        assert [k for _, k in changed] == ["tj_judged", "tj_judged"] and len({p for p, _ in changed}) == 2, changed
        assert tick(instance, "judge-b") == []
