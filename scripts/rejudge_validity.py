#!/usr/bin/env python3
"""Re-judge the recorded validity results under the binding-margin rule (issue 37 item 5), without re-running them.

    python scripts/rejudge_validity.py [--readme README.md]

``bench validate`` (real footage, minutes per benchmark) stores its table only in the store it ran against; what the
repository keeps of the last held-out run is README's section "Validity on real footage": per benchmark its counts
(``EntityBench 14 pass, 0 fail, 2 cannot run (...)``), judged under the former rule (a stated margin *or* |d| >= 1
passed a direction row), and the difference of a few single rows in its prose. This script reads that section (the
numbers have one source) and each expectation's direction, margin and documented limitation from the benchmarks'
``CASES`` (what ``validity_cases.json`` freezes), and prints per row: the former verdict -> the verdict under the
binding rule (``core.validity.judge_expectation``), or ``cannot re-judge: <why>``.

What can be re-judged without the unit values: the binding rule passes a subset of what the former rule passed (it
only dropped "or |d| >= 1" for rows that state a margin), so a former FAIL, LIMIT or "cannot run" keeps its verdict;
an invariance row or a row without a margin is judged as before; a former PASS with a margin keeps it only if its
recorded difference meets the margin, and without a recorded difference it cannot be re-judged.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_assets.core import validity as V  # noqa: E402

SECTION = "## Validity on real footage"
NAMES = {"EntityBench": "entitybench", "ViStoryBench": "vistorybench", "LoCoT2V": "locot2v", "MBench": "mbench",
         "NarrativeTrack": "narrativetrack"}
# the README names a metric that cannot run by its model or its words; these are the metric ids it means
CANNOT_RUN_NAMES = {"imaging quality": ("imaging_quality",), "aesthetics": ("aesthetics",), "CSD": ("csd_cross",),
                    "DOVER": ("technical_quality",), "aesthetic v2.5": ("aesthetic_quality",)}
_NUM = r"[-+]?\d*\.\d+"
# (benchmark, case, row id as validity_rows names it) -> where the section states that row's difference; each is
# anchored on the case's name so a sentence about another case cannot match
RECORDED = {
    ("locot2v", "shuffled_events", "inter_event_subject_face_identity [^vdialogue(/|$)]"):
        rf"`shuffled_events` \(.*?the face-identity addition (?P<diff>{_NUM})",
    ("locot2v", "shuffled_events", "inter_event_subject_consistency [^vdialogue(/|$)]"):
        rf"`shuffled_events` \(.*?the paper's crop metric (?P<diff>{_NUM})",
    ("mbench", "changed_world", "identity"):
        rf"the paper's centroid `identity` on the dialogue swap moves (?P<diff>{_NUM})",
    ("mbench", "changed_world", "identity_first_appearance"):
        rf"`changed_world@v\d+`.*?the `identity_first_appearance` addition \((?P<diff>{_NUM})\)",
    ("mbench", "within_track_drift", "identity [^v_drift_]"):
        rf"`within_track_drift@v\d+`.*?`identity` {_NUM} -> {_NUM} \((?P<diff>{_NUM})",
    ("mbench", "within_track_drift", "identity_first_appearance [^v_drift_]"):
        rf"`within_track_drift@v\d+`.*?`identity_first_appearance` {_NUM} -> {_NUM} \((?P<diff>{_NUM})\)",
}


@dataclass
class Counts:
    passed: int
    failed: int
    cannot: int = 0
    limit: int = 0
    cannot_names: tuple = ()

    def text(self) -> str:
        return (f"{self.passed} pass, {self.failed} fail" + (f", {self.cannot} cannot run" if self.cannot else "")
                + (f", {self.limit} LIMIT" if self.limit else ""))


@dataclass
class Recorded:
    diff: float
    text: str                     # as written (its decimals say how finely it was rounded)

    @property
    def half_step(self) -> float:
        decimals = len(self.text.split(".")[1]) if "." in self.text else 0
        return 0.5 * 10 ** -decimals


def section(readme: str) -> str:
    """The README section, whitespace collapsed (the prose wraps lines anywhere)."""
    start = readme.index(SECTION)
    end = readme.find("\n## ", start + len(SECTION))
    return " ".join(readme[start:end if end >= 0 else None].split())


def parse_counts(text: str) -> dict[str, Counts]:
    """Each benchmark's first held-out count in the section (``<Name> P pass, F fail[, N cannot run|LIMIT] (...)``)."""
    pat = re.compile(r"\b(" + "|".join(NAMES) + r") (\d+) pass, (\d+) fail(?:, (\d+) (cannot run|LIMIT))?"
                     r"(?: \(([^()]*)\))?")
    out: dict[str, Counts] = {}
    for m in pat.finditer(text):
        bench = NAMES[m.group(1)]
        if bench in out:
            continue
        n, kind = int(m.group(4) or 0), m.group(5)
        names = tuple(p.split(":")[0].strip() for p in (m.group(6) or "").split(",") if p.strip()) \
            if kind == "cannot run" else ()
        out[bench] = Counts(int(m.group(2)), int(m.group(3)), n if kind == "cannot run" else 0,
                            n if kind == "LIMIT" else 0, names)
    return out


def parse_recorded(text: str, patterns: Mapping = RECORDED) -> dict[tuple, Recorded]:
    out = {}
    for key, pat in patterns.items():
        m = re.search(pat, text)
        if m:
            out[key] = Recorded(float(m.group("diff")), m.group("diff"))
    return out


def row_id(exp: V.Expect) -> str:
    return exp.metric_id + (f" [{exp.units}]" if exp.units else "")


def former_verdicts(rows: Sequence[tuple[str, V.Expect]], counts: Optional[Counts]) -> tuple[list, str]:
    """Per row its verdict under the former rule where the counts attribute one to every row (no failure, the rows
    that cannot run named), else None per row, with the counts as words."""
    if counts is None:
        return [None] * len(rows), "the section records no held-out count for this benchmark"
    ids = {i for n in counts.cannot_names for i in CANNOT_RUN_NAMES.get(n, ())}
    na = [i for i, (_, e) in enumerate(rows) if e.metric_id in ids]
    lim = [i for i, (_, e) in enumerate(rows) if e.limitation and i not in na]
    words = f"one of {counts.text()}, recorded for the benchmark, not per row"
    if counts.failed or len(na) != counts.cannot or counts.limit not in (0, len(lim)):
        return [None] * len(rows), words
    got = ["n/a" if i in na else "LIMIT" if i in lim and counts.limit else "PASS" for i in range(len(rows))]
    if got.count("PASS") != counts.passed:
        return [None] * len(rows), words
    return got, ""


def binding_verdict(exp: V.Expect, rec: Recorded) -> Optional[str]:
    """The verdict of a recorded difference under the binding rule, through the rule itself (one unit a side: d is
    undefined, the margin judges); None where the difference as rounded could fall on either side of the margin."""
    if exp.margin is not None and abs(abs(rec.diff) - exp.margin) <= rec.half_step:
        return None
    out = V.judge_expectation(exp, [0.0], [rec.diff], paired=False)
    return V.verdict({"passed": out["passed"], "limitation": exp.limitation})


def rejudge(cases: Mapping[str, Sequence[V.Case]], counts: Mapping[str, Counts],
            recorded: Mapping[tuple, Recorded], lock: Optional[dict] = None) -> list[dict]:
    """One dict per (benchmark, case, expectation): former and binding verdicts ("?": the counts do not attribute
    one to the row; binding None: cannot re-judge) and why."""
    lock = lock or {}
    out = []
    for bench, bench_cases in cases.items():
        rows = [(c, e) for c in bench_cases for e in c.expectations]
        former, words = former_verdicts([(c.case_id, e) for c, e in rows], counts.get(bench))
        for (case, exp), old in zip(rows, former):
            rid = row_id(exp)
            rec = recorded.get((bench, case.case_id, rid))
            version = lock.get(f"{bench}/{case.case_id}", {}).get("version")
            row = {"benchmark": bench, "case": case.case_id + (f"@v{version}" if version else ""), "metric": rid,
                   "direction": exp.direction, "margin": exp.margin, "recorded": rec.text if rec else None,
                   "former": old or "?", "binding": None, "why": ""}
            if exp.direction == 0 or exp.margin is None:
                # the rule did not change here: an invariance tolerance always bound, and d still decides alone
                row["binding"] = row["former"]   # "?" stays "?": unchanged, whatever it was
                row["why"] = ("unchanged: invariance, its tolerance always bound" if exp.direction == 0
                              else "unchanged: no margin stated, d decides as before")
                if old is None:
                    row["why"] += f"; its verdict is {words}"
            elif rec is not None:
                row["binding"] = binding_verdict(exp, rec)
                row["why"] = (f"recorded difference {rec.text}, margin {exp.margin:g}" if row["binding"] else
                              f"cannot re-judge: the recorded difference {rec.text} rounds to the margin "
                              f"{exp.margin:g}")
            elif old in ("FAIL", "LIMIT", "n/a"):
                row["binding"] = old
                row["why"] = ("unchanged: it could not run, no value to judge" if old == "n/a" else
                              "unchanged: the binding rule passes only rows the former rule passed")
            elif old == "PASS":
                row["why"] = (f"cannot re-judge: a former PASS (margin or |d| >= 1) with no recorded difference; "
                              f"the binding rule needs |difference| >= {exp.margin:g}")
            else:
                row["why"] = f"cannot re-judge: no recorded difference, and its former verdict is {words}"
            out.append(row)
    return out


def summary(rows: Sequence[dict]) -> dict:
    """How many rows change verdict, keep it, and cannot be re-judged (for the README's sentence)."""
    changed = [r for r in rows if "?" not in (r["former"], r["binding"]) and r["binding"] not in (None, r["former"])]
    kept = [r for r in rows if r["binding"] and r["binding"] == r["former"]]
    unknown = [r for r in rows if r["binding"] is None]
    unconfirmed = [r["benchmark"] for r in unknown if r["former"] == "PASS" and not r["recorded"]]
    return {"rows": len(rows), "changed": len(changed), "kept": len(kept),
            "re_judged_from_differences": sum(1 for r in rows if r["recorded"] and r["binding"]),
            "cannot_re_judge": len(unknown), "unconfirmed_passes": len(unconfirmed),
            "unconfirmed_by_benchmark": {b: unconfirmed.count(b) for b in dict.fromkeys(unconfirmed)}}


def current_cases() -> dict[str, list[V.Case]]:
    from freeze_validity_cases import BENCHMARKS, current_cases as flat
    cases = flat()
    return {b: [c for k, c in cases.items() if k.split("/", 1)[0] == b] for b in BENCHMARKS}


def format_rows(rows: Sequence[dict]) -> str:
    lines = [f"{'benchmark':14s} {'case':27s} {'metric':44s} {'exp':>3s} {'margin':>6s} {'recorded':>8s}  "
             f"former -> binding"]
    for r in rows:
        exp = {-1: "-", 1: "+", 0: "="}[r["direction"]]
        margin = "-" if r["margin"] is None else f"{r['margin']:g}"
        verdict = f"{r['former']} -> {r['binding']}" if r["binding"] else f"{r['former']} -> ?"
        lines.append(f"{r['benchmark']:14s} {r['case']:27s} {r['metric'][:44]:44s} {exp:>3s} {margin:>6s} "
                     f"{r['recorded'] or '-':>8s}  {verdict}  ({r['why']})")
    return "\n".join(lines)


def summary_line(s: Mapping) -> str:
    """The sentence README quotes (tests/test_validity_binding.py reads it there)."""
    names = {v: k for k, v in NAMES.items()}
    by = ", ".join(f"{names.get(b, b)} {n}" for b, n in s["unconfirmed_by_benchmark"].items())
    return (f"{s['changed']} of {s['rows']} rows change verdict, {s['re_judged_from_differences']} are re-judged "
            f"from the differences recorded here, and {s['unconfirmed_passes']} passes under the former rule state a "
            f"margin but record no difference" + (f" ({by})" if by else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    a = ap.parse_args(argv)
    text = section(a.readme.read_text())
    rows = rejudge(current_cases(), parse_counts(text), parse_recorded(text), V.load_lock())
    print(format_rows(rows))
    missing = [k for k in RECORDED if k not in parse_recorded(text)]
    for k in missing:
        print(f"note: the section no longer states the difference of {'/'.join(k)}")
    s = summary(rows)
    print(f"{s['rows']} rows: {s['changed']} change verdict, {s['kept']} keep it, {s['cannot_re_judge']} cannot be "
          f"re-judged ({s['unconfirmed_passes']} of them former passes with a margin and no recorded difference)")
    print(summary_line(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
