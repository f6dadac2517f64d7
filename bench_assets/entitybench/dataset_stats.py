"""EntityBench dataset statistics: the paper's Tables 3 / 7 / 10 per tier and overall, from the per-episode
statistics rows. Pure (no Dagster): the entitybench_dataset_statistics asset only reads and hands over.
Table 3's recurrence rows are shot distances (``shot_distance_*``, ``episode_max_shot_distance_*``,
``max_shot_distance``); the ``recurrence_gap_*`` columns beside them count intervening shots (distance - 1)."""

from typing import Optional

import numpy as np
import pandas as pd

from bench_assets.entitybench import dataset


def _lists(part: pd.DataFrame, col: str) -> list:
    return [x for v in part[col] if isinstance(v, list) for x in v] if col in part else []


def _pooled_statistics(part: pd.DataFrame) -> dict:
    """Tables 3 / 7 / 10 quantities pooled over entities, gaps and shots (not means of episode means)."""
    gaps, maxes = _lists(part, "recurrence_gaps"), _lists(part, "per_entity_max_gaps")
    shots = part["n_shots"].sum()
    ep_max = part["recurrence_gap_max"].dropna().astype(float)
    sched = part["scheduled_entities"].sum() if "scheduled_entities" in part else 0

    def shot_weighted(col: str) -> Optional[float]:
        return float((part[col] * part["n_shots"]).sum() / shots) if col in part and shots else None

    # Table 3's "recurrence gap" rows are shot distances k_j - k_i (= intervening + 1; spec, Decisions): named so,
    # beside the intervening counts
    dist = [g + 1 for g in gaps]
    return {
        "shot_distance_mean": float(np.mean(dist)) if dist else None,
        "shot_distance_sd": float(np.std(dist)) if dist else None,
        "episode_max_shot_distance_mean": float((ep_max + 1).mean()) if len(ep_max) else None,
        "episode_max_shot_distance_sd": float((ep_max + 1).std(ddof=0)) if len(ep_max) else None,
        "max_shot_distance": int(max(dist)) if dist else None,
        "recurrence_gap_mean": float(np.mean(gaps)) if gaps else None,
        "recurrence_gap_sd": float(np.std(gaps)) if gaps else None,
        "episode_max_gap_mean": float(ep_max.mean()) if len(ep_max) else None,
        "episode_max_gap_sd": float(ep_max.std(ddof=0)) if len(ep_max) else None,
        "unique_scheduled_entities": int(sched),
        "recurring_entity_rate": (float(part["recurring_entities"].sum() / sched)
                                  if sched and "recurring_entities" in part else None),
        "mean_per_entity_max_gap": float(np.mean(maxes)) if maxes else None,
        "median_per_entity_max_gap": float(np.median(maxes)) if maxes else None,
        "max_characters_per_shot": int(part["max_characters_per_shot"].max()),
        "frac_shots_3plus_chars": shot_weighted("frac_shots_3plus_chars"),
        **{f"frac_shots_{k}_chars": shot_weighted(f"frac_shots_{k}_chars") for k in (0, 1, 2)},
    }


def dataset_table(stats: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for tier, part in [*[(t, stats[stats.tier == t]) for t in dataset.TIERS], ("all", stats)]:
        if part.empty:
            continue
        slots = part["entity_slot_appearances"].sum()
        rows.append({
            "tier": tier, "episodes": len(part), "shots": int(part["n_shots"].sum()),
            **{f"cross_shot_{t}s_mean": float(part[f"cross_shot_{t}s"].mean()) for t in dataset.ENTITY_TYPES},
            **{f"cross_shot_{t}s_sd": float(part[f"cross_shot_{t}s"].std(ddof=0)) for t in dataset.ENTITY_TYPES},
            "recurrence_gap_max": float(part["recurrence_gap_max"].max()),
            "reappearance_rate": float(part["reappearances"].sum() / slots) if slots else None,
            "cut_rate": float(part["cuts"].sum() / part["n_shots"].sum()),
            "continuation_chains": int(part["continuation_chains"].sum()),
            "registry_shot_rate": float(part["registry_shots"].sum() / part["n_shots"].sum()),
            "memory_only_rate": float(part["memory_only_shots"].sum() / part["n_shots"].sum()),
            "scenes": int(part["scenes"].sum()),
            **{f"registry_{t}s": int(part[f"registry_{t}s"].sum()) for t in dataset.ENTITY_TYPES},
            **{f"appearances_{t}": int(part[f"appearances_{t}"].sum()) for t in dataset.ENTITY_TYPES},
            **{f"first_appearances_{t}": int(part[f"first_appearances_{t}"].sum()) for t in dataset.ENTITY_TYPES},
            **{f"reappearance_rate_{t}": (float(part[f"reappearances_{t}"].sum() / part[f"appearances_{t}"].sum())
                                          if part[f"appearances_{t}"].sum() else None) for t in dataset.ENTITY_TYPES},
            **{f"{k}_per_shot": float((part[f"mean_{k}_per_shot"] * part["n_shots"]).sum() / part["n_shots"].sum())
               for k in ("characters", "objects", "locations", "entities")},
            "frac_shots_tritype": float((part["frac_shots_tritype"] * part["n_shots"]).sum() / part["n_shots"].sum()),
            "frac_shots_2c1o": float((part["frac_shots_2c1o"] * part["n_shots"]).sum() / part["n_shots"].sum()),
            "mean_per_entity_max_gap_episode_mean": float(part["mean_per_entity_max_gap"].mean()),
            **_pooled_statistics(part),
        })
    return pd.DataFrame(rows)
