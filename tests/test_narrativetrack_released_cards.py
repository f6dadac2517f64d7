"""Issue 39: one bad answerer card on the released QA is one clear error naming the card and what is wrong; every
other answerer is still asked and scored (before, ``narrativetrack_released_answers`` failed as a whole)."""
import json
import shutil
from pathlib import Path

import pytest
from dagster import DagsterEventType, instance_for_test, materialize

from bench_assets.narrativetrack import assets as A
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from tests.support.fake_anthropic import FakeAnthropic, tool_answer

ROOT = Path(__file__).resolve().parents[1]
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
SELECTION = ["narrativetrack_released_qa", "narrativetrack_released_answers", "narrativetrack_released_leaderboard"]


@pytest.mark.parametrize("bad_card,what", [("frames: many\n", "'frames' must be an integer, got 'many'"),
                                           ("backend: gemini\n", "'backend' must be one of anthropic, openai")])
def test_a_bad_answerer_card_is_its_own_error_and_the_others_score(tmp_path, monkeypatch, bad_card, what):
    data = tmp_path / "data"
    rel = data / "narrativetrack" / "released"
    (rel / "clips").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "narrativetrack" / "videos" / "nt001.mp4", rel / "clips" / "v1.mp4")
    recs = [{"video_path": "clips/v1.mp4", "question": f"Question {i}? (a) x (b) y (c) z (d) None of the above",
             "answer": ans, "question_type": "multiple-choice", "dimension": "Action Changes",
             "track_type": "reappear", "template_type": "start_to_later"} for i, ans in enumerate(["(b)", "(c)", "(b)"])]
    (rel / "narrativetrack_qa.json").write_text(json.dumps(recs))
    gens = data / "generators"
    cards = {"nt_a_good": "model: m-good\nframes: 4\n", "nt_b_bad": f"model: m-bad\n{bad_card}",
             "nt_c_good": "model: m-other\nframes: 2\n"}
    for name, body in cards.items():
        (gens / name).mkdir(parents=True)
        (gens / name / "generator.yaml").write_text(f"name: {name}\nbenchmark: narrativetrack\n{body}")
    paths = BenchPaths(data_root=str(data), generators_root=str(gens))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    with FakeAnthropic(responder=lambda body: tool_answer({"answer": "b"})) as srv:
        resources = build_resources(store_root=str(tmp_path / "store"), paths=paths, judge=Judge(
            mode="live", base_url=srv.base_url, cache_dir=str(tmp_path / "jc"), max_retries=0))
        with instance_for_test() as instance:
            res = materialize(A.ASSETS, selection=SELECTION, instance=instance, resources=resources,
                              run_config=QUIET, raise_on_error=False)
            assert res.success, [e.event_specific_data for e in res.all_events if e.is_step_failure]
            logs = instance.all_logs(res.run_id)
        models = sorted(r["body"]["model"] for r in srv.requests)
    # the two good answerers were asked every question, the bad card's never
    assert models == ["m-good"] * 3 + ["m-other"] * 3, models
    # one error in the run's log naming the card and the field
    errors = [r.user_message for r in logs if not r.is_dagster_event and r.level >= 40]
    assert len([m for m in errors if "nt_b_bad" in m]) == 1, errors
    assert any("nt_b_bad" in m and what in m for m in errors), errors
    mat = [e for e in res.all_events if e.event_type == DagsterEventType.ASSET_MATERIALIZATION
           and e.asset_key.to_user_string() == "narrativetrack_released_answers"][0]
    meta = mat.event_specific_data.materialization.metadata
    assert meta["card_errors"].value == 1 and what in meta["card_error_list"].value[0]
    board = resources["store"].query("SELECT * FROM narrativetrack_released_leaderboard WHERE slice = 'strict' "
                                     "AND metric_id = 'accuracy.avg'").set_index("generator")
    for g in ("nt_a_good", "nt_c_good"):   # "b" is right for 2 of 3
        assert board.loc[g, "value"] == pytest.approx(200 / 3) and board.loc[g, "n_eval"] == 3, board
    # the bad card: on the board, nothing scored, each question its card's failure with the reason (never 0 %)
    bad = board.loc["nt_b_bad"]
    assert bad["value"] is None or bad["value"] != bad["value"], bad
    assert (bad["n_eval"], bad["n_failed"], bad["n_failed_evaluator"]) == (0, 3, 0), bad
    assert "nt_b_bad" in bad["reason"] and what in bad["reason"], bad["reason"]


def test_a_bad_cards_rows_carry_the_question_columns_of_every_other_row(tmp_path):
    """The card-failure rows start from the same question columns as the answerer's own rows (entity_id included;
    they were built apart and left it out)."""
    import pandas as pd

    from bench_assets.narrativetrack import dataset, released
    from bench_assets.narrativetrack.answering import answer_frame, answer_rows
    qas = pd.DataFrame([{"qa_id": f"q{i}", "video_id": f"v{i % 2}", "entity_id": f"e{i}", "dimension": d,
                         "format": "mc", "direction": "forward", "track_type": "reappear", "distractor": "none",
                         "question": f"Q{i}?", "answer": "(b)", "options": None, "kept": i != 1}
                        for i, d in enumerate(["Action Changes", "Appearance", "Location"])])
    failed = released.card_failed_rows(qas, "nt_g", {"model": "m-1"}, "nt_g: bad card")
    skipped = answer_rows(Judge(mode="off", cache_dir=str(tmp_path / "jc")),
                          dataset.answerer_from_card("nt_g", {"model": "m-1"}), qas, frames=[])
    question = ["qa_id", "video_id", "entity_id", "dimension", "format", "direction", "track_type", "distractor",
                "answerer", "model"]
    a, b = answer_frame(failed)[question], answer_frame(skipped)[question]
    assert list(a["qa_id"]) == ["q0", "q2"] and list(a["entity_id"]) == ["e0", "e2"]
    pd.testing.assert_frame_equal(a, b)
    assert set(answer_frame(failed)["status"]) == {"failed"} and set(answer_frame(skipped)["status"]) == {"skipped"}
