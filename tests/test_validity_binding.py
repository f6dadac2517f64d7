"""A stated margin binds (issue 37 item 5): a direction expectation with a margin passes only when the metric moved
its way by at least the margin; d decides only where no margin is stated. Unit values are constructed so that each
branch of ``judge_expectation`` is reached (d defined, zero spread, fewer than two units a side)."""
import pandas as pd
import pytest

from bench_assets.core import stats
from bench_assets.core import validity as V
from bench_assets.core.metric_spec import MetricSpec, MetricSpecs

REF = [0.80, 0.85, 0.90]


def _judge(margin, ref, pert, paired=True, direction=-1):
    return V.judge_expectation(V.Expect("m", direction, margin), ref, pert, paired)


def test_three_units_each_dropping_002_do_not_pass_a_010_margin():
    """The issue's example: zero spread of the changes, so d is undefined and the former rule passed on the sign."""
    pert = [v - 0.002 for v in REF]
    assert stats.zero_spread(pert, REF, paired=True)
    row = _judge(0.10, REF, pert)
    assert row["passed"] is False and row["effect_size_d"] is None
    assert "margin" in row["reason"]
    # the same zero-spread move judged on a margin it meets passes, and the wrong way fails whatever its size
    assert _judge(0.10, REF, [v - 0.2 for v in REF])["passed"] is True
    assert _judge(0.10, REF, [v + 0.2 for v in REF])["passed"] is False


def test_a_large_d_does_not_pass_a_row_whose_margin_is_not_met():
    """Consistent small drops (|d_z| far above 1) under a .10 margin: FAIL, with the reason naming the margin."""
    pert = [0.78, 0.831, 0.879]                     # changes -.020, -.019, -.021
    d = stats.paired_dz(pert, REF)
    assert d is not None and abs(d) >= V.D_PASS
    row = _judge(0.10, REF, pert)
    assert row["passed"] is False and row["effect_size_d"] == pytest.approx(d)
    assert "margin not met" in row["reason"]
    # unpaired, with spread on each side: the pooled d is large too, and the margin still binds
    ref, pert = [0.50, 0.51, 0.52, 0.50], [0.47, 0.48, 0.49, 0.47]
    assert abs(stats.cohens_d(pert, ref)) >= V.D_PASS
    assert _judge(0.10, ref, pert, paired=False)["passed"] is False


def test_d_decides_only_where_no_margin_is_stated():
    """The same unit values: without a margin the large d passes; stating a margin they miss fails them. A met margin
    passes whatever d says (a noisy move of the stated size)."""
    pert = [0.78, 0.831, 0.879]
    assert _judge(None, REF, pert)["passed"] is True
    assert _judge(0.021, REF, pert)["passed"] is False  # |difference| .020 < .021
    assert _judge(0.019, REF, pert)["passed"] is True
    noisy = [0.55, 0.87, 0.82]                          # changes -.25, +.02, -.08: mean -.1033, d_z -.76
    assert abs(stats.paired_dz(noisy, REF)) < V.D_PASS
    assert _judge(0.10, REF, noisy)["passed"] is True
    assert _judge(None, REF, noisy)["passed"] is False
    # no margin and zero spread: the sign still decides (nothing else could), as before
    assert _judge(None, REF, [v - 0.002 for v in REF])["passed"] is True
    # fewer than two units a side: the margin alone, or no verdict without one
    assert _judge(0.10, [0.9], [0.899], paired=False)["passed"] is False
    assert _judge(0.10, [0.9], [0.7], paired=False)["passed"] is True
    assert _judge(None, [0.9], [0.7], paired=False)["passed"] is None
    # invariance keeps its tolerance (it always bound)
    assert _judge(0.05, REF, [v - 0.04 for v in REF], direction=0)["passed"] is True
    assert _judge(0.05, REF, [v - 0.06 for v in REF], direction=0)["passed"] is False



def test_the_table_counts_a_negligible_consistent_move_as_a_failure():
    """Through validity_rows and the printed table: the .002 drop under a .10 margin reads FAIL, a documented
    limitation's miss reads LIMIT, and a move of the stated size reads PASS."""
    suite = V.Suite("b", None, None, "ref", [V.Case("c", "p", "gen_p", [
        V.Expect("tiny", -1, 0.10), V.Expect("blind", -1, 0.10, limitation="documented blind spot"),
        V.Expect("big", -1, 0.10)])])
    moves = {"tiny": -0.002, "blind": -0.002, "big": -0.2}
    values = pd.DataFrame([{"generator": g, "unit": u, "metric_id": m, "value": v + (dv if g == "gen_p" else 0.0),
                            "reason": None}
                           for m, dv in moves.items() for g in ("ref", "gen_p") for u, v in zip("abc", REF)])
    specs = MetricSpecs("b", [MetricSpec(m, "f", "higher", m) for m in moves])
    rows = V.validity_rows(suite, values, specs)
    assert {r["metric_id"]: V.verdict(r) for r in rows.to_dict("records")} == \
        {"tiny": "FAIL", "blind": "LIMIT", "big": "PASS"}
    assert "1 pass, 1 fail, 1 known limitation" in V.format_table(rows)


# ------------------------------------------------ re-judging what README records (scripts/rejudge_validity.py)

def _rejudge_module():
    import importlib
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    return importlib.import_module("rejudge_validity")


SECTION_TEXT = """# x
## Validity on real footage
Held out: EntityBench 5 pass, 0 fail, 1 cannot run (imaging quality: no weights), MBench 1 pass, 0 fail, 1 LIMIT.
The swap moved small by -.05, big by -.20 and edge by -.10; the blind row moved -.02.
## Next section
EntityBench 0 pass, 9 fail
"""


def test_rejudge_reads_the_counts_and_differences_and_applies_the_binding_rule():
    """A former pass whose recorded difference misses its margin reads PASS -> FAIL; one that meets it keeps PASS; one
    rounded onto its margin, or with no recorded difference, cannot be re-judged; invariance, cannot-run and LIMIT
    rows keep theirs without numbers."""
    R = _rejudge_module()
    text = R.section(SECTION_TEXT)
    counts = R.parse_counts(text)
    assert counts["entitybench"] == R.Counts(5, 0, 1, 0, ("imaging quality",)) and counts["mbench"].limit == 1
    num = R._NUM
    recorded = R.parse_recorded(text, {
        ("entitybench", "c", "small"): rf"moved small by (?P<diff>{num})",
        ("entitybench", "c", "big"): rf"big by (?P<diff>{num})",
        ("entitybench", "c", "edge"): rf"edge by (?P<diff>{num})",
        ("mbench", "d", "blind"): rf"blind row moved (?P<diff>{num})"})
    assert recorded[("entitybench", "c", "big")].diff == pytest.approx(-0.2)
    cases = {"entitybench": [V.Case("c", "p", "g", [
        V.Expect("small", -1, 0.10), V.Expect("big", -1, 0.10), V.Expect("edge", -1, 0.10),
        V.Expect("unrecorded", -1, 0.10), V.Expect("same", 0, 0.05), V.Expect("imaging_quality", -1, 5.0)])],
        "mbench": [V.Case("d", "p", "g", [V.Expect("blind", -1, 0.10, limitation="blind spot"),
                                         V.Expect("moved", +1, 0.10)])]}
    rows = R.rejudge(cases, counts, recorded, {"entitybench/c": {"version": 2}})
    got = {r["metric"]: (r["former"], r["binding"]) for r in rows}
    assert got == {"small": ("PASS", "FAIL"), "big": ("PASS", "PASS"), "edge": ("PASS", None),
                   "unrecorded": ("PASS", None), "same": ("PASS", "PASS"), "imaging_quality": ("n/a", "n/a"),
                   "blind": ("LIMIT", "LIMIT"), "moved": ("PASS", None)}
    assert rows[0]["case"] == "c@v2" and "cannot re-judge" in rows[2]["why"] and "rounds" in rows[2]["why"]
    s = R.summary(rows)
    assert (s["changed"], s["re_judged_from_differences"], s["unconfirmed_passes"]) == (1, 3, 2)
    assert R.summary_line(s).endswith("(EntityBench 1, MBench 1)")
    assert "PASS -> FAIL" in R.format_rows(rows)


def test_rejudge_leaves_rows_unattributed_where_the_counts_include_failures():
    """With failures in the count, no row gets a former verdict of its own: invariance rows are unchanged whatever
    they were, a direction row with a margin cannot be re-judged unless its difference is recorded."""
    R = _rejudge_module()
    counts = R.parse_counts(R.section(R.SECTION + "\nNarrativeTrack 1 pass, 1 fail: words.\n"))
    cases = {"narrativetrack": [V.Case("c", "p", "g", [V.Expect("a", 0, 0.05), V.Expect("b", -1, 0.1)])]}
    rows = R.rejudge(cases, counts, {})
    assert [(r["former"], r["binding"]) for r in rows] == [("?", "?"), ("?", None)]
    assert "one of 1 pass, 1 fail" in rows[0]["why"] and R.summary(rows)["changed"] == 0


def test_readme_quotes_the_rejudgement_of_what_it_records():
    """README's sentence on the binding rule is the script's summary of README's own recorded results (one source),
    and every difference the script reads is still stated there."""
    from pathlib import Path
    R = _rejudge_module()
    text = R.section((Path(__file__).resolve().parents[1] / "README.md").read_text())
    recorded = R.parse_recorded(text)
    assert sorted(recorded) == sorted(R.RECORDED)
    rows = R.rejudge(R.current_cases(), R.parse_counts(text), recorded, V.load_lock())
    assert R.summary_line(R.summary(rows)) in text
