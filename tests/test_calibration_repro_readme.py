"""README and the calibration files agree (issue 37 item 6): the threshold table of "Validity on real footage" is
read against the files it quotes. Each row's value, pair counts and held-out false-merge / false-split rates are
recomputed from face_calibration.json, identity_calibration.json and link_calibration.json with the functions
``bench validate`` prints them with (core/face_calibration.py ``threshold_rows``, narrativetrack/validity.py
``link_rows``), and the README cell must state each of them (to the digits it prints). The sections' own quotes of
the face thresholds are checked by tests/test_readme.py. Fast: no footage."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench_assets.core import face_calibration as FC

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
NT = ROOT / "bench_assets" / "narrativetrack"
FILES = {"nt": NT / "face_calibration.json", "mbench": ROOT / "bench_assets" / "mbench" / "identity_calibration.json",
         "links": NT / "link_calibration.json"}
NUMBER = re.compile(r"(?<![\w.])(\d*\.\d+|\d+)(?![\w])")


def numbers(cell: str) -> list[tuple[float, int]]:
    """Pure: the numbers a cell states, each with its count of decimals."""
    return [(float(m), len(m.split(".")[1]) if "." in m else 0) for m in NUMBER.findall(cell)]


def states(cell: str, value: float) -> bool:
    """Pure: whether ``cell`` states ``value`` to the digits it prints (a rate of 0 may be printed as 0)."""
    return any(abs(n - value) <= 0.5 * 10 ** -d + 1e-12 for n, d in numbers(cell))


def table_rows(text: str) -> list[list[str]]:
    sec = text.split("## Validity on real footage", 1)[1].split("\n## ", 1)[0]
    head = sec.index("| threshold | value (was) |")
    rows = []
    for line in sec[head:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def expected_rows() -> list[tuple[str, str, list[float], list[float], float, float]]:
    """(row anchor in the first cell or '' for a continuation row, the pairs cell's anchor, the value cells'
    numbers, the pair counts, false-merge rate, false-split rate), in the README's order, from the files."""
    from bench_assets.narrativetrack import validity as NV
    out = []
    for key, name in (("nt", "NarrativeTrack `FACE_MERGE_COSINE`"), ("mbench", "MBench identity")):
        doc = json.loads(FILES[key].read_text())
        rows = {r["threshold"].split("[")[1].rstrip("]"): r for r in FC.threshold_rows(doc, key)}
        for kind, first, anchor in (("real", name, "real:"), ("animated", "", "animated"),
                                    ("drawn cal", "", "drawn calibration")):
            r = rows[kind]
            extra = []
            if kind == "drawn cal":
                b = doc["drawn_calibration"]["best_youden"]
                extra = [b["j"], b["threshold"]]
            out.append((first, anchor, [r["value"]] if first else [], [r["n_same"], r["n_different"], *extra],
                        r["false_merge_rate"], r["false_split_rate"]))
    links = NV.link_rows(json.loads(FILES["links"].read_text()))
    for r, name in zip(links, ("torso colour", "ReID cosine (offline", "tracklet clustering")):
        out.append((name, "", [r["value"]], [r["n_same"], r["n_different"]], r["false_merge_rate"],
                    r["false_split_rate"]))
    return out


def problems(text: str) -> list[str]:
    rows, bad, k = table_rows(text), [], 0
    for first, anchor, values, counts, fm, fs in expected_rows():
        while k < len(rows) and not ((first and first in rows[k][0]) or (not first and not rows[k][0]
                                                                        and anchor in rows[k][2])):
            k += 1
        if k == len(rows):
            bad.append(f"no README threshold row for {first or anchor}")
            k = 0
            continue
        cells = rows[k]
        what = first or f"{anchor} ({cells[2][:30]})"
        bad += [f"{what}: value {v} not stated in {cells[1]!r}" for v in values if not states(cells[1], v)]
        bad += [f"{what}: {c} not stated in {cells[2]!r}" for c in counts if not states(cells[2], c)]
        for label, rate, cell in (("false-merge rate", fm, cells[3]), ("false-split rate", fs, cells[4])):
            if rate is not None and not states(cell, rate):
                bad.append(f"{what}: {label} {rate} not stated in {cell!r}")
        k += 1
    return bad


def test_readme_threshold_table_states_what_the_calibration_files_hold():
    bad = problems(README.read_text(encoding="utf-8"))
    assert not bad, bad


@pytest.mark.parametrize("old,new", [
    ("| .4499 (.4154) |", "| .4600 (.4154) |"),                      # a refit the README did not follow
    ("real: 11 same / 34 different", "real: 12 same / 34 different"),  # a count
    ("191 | .246 | .081 |", "191 | .246 | .091 |"),                    # a held-out rate
    ("| .7311 (per file) |", "| .7411 (per file) |"),                  # a link threshold
])
def test_the_check_catches_a_stale_number(old, new):
    text = README.read_text(encoding="utf-8")
    assert old in text
    assert problems(text.replace(old, new, 1))


def test_numbers_reads_cells_as_printed():
    assert numbers("real: 11 same / 34 different") == [(11.0, 0), (34.0, 0)]
    assert states(".25 (1 of 4: the dialogue's woman vs man, .805)", 0.25)
    assert not states(".272", 0.2723 + 0.001) and states(".272", 0.2723) and states("0", 0.0)
