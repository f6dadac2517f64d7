"""EntityMem's paper Table 5 (d and d_z per category, bootstrap bounds, a minimum of paired episodes) and Table 19
on gap-decay rows built by EntityBench's own gap_decay_table. Constructed rows, pure functions."""
import json

import numpy as np
import pandas as pd
import pytest

from bench_assets.core.stats import paired_dz
from bench_assets.entitybench import audit as AU
from bench_assets.entitymem import rows

FACE = "Character fidelity (intra-shot)"


def _records(n_items: int, shift: float, seed: int) -> pd.DataFrame:
    """Two face-fidelity metrics per episode for both arms; EntityMem's values moved up by ``shift``."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_items):
        for mid in ("intra_face_fidelity", "intra_face_hair"):
            base = rng.normal(0.5, 0.1)
            out.append({"generator": "entitymem_c", "item": f"e{i}", "metric_id": mid,
                        "value": base + shift + rng.normal(0, 0.03), "protocol": "p"})
            out.append({"generator": "storymem-control_c", "item": f"e{i}", "metric_id": mid,
                        "value": base + rng.normal(0, 0.03), "protocol": "p"})
    return pd.DataFrame(out)


def test_two_paired_episodes_give_no_effect_but_the_reason():
    # HEAD printed a d and a d_z from 2 pairs (its d_z of 21.9); now both are None with the minimum named
    rec = _records(2, 0.05, seed=3)
    per = rows.metric_effects(rec)
    assert per["cohens_d"].isna().all() and per["d_z"].isna().all()
    assert per["reason"].str.contains("below the minimum of 10").all()
    row = rows.table5(rec).set_index("category").loc[FACE]
    assert pd.isna(row["avg_d"]) and pd.isna(row["avg_d_z"]) and row["n_metrics"] == 0
    assert "2 paired episode(s)" in row["reason"]
    assert "None" in rows.table5_markdown(rows.table5(rec))


@pytest.mark.parametrize("shift,seed", [(0.05, 0), (-0.03, 1)])
def test_category_has_d_z_and_bootstrap_bounds(shift, seed):
    rec = _records(14, shift, seed)
    per = rows.metric_effects(rec).set_index("metric_id")
    for mid in ("intra_face_fidelity", "intra_face_hair"):
        a = rec[(rec.generator == "entitymem_c") & (rec.metric_id == mid)].sort_values("item")["value"]
        b = rec[(rec.generator == "storymem-control_c") & (rec.metric_id == mid)].sort_values("item")["value"]
        assert per.loc[mid, "d_z"] == pytest.approx(paired_dz(list(a), list(b)))
        assert per.loc[mid, "delta"] == pytest.approx(float(a.mean() - b.mean()))
        assert per.loc[mid, "d_lo"] <= per.loc[mid, "cohens_d"] <= per.loc[mid, "d_hi"]
        assert per.loc[mid, "dz_lo"] <= per.loc[mid, "d_z"] <= per.loc[mid, "dz_hi"]
    row = rows.table5(rec).set_index("category").loc[FACE]
    assert row["avg_d_z"] == pytest.approx(per["d_z"].mean())
    assert np.sign(row["avg_d_z"]) == np.sign(shift) == np.sign(row["avg_d"])   # the sign the data were built with
    assert row["dz_lo"] == pytest.approx(per["dz_lo"].mean()) and row["d_hi"] == pytest.approx(per["d_hi"].mean())
    md = rows.table5_markdown(rows.table5(rec))
    assert "avg d_z [95%]" in md and f"{row['avg_d_z']:+.2f} [{row['dz_lo']:+.2f}, {row['dz_hi']:+.2f}]" in md


def test_table19_on_gap_decay_rows_from_entitybench():
    """Pair rows of both arms through EntityBench's gap_decay_table, then Table 19: the values are the arms' means."""
    def pair(gen, item, metric, v, gap_bin, etype="character"):
        return {"generator": gen, "item": item, "metric_id": metric, "shot": 2, "entity_id": "c1", "value": v,
                "detail": json.dumps({"gap_bin": gap_bin, "entity_type": etype, "embedder": "dinov2"})}

    emb, llm = [], []
    for gen, base in (("entitymem_x", 0.8), ("storymem-control_x", 0.6), ("other", 0.1)):
        for i, gb in enumerate(("1-2", "1-2", "3-5")):
            emb.append(pair(gen, f"e{i}", "gap_decay_embedding", base + 0.01 * i, gb))
            llm.append(pair(gen, f"e{i}", "llm_face_mean_score", base - 0.1 + 0.02 * i, gb))
        emb.append(pair(gen, "e9", "gap_decay_embedding", 0.0, "1-2", etype="object"))   # not a character
    gap = AU.gap_decay_table(pd.DataFrame(emb), pd.DataFrame(llm), None)
    t19 = rows.table19(gap).set_index(["arm", "signal", "gap_bin"])
    assert len(t19) == 8
    assert t19.loc[("EntityMem", "embedding_cosine", "1-2"), "mean"] == pytest.approx(0.805)
    assert t19.loc[("control", "llm_sim", "3-5"), "mean"] == pytest.approx(0.54)
    assert t19.loc[("EntityMem", "llm_sim", "1-2"), "pairs"] == 2
    md = rows.table19_markdown(rows.table19(gap))
    assert "0.805 (2)" in md and "0.540 (1)" in md and "other" not in md


def test_a_category_from_substitute_values_is_marked():
    """Values a non-paper judge produced: the category's effect carries the label and a '*' in the markdown; the
    category scored by the paper's models has none (HEAD's Table 5 dropped the substitute column)."""
    rec = _records(12, 0.04, seed=5)
    label = "judge: claude-sonnet-4-6 (paper: gemini-2.5-pro)"
    rec["substitute"] = [label if m == "intra_face_hair" else None for m in rec["metric_id"]]
    other = _records(12, -0.02, seed=6)
    other = other[other["metric_id"] == "intra_face_fidelity"].assign(metric_id="intra_object_presence",
                                                                      substitute=None)
    t5 = rows.table5(pd.concat([rec, other], ignore_index=True)).set_index("category")
    assert t5.loc[FACE, "substitute"] == label and pd.isna(t5.loc["Object presence", "substitute"])
    md = rows.table5_markdown(t5.reset_index())
    face_line = next(line for line in md.splitlines() if line.startswith(f"| {FACE}"))
    obj_line = next(line for line in md.splitlines() if line.startswith("| Object presence"))
    assert f"{t5.loc[FACE, 'avg_d']:+.2f} [" in face_line and "]* |" in face_line and label in face_line
    assert "*" not in obj_line


def test_table19_marks_cosines_from_a_substitute_embedder():
    """The offline profile's cosines come from EfficientNet-Lite0, not the paper's DINOv2: each value is starred
    and the row names the embedder; DINOv2's and the LLM's rows carry no mark (HEAD printed all of them bare)."""
    def g(gen, sig, b, m, n, emb):
        return {"generator": gen, "signal": sig, "entity_type": "character", "tier": "all", "gap_bin": b,
                "mean": m, "pairs": n, "embedder": emb}
    lite = "EfficientNet-Lite0 ImageNet (pooled 1280-d features)"
    gap = pd.DataFrame([g("entitymem_x", "embedding_cosine", "1-2", 0.95, 5, lite),
                        g("storymem-control_x", "embedding_cosine", "1-2", 0.86, 3, lite),
                        g("entitymem_y", "embedding_cosine", "1-2", 0.9, 4, "DINOv2 ViT-B/14"),
                        g("storymem-control_y", "embedding_cosine", "1-2", 0.8, 4, "DINOv2 ViT-B/14"),
                        g("entitymem_x", "llm_sim", "3-5", 0.7, 2, "")])
    t19 = rows.table19(gap)
    assert t19.set_index(["configuration", "arm", "signal"]).loc[("x", "EntityMem", "embedding_cosine"),
                                                                  "substitute"] == lite
    assert t19[t19.configuration == "y"]["substitute"].isna().all()
    md = rows.table19_markdown(t19).splitlines()
    line = {tuple(c.strip() for c in x.split("|")[1:4]): x for x in md if x.startswith("| x") or x.startswith("| y")}
    assert "0.950 (5)*" in line[("x", "embedding_cosine", "EntityMem")]
    assert line[("x", "embedding_cosine", "control")].endswith(f"| {lite} (paper: DINOv2) |")
    assert "*" not in line[("y", "embedding_cosine", "EntityMem")] and "*" not in line[("x", "llm_sim", "EntityMem")]


def test_table19_llm_rows_carry_the_judge_mark_of_their_records():
    """The LLM 'sim' of an arm judged by a non-paper judge: its Table 19 row is starred with the judge's label,
    read from the arm's llm_face_mean_score records (the gap table does not carry it); the other arm, judged by
    the paper's model, is bare."""
    label = "judge: claude-sonnet-4-6 (paper: gemini-2.5-pro)"
    gap = pd.DataFrame([{"generator": gen, "signal": "llm_sim", "entity_type": "character", "tier": "all",
                         "gap_bin": "1-2", "mean": m, "pairs": 3, "embedder": ""}
                        for gen, m in (("entitymem_x", 0.7), ("storymem-control_x", 0.6))])
    records = pd.DataFrame([
        {"generator": "entitymem_x", "item": "e1", "metric_id": "llm_face_mean_score", "value": 0.7,
         "protocol": "p", "substitute": label},
        {"generator": "storymem-control_x", "item": "e1", "metric_id": "llm_face_mean_score", "value": 0.6,
         "protocol": "p", "substitute": None},
        {"generator": "storymem-control_x", "item": "e1", "metric_id": "intra_face_hair", "value": 0.6,
         "protocol": "p", "substitute": "another judge"}])   # another metric's mark does not leak in
    t19 = rows.table19(gap, records).set_index("arm")
    assert t19.loc["EntityMem", "substitute"] == label and pd.isna(t19.loc["control", "substitute"])
    md = rows.table19_markdown(rows.table19(gap, records))
    em = next(x for x in md.splitlines() if "| EntityMem |" in x)
    ctl = next(x for x in md.splitlines() if "| control |" in x)
    assert "0.700 (3)*" in em and em.endswith(f"| {label} |") and "*" not in ctl
    assert rows.table19(gap)["substitute"].isna().all()        # without records: nothing to read a mark from
