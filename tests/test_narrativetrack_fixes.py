"""NarrativeTrack issue-15 fixes, pure parts: the lenient parser and the article "a", both denominators."""
import pandas as pd
import pytest

from bench_assets.narrativetrack import metrics as M
from bench_assets.narrativetrack import scoring as SC


@pytest.mark.parametrize("raw,fmt,want", [
    ("A man first does (c), then (b), then (a).", "ordering", "c, b, a"),
    ("A man does c, then b, then a", "ordering", "c, b, a"),
    ("b then a then c", "ordering", "b, a, c"),
    ("first c, then a, and b last", "ordering", "c, a, b"),
    ("The answer is a man in red", "mc", None),
    ("A woman walks in. Answer: (c)", "mc", "c"),
    ("The answer is B because she returns.", "mc", "b"),
    ("the answer is a", "mc", "a"),
])
def test_lenient_parser_never_reads_the_article_as_option_a(raw, fmt, want):
    assert SC.lenient_parse(raw, fmt) == want


def test_both_denominators_with_n_failed():
    df = pd.DataFrame({"dimension": ["AC"] * 5, "format": ["binary"] * 5, "direction": ["start_to_later"] * 5,
                       "track_type": ["reappear"] * 5, "distractor": ["none"] * 5,
                       "status": ["ok", "ok", "ok", "failed", "skipped"], "strict": [True, True, False, None, None],
                       "lenient": [True, True, True, None, None], "reason": [None, None, None, "HTTP 500", "off"]})
    rows = {(r["mode"], r["metric_id"]): r for r in M.accuracy_table(df)}
    avg = rows[("strict", "accuracy.avg")]
    assert avg["value"] == pytest.approx(200 / 3) and avg["value_failed_wrong"] == pytest.approx(50.0)
    assert (avg["n_eval"], avg["n_failed"], avg["n_skipped"]) == (3, 1, 1)
    assert rows[("lenient", "accuracy.avg")]["value_failed_wrong"] == pytest.approx(75.0)
    none = M.accuracy_table(df.assign(status="skipped"))[0]
    assert none["value"] is None and none["value_failed_wrong"] is None
