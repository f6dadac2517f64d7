"""Issue 35 item 6: the EntityBench dataset statistics (entitybench/dataset_stats.py, the
entitybench_dataset_statistics asset's table) computed from an imported release report Table 3's shot distances
(k_j - k_i, spec Decisions), with the intervening counts beside them. Hand-written release fixture
(tests/support/entitybench_official.py): shots 1:1..3:2 are 1..5; consecutive appearances give distances
Mira 1,2 / Tomas 1 / The Stranger 3 / The Harbour 1,2,1 / the brass key 3 / the wooden crate 1."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

from bench_assets.entitybench import dataset, dataset_stats
from bench_assets.entitybench import official as O
from tests.support import DATA
from tests.support.entitybench_official import EPISODE_ID, official_episode, plain_episode, write_release


def _stats(episodes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the fixture's never-scheduled entities warn on load, by design
        return pd.DataFrame([dataset.episode_statistics(e) for e in episodes])


def test_shot_distances_of_an_imported_release(tmp_path):
    rel = write_release(tmp_path / "EntityBench", {EPISODE_ID: official_episode(),
                                                   "ep_two": plain_episode("ep_two", 4)},
                        {"easy": [EPISODE_ID, "ep_two"]})
    rep = O.import_release(rel, tmp_path / "out")
    assert rep["episodes_imported"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eps = [dataset.load_episode(p) for p in sorted((tmp_path / "out" / "entitybench" / "episodes").glob("*.json"))]
    table = dataset_stats.dataset_table(_stats(eps)).set_index("tier")
    dist = [1, 2, 1, 3, 1, 2, 1, 3, 1]                       # the quirk episode, by hand (module docstring)
    two = [1, 1, 1]                                           # Ann in 4 consecutive one-shot scenes
    pooled = dist + two
    row = table.loc["all"]
    assert row["shot_distance_mean"] == pytest.approx(sum(pooled) / len(pooled))
    assert row["shot_distance_sd"] == pytest.approx(pd.Series(pooled).std(ddof=0))
    assert row["recurrence_gap_mean"] == pytest.approx(sum(pooled) / len(pooled) - 1)
    assert row["max_shot_distance"] == 3
    assert row["episode_max_shot_distance_mean"] == pytest.approx((3 + 1) / 2)
    assert row["recurrence_gap_max"] == 2                    # intervening: 3 - 1


def test_dataset_table_agrees_with_the_import_table3_on_the_embedded_episodes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eps = [dataset.load_episode(p) for p in sorted((DATA / "entitybench" / "episodes").glob("*.json"))]
    table = dataset_stats.dataset_table(_stats(eps)).set_index("tier")
    for t3 in O.table3(eps):
        row = table.loc[t3["tier"]]
        assert (row["shot_distance_mean"], row["shot_distance_sd"]) == pytest.approx(t3["shot_distance"])
        assert (row["episode_max_shot_distance_mean"], row["episode_max_shot_distance_sd"]) == pytest.approx(
            t3["episode_max_shot_distance"])
        assert row["max_shot_distance"] == t3["max_shot_distance"]
