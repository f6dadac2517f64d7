"""The common board (core/metric_spec.BOARD_COLUMNS) as text: the CLI's table and the leaderboard asset's UI
metadata use the same cells and marks, so a substitute or an addition reads the same wherever it is read.

Cell marks: ``0.812*`` an offline substitute produced the value (the legend names it); ``+`` an addition (a
construct of this project, not the paper's metric); ``[75%]`` coverage below 100%; ``(ef16)`` 16 evaluator
failures (judge outage, missing weights, replay miss), kept apart from the generator's; ``!`` not comparable
(partitions scored under different protocols); ``^`` the paper's definition, which differs on purpose from the
reference code (the legend says how); ``~`` ungated (judge off: the fidelity gate not applied) and ``?`` gate
unknown (a fidelity question failed); ``{2/3ep}`` the value is the mean of 2 of 3 episodes (a board whose detail has
``n_episodes_evaluated`` / ``n_episodes_total``: EntityBench's, the authors' aggregate, None excluded). A row whose
detail has ``eq23_value`` keeps the paper text's Eq. 23-25 value there, an addition the legend names
(``eq23_reference``). A generator whose files were read with decode warnings gets a WARNING line."""
from __future__ import annotations

import json
from typing import Any, Optional

import pandas as pd

from bench_assets.core.metric_spec import GATE_UNKNOWN_STATE, PAPER_DEFINITION, UNGATED_STATE, split_substitutes


def _present(v: Any) -> bool:
    return v is not None and v is not pd.NA and not (isinstance(v, float) and pd.isna(v)) and str(v) != ""


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


def _flag(v: Any) -> bool:
    return _present(v) and str(v).lower() not in ("false", "0")


def _detail(v: Any) -> dict:
    if isinstance(v, dict):
        return v
    try:
        d = json.loads(v) if _present(v) else {}
    except (TypeError, ValueError):
        return {}
    return d if isinstance(d, dict) else {}


def episodes(detail: Any) -> Optional[tuple[int, int]]:
    """(episodes with a value, episodes) of a row whose detail carries the authors' counts, else None."""
    d = _detail(detail)
    if d.get("n_episodes_evaluated") is None or d.get("n_episodes_total") is None:
        return None
    return int(d["n_episodes_evaluated"]), int(d["n_episodes_total"])


def detail_notes(detail: Any) -> list[str]:
    """What a row's detail says beside its value, in words (the site's cell tooltip): the episodes the value
    averages, and the paper text's Eq. 23-25 value under its addition id."""
    d, out = _detail(detail), []
    ep = episodes(d)
    if ep is not None:
        out.append(f"mean of {ep[0]} of {ep[1]} episodes with a value ({d.get('aggregation_reference') or '?'}; "
                   f"None excluded)")
    if "eq23_value" in d:
        v = d["eq23_value"]
        out.append(f"+^ {d.get('eq23_reference') or 'Eq. 23-25'}: eq23_value "
                   f"{'None' if v is None else f'{float(v):.3f}'} (coverage policy {d.get('eq23_policy')})")
    return out


def select(board: pd.DataFrame, headline: Optional[dict] = None) -> pd.DataFrame:
    """The rows of one view (e.g. ``{"slice": "all"}``); a key the board lacks is ignored."""
    head = board
    for col, val in (headline or {}).items():
        if col in head.columns:
            head = head[head[col] == val]
    return head.reset_index(drop=True)


def cells(head: pd.DataFrame, digits: int = 3) -> tuple[list[str], dict[str, bool]]:
    """One text cell per row with its marks, and which marks were used (for the legend)."""
    used = {"substitute": False, "addition": False, "coverage": False, "evaluator": False, "comparable": False,
            "definition": False, "ungated": False, "gate_unknown": False, "episodes": False}
    out = []
    for _, r in head.iterrows():
        v = pd.to_numeric(r.get("value"), errors="coerce")
        text = "None" if pd.isna(v) else f"{float(v):.{digits}f}"
        if not pd.isna(v) and _present(r.get("substitute")):
            text += "*"
            used["substitute"] = True
        if _flag(r.get("addition")):
            text += "+"
            used["addition"] = True
        if _present(r.get("definition")):
            text += "^"
            used["definition"] = True
        gates = str(r.get("gate")).split("+") if _present(r.get("gate")) else []
        if UNGATED_STATE in gates:
            text += "~"
            used["ungated"] = True
        if GATE_UNKNOWN_STATE in gates:
            text += "?"
            used["gate_unknown"] = True
        if _present(r.get("comparable")) and not _flag(r.get("comparable")):
            text += "!"
            used["comparable"] = True
        c = pd.to_numeric(r.get("coverage"), errors="coerce")
        if not pd.isna(v) and not pd.isna(c) and c < 0.995:
            text += f"[{c:.0%}]"
            used["coverage"] = True
        ep = episodes(r.get("detail"))
        if not pd.isna(v) and ep is not None and ep[0] < ep[1]:
            text += f"{{{ep[0]}/{ep[1]}ep}}"
            used["episodes"] = True
        ef = pd.to_numeric(r.get("n_failed_evaluator"), errors="coerce")
        if not pd.isna(ef) and ef > 0:
            text += f"(ef{int(ef)})"
            used["evaluator"] = True
        out.append(text)
    return out, used


def legend(head: pd.DataFrame, used: dict[str, bool]) -> list[str]:
    lines = []
    behind: dict[str, set] = {}
    for _, r in head.iterrows():
        if _present(r.get("substitute")) and not pd.isna(pd.to_numeric(r.get("value"), errors="coerce")):
            for part in split_substitutes(r["substitute"]):
                behind.setdefault(part, set()).add(r["metric_id"])
    if behind:
        lines.append("* an offline substitute produced the value:")
        for part, mids in sorted(behind.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            mids = sorted(mids)
            lines.append(f"    {part} ({_n(len(mids), 'metric')}: {', '.join(mids[:4])}"
                         f"{', ...' if len(mids) > 4 else ''})")
    if used.get("addition"):
        lines.append("+ an addition of this platform, not the paper's metric (never in a paper average)")
    if used.get("definition"):
        lines.append("^ the paper's definition, kept on purpose where it differs from the reference code:")
        defs = head.loc[head["definition"].map(_present), ["metric_id", "definition"]].drop_duplicates("metric_id")
        for mid, d in sorted(zip(defs["metric_id"], defs["definition"])):
            lines.append(f"    {mid}: {str(d).removeprefix(PAPER_DEFINITION)}")
    if used.get("ungated"):
        lines.append("~ ungated: judge off, the fidelity gate not applied (not the paper's gated value; never "
                     "comparable with gated rows)")
    if used.get("gate_unknown"):
        lines.append("? gate unknown: a fidelity question failed; not scored until the judge answers (the "
                     "evaluator's failure, retried)")
    if used.get("coverage"):
        lines.append("[NN%] coverage below 100% (evaluated / what the metric should have read)")
    if used.get("episodes"):
        lines.append("{n/Nep} the value is the mean of the n of N episodes with a value (None excluded)")
    details = [_detail(d) for d in head["detail"]] if "detail" in head else []
    refs = sorted({str(d.get("eq23_reference")) for d in details if "eq23_value" in d})
    if refs:
        agg = sorted({str(d.get("aggregation_reference")) for d in details if "eq23_value" in d})
        lines.append(f"value: {' / '.join(agg)}, the mean over the episodes with a value (None excluded); "
                     f"an addition, {' / '.join(refs)}: the paper text's Eq. 23-25 (instance-weighted, coverage "
                     f"policy applied, an undelivered shot a zero) is each row's detail eq23_value (--json)")
    if used.get("evaluator"):
        lines.append("(efN) N evaluator failures (judge outage, missing weights, replay miss), not the generator's")
    if used.get("comparable"):
        lines.append("! not comparable: partitions scored under different protocols")
    return lines


def pivot(head: pd.DataFrame, texts: list[str]) -> pd.DataFrame:
    h = head.assign(cell=texts)
    return h.pivot_table(index="metric_id", columns="generator", values="cell", aggfunc="first").fillna("-")


def format_board(board: pd.DataFrame, headline: Optional[dict] = None, benchmark: str = "") -> str:
    """The leaderboard as the CLI prints it: metric x generator, each cell the value with its marks, then a legend
    and a coverage / evaluator-failure line per generator. Pure (a frame in, text out). ``benchmark``: the name the
    caller gives the board (only the empty board's line says it)."""
    head = select(board, headline)
    if head.empty or not {"metric_id", "generator", "value"} <= set(head.columns):
        return f"({benchmark + ' ' if benchmark else ''}leaderboard is empty)"
    texts, used = cells(head)
    with pd.option_context("display.width", 250, "display.max_rows", 500, "display.max_columns", 50):
        lines = [pivot(head, texts).to_string()]
    notes = legend(head, used)
    cov = pd.to_numeric(head.get("coverage"), errors="coerce") if "coverage" in head else \
        pd.Series(float("nan"), index=head.index)
    ef = pd.to_numeric(head["n_failed_evaluator"], errors="coerce").fillna(0).astype(int) \
        if "n_failed_evaluator" in head else pd.Series(0, index=head.index)
    ne = pd.to_numeric(head["n_not_evaluated"], errors="coerce").fillna(0).astype(int) \
        if "n_not_evaluated" in head else pd.Series(0, index=head.index)
    for gen, part in head.groupby("generator", sort=True):
        vals = pd.to_numeric(part["value"], errors="coerce")
        c = cov.loc[part.index][vals.notna()].dropna()
        line = f"{gen}: {int(vals.notna().sum())}/{len(part)} metrics with a value"
        if len(c):
            low = c.idxmin()
            line += f", coverage mean {c.mean():.0%}"
            if c.min() < 0.995:
                line += f" (lowest {head.at[low, 'metric_id']} {c.min():.0%})"
        if "reason" in part.columns and vals.isna().any():
            # the commonest reason a cell is None, once (the audit pages and `--json` have every reason)
            why = part.loc[vals.isna(), "reason"].dropna().astype(str)
            if len(why):
                top, n = why.value_counts().index[0], int(why.value_counts().iloc[0])
                line += f"; None mostly because: {top[:70]}{'...' if len(top) > 70 else ''} ({n})"
        n_ne = int(ne.loc[part.index].sum())
        if n_ne:  # by choice (judge off, a slot the profile lacks): not the evaluator's failure, nothing to retry
            hit = sorted(part.loc[ne.loc[part.index] > 0, "metric_id"])
            line += f"; not evaluated (by choice) {n_ne} in {_n(len(hit), 'metric')} ({', '.join(hit[:3])}" \
                    f"{', ...' if len(hit) > 3 else ''})"
        n_ef = int(ef.loc[part.index].sum())
        if n_ef:
            hit = sorted(part.loc[ef.loc[part.index] > 0, "metric_id"])
            line += f"; evaluator failures {n_ef} in {_n(len(hit), 'metric')} ({', '.join(hit[:3])}" \
                    f"{', ...' if len(hit) > 3 else ''})"
        notes.append(line)
    notes += decode_warning_lines(head)
    return "\n".join(lines + [""] + notes)


def decode_warnings(head: pd.DataFrame) -> dict[str, int]:
    """generator -> files read with decode warnings (the board's ``n_decode_warnings``, the same on every row of a
    generator; the largest is taken should rows disagree)."""
    if "n_decode_warnings" not in head or not len(head):
        return {}
    n = pd.to_numeric(head["n_decode_warnings"], errors="coerce").fillna(0).astype(int)
    return {str(g): int(k) for g, k in n.groupby(head["generator"]).max().items() if k > 0}


def decode_warning_lines(head: pd.DataFrame) -> list[str]:
    """One WARNING line per generator with files read with decode warnings (none when there are none)."""
    return [f"WARNING {g}: {_n(k, 'file')} read with decode warnings (cut short, frames lost or concealed, a wrong "
            f"rate header); the values stand on what was decoded: see the run's warnings"
            for g, k in sorted(decode_warnings(head).items())]


def board_markdown(board: pd.DataFrame, headline: Optional[dict] = None, digits: int = 3) -> str:
    """The main view as a Markdown table with the same marks and legend (a leaderboard asset's UI metadata)."""
    head = select(board, headline)
    if head.empty:
        return "empty"
    texts, used = cells(head, digits)
    notes = legend(head, used) + decode_warning_lines(head)
    md = pivot(head, texts).to_markdown()
    return md + ("\n\n" + "\n\n".join(n.strip() for n in notes) if notes else "")
