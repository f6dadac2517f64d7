"""LoCoT2V's board in the common schema: every id has a spec and every spec a row (on the materialised embedded data),
aggregates under the paper's names never computed from some of their parts, partial means under their own ids with
their coverage, a sample the generator did not deliver never helping it, and the offline substitutes marked on every
cell they produced."""
import json
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from bench_assets.core.board_text import board_markdown
from bench_assets.core.metric_spec import check_board, label_substitutes
from bench_assets.locot2v import board, constants
from bench_assets.locot2v.metric_specs import METRICS
from bench_resources.models.specs import SLOTS
from tests.support.locot2v import GENERATORS

SAMPLES = ["s1", "s2", "s3"]


def _records(values: dict, generator: str = "g", substitute: dict | None = None) -> pd.DataFrame:
    """Item rows for every (sample, sub-dimension) in ``values`` (a None value is a skipped sample)."""
    rows = []
    for (item, mid), v in values.items():
        rows.append({"generator": generator, "item": item, "metric_id": mid, "value": v,
                     "n_eval": int(v is not None), "n_failed": 0, "n_skipped": int(v is None),
                     "reason": None if v is not None else f"{mid} off", "protocol": "p",
                     "substitute": (substitute or {}).get(mid)})
    return pd.DataFrame(rows)


def _varied() -> dict:
    """Different values per sub-dimension and sample, so a mean over the wrong parts cannot match by accident."""
    return {(s, m): float(10 + 3 * i + 7 * j) for j, s in enumerate(SAMPLES)
            for i, m in enumerate(constants.SUB_DIMENSIONS)}


# ------------------------------------------------------------------------------------------ aggregates

def test_overall_is_none_with_its_reason_when_one_dimension_lacks_a_value():
    values = _varied()
    for s in SAMPLES:                           # HERD without a value on every sample (e.g. the judge was off)
        for m in constants.DIMENSIONS["herd"]:
            values[(s, m)] = None
    values[("s3", "warping_error")] = None      # one temporal sub-dimension scored on 2 of 3 samples
    table = board.leaderboard_table(_records(values), SAMPLES, ["g"]).set_index("metric_id")
    sub = {m: np.mean([values[(s, m)] for s in SAMPLES if values[(s, m)] is not None])
           for m in constants.SUB_DIMENSIONS if any(values[(s, m)] is not None for s in SAMPLES)}
    cov = {m: sum(values[(s, m)] is not None for s in SAMPLES) / 3 for m in constants.SUB_DIMENSIONS}
    dims = {d: np.mean([sub[m] for m in ids]) for d, ids in constants.DIMENSIONS.items() if d != "herd"}
    dim_cov = {d: np.mean([cov[m] for m in ids]) for d, ids in constants.DIMENSIONS.items()}
    assert table.loc["warping_error", "value"] == pytest.approx(sub["warping_error"])
    assert table.loc["warping_error", "coverage"] == pytest.approx(2 / 3)
    for d, v in dims.items():
        assert table.loc[d, "value"] == pytest.approx(v), d
        assert table.loc[d, "coverage"] == pytest.approx(dim_cov[d]), d
    assert pd.isna(table.loc["herd", "value"]) and table.loc["herd", "coverage"] == 0.0
    assert "herd needs all 7 sub-dimensions; without a value: herd.Emotional Response" in table.loc["herd", "reason"]
    # the paper's overall: None, and the reason names the dimension without a value
    assert pd.isna(table.loc["overall", "value"])
    assert table.loc["overall", "reason"] == "overall needs all 5 dimensions; without a value: herd"
    # the partial mean under its own id: the mean of the four, with the coverage of all five (HERD counts 0)
    assert table.loc["overall_available", "value"] == pytest.approx(np.mean(list(dims.values())))
    assert table.loc["overall_available", "coverage"] == pytest.approx(np.mean(list(dim_cov.values())))
    assert table.loc["overall_available", "coverage"] < 0.8
    assert "4 of 5 dimensions" in table.loc["overall_available", "reason"]
    assert bool(table.loc["overall_available", "addition"]) and not bool(table.loc["overall", "addition"])
    assert pd.isna(table.loc["herd_available", "value"])
    assert json.loads(table.loc["overall", "detail"])["parts_with_value"] == 4


def test_a_dimension_missing_one_sub_dimension_is_none_and_its_partial_mean_is_labelled():
    values = _varied()
    for s in SAMPLES:
        values[(s, "event_alignment")] = None
    table = board.leaderboard_table(_records(values), SAMPLES, ["g"]).set_index("metric_id")
    oa = np.mean([values[(s, "overall_alignment")] for s in SAMPLES])
    assert pd.isna(table.loc["text_video_alignment", "value"])
    assert "without a value: event_alignment" in table.loc["text_video_alignment", "reason"]
    assert table.loc["text_video_alignment_available", "value"] == pytest.approx(oa)
    assert table.loc["text_video_alignment_available", "coverage"] == pytest.approx(0.5)
    assert pd.isna(table.loc["overall", "value"])
    assert "without a value: text_video_alignment" in table.loc["overall", "reason"]
    assert check_board(table.reset_index(), METRICS) == []


def test_a_sample_not_delivered_never_ranks_higher():
    full = {(s, m): (90.0 if s == "s1" else 40.0) for s in ("s1", "s2") for m in constants.SUB_DIMENSIONS}
    less = {k: v for k, v in full.items() if k[0] == "s1"}    # the weak sample's video is missing
    recs = pd.concat([_records(full, "full"), _records(less, "less")], ignore_index=True)
    table = board.leaderboard_table(recs, ["s1", "s2"], ["full", "less"],
                                    delivered={"full": {"s1", "s2"}, "less": {"s1"}})
    v = table.pivot(index="metric_id", columns="generator", values="value").astype(float)
    v = v.dropna(how="all")   # the face-identity addition has no records here: None for both
    assert (v["less"] <= v["full"]).all(), v[v["less"] > v["full"]]
    rows = table[(table.generator == "less") & table.metric_id.isin(constants.SUB_DIMENSIONS)]
    assert (rows.n_failed == 1).all() and (rows.coverage == 0.5).all() and (rows.raw_mean == 90.0).all()
    assert rows.reason.str.contains("no output video").all()
    # without the delivery list a sample without a row is 'not evaluated', never the generator's failure
    pending = board.leaderboard_table(_records(less, "less"), ["s1", "s2"], ["less"])
    assert (pending.n_failed == 0).all()


# ------------------------------------------------------------------------------------------ substitutes

class _Models:
    """A registry stand-in: slot -> checkpoint in use (absent: the slot is unavailable)."""

    def __init__(self, use: dict):
        self.use = use

    def status(self, slot):
        return SimpleNamespace(available=slot in self.use, checkpoint=self.use.get(slot))


def test_substitutes_from_the_slots_used_reach_every_cell_and_aggregate():
    models = _Models({"flow": SLOTS["flow"].offline.name, "siglip2": SLOTS["siglip2"].paper.name,
                      "long_text_embedder": SLOTS["long_text_embedder"].offline.name,
                      "interpolator": SLOTS["interpolator"].offline.name})
    recs = label_substitutes(_records(_varied()), METRICS, models)
    table = board.leaderboard_table(recs, SAMPLES, ["g"]).set_index("metric_id")
    flow = f"flow: {SLOTS['flow'].offline.name}"
    interp = f"interpolator: {SLOTS['interpolator'].offline.name}"   # motion smoothness: AMT-S in the paper profile
    text = f"long_text_embedder: {SLOTS['long_text_embedder'].offline.name}"
    for m in ("dynamic_degree", "warping_error", "temporal_flickering", "transition_smoothness"):
        assert table.loc[m, "substitute"] == flow, m
    assert table.loc["motion_smoothness", "substitute"] == interp
    assert table.loc["overall_alignment", "substitute"] == text
    assert pd.isna(table.loc["semantic_consistency", "substitute"])      # the paper's SigLIP2
    assert pd.isna(table.loc["herd.Themes", "substitute"]) and pd.isna(table.loc["aesthetic_quality", "substitute"])
    assert set(table.loc["temporal_quality", "substitute"].split("; ")) == {flow, interp}  # the union of its parts'
    assert set(table.loc["overall", "substitute"].split("; ")) == {flow, interp, text}
    assert set(table.loc["overall_available", "substitute"].split("; ")) == {flow, interp, text}
    assert pd.isna(table.loc["herd", "substitute"])
    assert "*" in board_markdown(table.reset_index(), {"slice": "all"})


# ------------------------------------------------------------------------------------------ the embedded data

@pytest.fixture(scope="module")
def embedded(locot2v_offline):
    """The session's offline LoCoT2V world (tests/support/worlds.py: every sample x the four generators), built once
    for this module and test_locot2v."""
    stats, resources, errors, _, _ = locot2v_offline
    assert not errors and not stats.failed, stats.failed
    return resources


def _fragments(labels) -> set[str]:
    """Labels as core.metric_spec.join_substitutes splits them (at ';' or '|': a checkpoint name holding '; ' comes
    back in two pieces, so marks are compared piece by piece)."""
    return {p for label in labels if isinstance(label, str) for p in re.split(r"\s*[;|]\s*", label) if p}


def _offline_slots(models, slots) -> set[str]:
    """'slot: checkpoint' for each slot that runs a checkpoint other than the paper's in this registry."""
    out = set()
    for s in slots:
        st = models.status(s)
        if s in SLOTS and st.available and st.checkpoint != SLOTS[s].paper.name:
            out.add(f"{s}: {st.checkpoint}")
    return out


def _parts_of(mid: str) -> tuple[str, ...]:
    spec = METRICS[mid]
    if spec.parts:
        return spec.parts
    if mid == "overall_available":
        return tuple(f"{d}_available" for d in constants.DIMENSIONS)
    if mid.endswith("_available"):
        return constants.DIMENSIONS[mid[:-len("_available")]]
    return ()


def test_embedded_board_is_sound_and_marks_every_substitute(embedded):
    store, models = embedded["store"], embedded["models"]
    table = store.query("SELECT * FROM locot2v_leaderboard")
    assert check_board(table, METRICS) == []
    assert (table["slice"] == "all").all() and set(table.generator) == set(GENERATORS)
    # every cell with a value that an offline checkpoint produced names it; an aggregate carries its parts' marks
    by = table.set_index(["generator", "metric_id"])
    marked = 0
    for (g, mid), r in by.iterrows():
        if pd.isna(r["value"]):
            continue
        have = _fragments([r["substitute"]])
        parts = _parts_of(mid)
        if parts:
            want = set()
            for p in parts:
                s = by.loc[(g, p), "substitute"]
                if pd.notna(by.loc[(g, p), "value"]):
                    want |= _fragments([s])
        else:
            want = _fragments(_offline_slots(models, METRICS[mid].slots))
        assert want <= have, (g, mid, want - have)
        marked += bool(want)
    # offline, the flow (DIS) and the image embedder / detector run substitutes: the check above is not vacuous
    flow = f"flow: {models.status('flow').checkpoint}"
    assert models.status("flow").checkpoint != SLOTS["flow"].paper.name and marked >= 10
    assert (by.xs("dynamic_degree", level="metric_id")["substitute"] == flow).all()
    assert by.xs("inter_event_subject_consistency", level="metric_id")["substitute"].str.contains(
        "image_embedder").all()
    # the item rows carry it from compute time
    visual = store.query("SELECT metric_id, substitute FROM locot2v_visual WHERE metric_id = 'warping_error'")
    assert (visual["substitute"] == flow).all()
    # with the judge off every dimension lacks a part: the paper's overall is None with its reason
    assert by.xs("overall", level="metric_id")["value"].isna().all()
    assert by.xs("overall", level="metric_id")["reason"].str.startswith("overall needs all 5 dimensions").all()
