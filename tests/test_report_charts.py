"""Chart legends: every entry has room for its label, and every legend row lies inside the SVG."""
import re

from bench_assets.core import report as R


def _legend_rects(svg: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="10" height="10"', svg)]


def test_line_chart_legend_rows_fit_and_do_not_overlap():
    names = [f"narrativetrack_answerer_{i}" for i in range(7)]        # 24+ characters each
    svg = R.line_chart_svg(["1", "2"], {n: [(0.5, 3), (0.6, 2)] for n in names}, [], title="t", width=520)
    height = float(re.search(r'height="(\d+)"', svg).group(1))
    rects = _legend_rects(svg)
    assert len(rects) == len(names)
    assert all(y + 10 <= height for _, y in rects)
    rows = {}
    for x, y in rects:
        rows.setdefault(y, []).append(x)
    for xs in rows.values():
        xs.sort()
        assert all(b - a >= 14 + 6.6 * 24 for a, b in zip(xs, xs[1:])), xs


def test_bar_chart_writes_a_substitute_mark_beside_the_value_and_none_without_a_bar():
    rows = [{"label": "cs_face", "series": "g1", "value": 0.81, "coverage": 0.5, "mark": "*",
             "note": "substitute: image_embedder: EfficientNet-Lite0"},
            {"label": "cs_face", "series": "g2", "value": 0.7, "coverage": 1.0},
            {"label": "cs_face", "series": "g3", "value": None, "note": "output folder is missing"}]
    svg = R.bar_chart_svg(rows, ["g1", "g2", "g3"], title="t", scale=(0.0, 1.0))
    values = re.findall(r'class="val">([^<]*)</text>', svg)
    assert values == ["0.810* (50%)", "0.700 (100%)"]  # the mark on the substituted bar only
    assert "substitute: image_embedder: EfficientNet-Lite0" in svg  # the model, in the bar's tooltip
    bars = re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="8" fill=', svg)
    assert len(bars) == 2 and ">None</text>" in svg and "output folder is missing" in svg


def test_site_family_charts_keep_the_declared_scale_and_split_families():
    """core/site.family_charts draws one chart per spec family on the spec's scale (a [0,100] metric next to
    [0,1] ones gets its own axis), never a guessed one."""
    import pandas as pd

    from bench_assets.core.site import family_charts
    part = pd.DataFrame([
        {"generator": "g", "metric_id": "a", "family": "F", "value": 0.5, "coverage": 1.0, "reason": None,
         "spec_scale": (0.0, 1.0), "substitute": None, "addition": False},
        {"generator": "g", "metric_id": "b", "family": "F", "value": 50.0, "coverage": 1.0, "reason": None,
         "spec_scale": (0.0, 100.0), "substitute": None, "addition": False},
        {"generator": "g", "metric_id": "c", "family": "G", "value": 0.2, "coverage": 1.0, "reason": None,
         "spec_scale": (0.0, 4.0), "substitute": None, "addition": False}])
    charts = family_charts(part, ["g"], {"G": 0, "F": 1})
    titles = [re.search(r"<title>([^<]*)</title>", c).group(1) for c in charts]
    assert titles == ["G", "F (0-1)", "F (0-100)"]          # the specs' family order, split by declared scale
    assert 'text-anchor="middle">4.00</text>' in charts[0]  # G's axis ends at its declared 4, not at 1
