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
