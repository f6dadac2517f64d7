"""Issue 25, the EntityBench fidelity gate on evaluator failure (pure functions, entitybench/judged.py): a crop whose
fidelity question failed is 'gate unknown' (never admitted, not gated out, counted apart, the gated rows withheld as
the evaluator's failure); with the judge off nothing is gated and the gated rows are marked 'ungated'; the gate's
state is part of the protocol, so rows under different judges or gate states are never comparable."""
import json

import pandas as pd

from bench_assets.core.metric_spec import comparability, split_substitutes
from bench_assets.entitybench import counts, judged
from bench_assets.entitybench.judged import GATE_UNKNOWN, UNGATED


def fidelity_table(rows):
    """Appearance rows of entitybench_fidelity: (shot, entity, value, reason, evaluator failures, judge model)."""
    out = []
    for shot, ent, value, reason, ev, model in rows:
        detail = {"judge_status": "ok" if value is not None else "failed", "judge_model": model}
        out.append({"level": "appearance", "metric_id": "intra_face_fidelity", "shot": shot, "entity_id": ent,
                    "value": value, "reason": reason, counts.EVAL: ev, "detail": json.dumps(detail)})
    return pd.DataFrame(out)


def grounding(entity="c1", shots=(1, 2, 3, 4)):
    return pd.DataFrame([{"entity_id": entity, "shot": k, "status": "present", "crop_id": f"crop{k}",
                          "ambiguous": False, "reason": None} for k in shots])


def test_failed_question_is_gate_unknown_not_admitted_and_counted_apart():
    fid = judged.fidelity_overall(fidelity_table([
        (1, "c1", 0.9, None, 0, "m"), (2, "c1", 0.2, None, 0, "m"),
        (3, "c1", None, "HTTP 500 after 4 retries", 1, "m"), (4, "c1", None, "judge off", 1, "m")]))
    assert fid[(1, "c1")] == 0.9 and fid[(3, "c1")] is GATE_UNKNOWN and fid[(4, "c1")] is None
    adm, gated = judged.admitted(grounding(), fid, "c1")
    # shot 1 passes, shot 2 is gated out, shot 3 (failed question) is neither, shot 4 (judge off) is ungated
    assert list(adm["shot"]) == [1, 4] and gated == 1
    assert judged.gate_unknown_count(grounding(), fid) == 1
    states = judged.appearance_states(grounding(), fid)
    assert states[(3, "c1")][0] == "evaluator" and GATE_UNKNOWN in states[(3, "c1")][1]
    assert states[(2, "c1")][0] == "generator" and states[(1, "c1")][0] == "admitted"


def item_rows():
    rows = [{"level": "item", "metric_id": m, "value": 0.8, "n_eval": 3, "n_failed": 0, "n_skipped": 0,
             "reason": None, counts.EVAL: 0, "substitute": None}
            for m in ("cs_face", "cs_object", "intra_character_presence")]
    df = pd.DataFrame(rows)
    df["substitute"] = df["substitute"].astype("string")
    return df


def test_unknown_gate_withholds_gated_rows_and_judge_off_marks_them_ungated():
    withheld = judged.withhold_unknown_gate(item_rows(), 2, "gated by m")
    by = withheld.set_index("metric_id")
    assert pd.isna(by.loc["cs_face", "value"]) and by.loc["cs_face", counts.EVAL] == 2
    assert GATE_UNKNOWN in by.loc["cs_object", "reason"]
    assert by.loc["intra_character_presence", "value"] == 0.8  # presence does not read the gate
    ungated = judged.withhold_unknown_gate(item_rows(), 0, "ungated").set_index("metric_id")
    assert ungated.loc["cs_face", "value"] == 0.8
    assert UNGATED in split_substitutes(ungated.loc["cs_face", "substitute"])
    assert pd.isna(ungated.loc["intra_character_presence", "substitute"])
    gated = judged.withhold_unknown_gate(item_rows(), 0, "gated by m").set_index("metric_id")
    assert pd.isna(gated.loc["cs_face", "substitute"])


def test_gate_state_names_the_judge_and_keeps_rows_apart():
    off = fidelity_table([(1, "c1", None, "judge off", 1, "m")])
    a = fidelity_table([(1, "c1", 0.9, None, 0, "judge-a")])
    b = fidelity_table([(1, "c1", 0.9, None, 0, "judge-b")])
    assert judged.gate_state(off) == "ungated"
    assert judged.gate_state(a) == "gated by judge-a" != judged.gate_state(b)
    from bench_assets.entitybench import wiring as W

    class Models:
        def manifest(self, names):
            return {n: "offline" for n in names}

    protocols = {g: W.protocol(Models(), ["image_embedder"], gate=judged.gate_state(t))
                 for g, t in (("gen_off", off), ("gen_a", a), ("gen_b", b))}
    assert len(set(protocols.values())) == 3
    table = comparability(pd.DataFrame([{"generator": g, "metric_id": "cs_face", "protocol": p}
                                        for g, p in protocols.items()]))
    assert not table["comparable"].any()


def test_unknown_gate_withholds_the_instances_too():
    """Per-instance rows of the gated families (appearance, pair, the gap-decay pairs) computed over the admitted
    set: withheld under an unknown gate, one evaluator failure each; an undelivered shot stays the generator's;
    presence (not gated) keeps its instances; judge off or a known gate leaves every instance as it was."""
    def frame():
        rows = item_rows().to_dict("records")
        inst = [("cs_face", "appearance", 0.91, 0, 1), ("cs_face", "appearance", 0.72, 0, 2),
                ("gap_decay_embedding", "pair", 0.66, 0, 2), ("cs_transition_boundary", "pair", 0.5, 0, 3),
                ("cs_object", "appearance", None, 1, 4), ("intra_character_presence", "shot", 1.0, 0, 1)]
        for mid, level, v, failed, shot in inst:
            rows.append({"level": level, "metric_id": mid, "value": v, "n_eval": int(v is not None),
                         "n_failed": failed, "n_skipped": 0, "shot": shot, counts.EVAL: 0, "substitute": None,
                         "reason": "shot 4 not delivered" if failed else None})
        df = pd.DataFrame(rows)
        df[counts.EVAL] = df[counts.EVAL].astype("Int64")
        df["substitute"] = df["substitute"].astype("string")
        return df

    out = judged.withhold_unknown_gate(frame(), 3, "gated by m")
    inst = out[out["level"] != "item"]
    gated = inst[inst["metric_id"].isin(judged.GATED_INSTANCE_IDS) & (inst["n_failed"] == 0)]
    assert len(gated) == 4 and gated["value"].isna().all()
    assert list(gated[counts.EVAL]) == [1, 1, 1, 1] and (gated["n_eval"] == 0).all()
    assert all(GATE_UNKNOWN in r for r in gated["reason"])
    undelivered = inst[inst["n_failed"] == 1].iloc[0]
    assert undelivered[counts.EVAL] == 0 and undelivered["reason"] == "shot 4 not delivered"
    presence = inst[inst["metric_id"] == "intra_character_presence"].iloc[0]
    assert presence["value"] == 1.0 and presence[counts.EVAL] == 0
    # the item rows count the unknown crops; the evaluator summary (asset metadata, what the next run retries)
    # sees them
    assert counts.evaluator_summary(out)[0] == 2 * 3  # the cs_face and cs_object item rows, 3 crops each
    for gate in ("ungated", "gated by m"):
        kept = judged.withhold_unknown_gate(frame(), 0, gate)
        assert list(kept.loc[kept["level"] != "item", "value"].fillna(-1)) == [0.91, 0.72, 0.66, 0.5, -1, 1.0]
