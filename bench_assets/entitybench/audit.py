"""Audit pages (headline -> per episode -> per instance -> crops, frames, judge answers) and the gap-decay plot."""
from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Optional

import pandas as pd
from jinja2 import Environment, FileSystemLoader, select_autoescape

from bench_assets.core.report import TEMPLATES
from bench_assets.entitybench import judging as J


def audit_filename(metric_id: str, generator: str) -> str:
    return f"{metric_id}__{generator}.html"


def _none(v):
    return None if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NA else v


def render_audit(*, metric_id: str, generator: str, headline: dict, episodes: pd.DataFrame,
                 instances: pd.DataFrame, artifact_path, out_dir: Path, back: str = "../entitybench.html",
                 item_label: str = "episode") -> Path:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]))
    out_dir.mkdir(parents=True, exist_ok=True)
    by_item: dict[str, list[dict]] = {}
    for r in instances.sort_values(["item", "shot", "entity_id"], na_position="first").to_dict("records"):
        r = {k: _none(v) for k, v in r.items()}
        r["crop_src"] = os.path.relpath(artifact_path(r["crop_id"]), out_dir) if r.get("crop_id") else None
        if r.get("detail"):
            r["detail"] = json.dumps(json.loads(r["detail"]), indent=1, sort_keys=True)
        by_item.setdefault(r["item"], []).append(r)
    fmt = lambda v: "None" if _none(v) is None else f"{v:.3f}"  # noqa: E731
    html = env.get_template("audit.html.j2").render(
        metric=metric_id, generator=generator, back=back, item_label=item_label,
        headline=fmt(headline.get("value")), raw=fmt(headline.get("raw_mean")), coverage=fmt(headline.get("coverage")),
        n_eval=headline.get("n_eval"), n_failed=headline.get("n_failed"), n_skipped=headline.get("n_skipped"),
        episodes=[{k: _none(v) for k, v in r.items()} for r in episodes.to_dict("records")], instances=by_item)
    path = out_dir / audit_filename(metric_id, generator)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, path)
    return path


def gap_decay_table(dino_pairs: pd.DataFrame, llm_pairs: pd.DataFrame) -> pd.DataFrame:
    """Mean and pair count per (generator, signal, bin); bins in the paper's order."""
    frames = []
    for signal, df in (("dino_cosine", dino_pairs), ("llm_sim", llm_pairs)):
        if df is None or df.empty:
            continue
        d = df.dropna(subset=["value"]).copy()
        d["gap_bin"] = [json.loads(x).get("gap_bin") if isinstance(x, str) else None for x in d["detail"]]
        d = d.dropna(subset=["gap_bin"])
        g = d.groupby(["generator", "gap_bin"])["value"].agg(["mean", "count"]).reset_index()
        g["signal"] = signal
        frames.append(g)
    if not frames:
        return pd.DataFrame(columns=["generator", "signal", "gap_bin", "mean", "pairs"])
    out = pd.concat(frames).rename(columns={"count": "pairs"})
    order = {f"{lo}-{hi}": i for i, (lo, hi) in enumerate(J.GAP_BINS)}
    out["bin_order"] = out["gap_bin"].map(order)
    return out.sort_values(["signal", "generator", "bin_order"]).drop(columns="bin_order").reset_index(drop=True)


def gap_decay_plot(table: pd.DataFrame) -> Optional[bytes]:
    """PNG: one line per generator per signal over the gap bins, pair counts written at each point."""
    if table.empty:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    bins = [f"{lo}-{hi}" for lo, hi in J.GAP_BINS]
    signals = sorted(table["signal"].unique())
    fig, axes = plt.subplots(1, len(signals), figsize=(6 * len(signals), 4), squeeze=False)
    for ax, signal in zip(axes[0], signals):
        part = table[table.signal == signal]
        for gen, g in part.groupby("generator"):
            xs = [bins.index(b) for b in g["gap_bin"]]
            ax.plot(xs, g["mean"], marker="o", label=gen)
            for x, y, n in zip(xs, g["mean"], g["pairs"]):
                ax.annotate(f"n={n}", (x, y), textcoords="offset points", xytext=(0, 6), fontsize=7, ha="center")
        ax.set_xticks(range(len(bins)), bins)
        ax.set_xlabel("shot distance (k_j - k_i)")
        ax.set_ylabel(signal)
        ax.set_title(f"gap decay: {signal}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
