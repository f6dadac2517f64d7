"""Episode loading: every problem named; statistics reproduce the paper's definitions."""
import json

import pytest

from bench_assets.entitybench import dataset as D


def episode(**over):
    raw = {"episode_id": "e9", "tier": "easy", "title": "t", "summary": "s",
           "entities": [{"id": "c1", "type": "character", "name": "Ann", "description": "a woman in red"},
                        {"id": "o1", "type": "object", "name": "cup", "description": "a white cup"},
                        {"id": "l1", "type": "location", "name": "room", "description": "a small room"}],
           "shots": [{"index": 1, "cut": True, "entities": ["c1", "l1"], "action": "Ann enters"},
                     {"index": 2, "cut": False, "entities": ["c1", "o1", "l1"], "action": "Ann lifts the cup"},
                     {"index": 3, "cut": True, "entities": ["o1"], "action": "the cup"},
                     {"index": 4, "cut": True, "entities": [], "action": "empty"},
                     {"index": 5, "cut": False, "entities": ["c1"], "action": "Ann again"}]}
    raw.update(over)
    return raw


def test_statistics():
    ep = D.parse_episode(episode())
    s = D.episode_statistics(ep)
    assert s["cross_shot_characters"] == 1 and s["cross_shot_objects"] == 1 and s["cross_shot_locations"] == 1
    # c1 at 1,2,5 -> gaps 0,2 ; o1 at 2,3 -> 0 ; l1 at 1,2 -> 0
    assert s["recurrence_gap_max"] == 2
    assert s["entity_slot_appearances"] == 7 and s["reappearances"] == 4
    assert s["cuts"] == 3 and s["continuation_chains"] == 3 and s["max_chain_length"] == 2
    assert s["registry_shots"] == 2 and s["memory_only_shots"] == 2
    assert D.continuation_chains(ep) == [[1, 2], [3], [4, 5]]
    assert D.shot_prompt(ep, 1).startswith("[Ann] a woman in red")
    assert D.shot_prompt(ep, 5) == "Ann again"


@pytest.mark.parametrize("mutate,msg", [
    (lambda r: r["shots"][1].update(index=3), "1-based and contiguous"),
    (lambda r: r["shots"][0].update(cut=False), "first shot must be a cut"),
    (lambda r: r["shots"][2].update(entities=["zz"]), "unknown entity ids ['zz']"),
    (lambda r: r.update(episode_id="bad|id"), "'|'"),
    (lambda r: r["entities"][0].update(type="robot"), "unknown type 'robot'"),
    (lambda r: r.update(shots=[]), "non-empty"),
])
def test_bad_episodes_named(mutate, msg):
    raw = episode()
    mutate(raw)
    with pytest.raises(D.EpisodeError, match=None) as ei:
        D.parse_episode(raw, "e9.json")
    assert msg in str(ei.value) and ("e9" in str(ei.value) or "bad|id" in str(ei.value))


def test_bad_json_file(tmp_path):
    p = tmp_path / "e1.json"
    p.write_text('{"episode_id": "e1", ')
    with pytest.raises(D.EpisodeError, match=r"e1.json: bad JSON at line 1"):
        D.load_episode(p)


def test_shot_files(tmp_path):
    ep = D.parse_episode(episode())
    for i in (1, 2, 4, 5):
        (tmp_path / f"shot_{i:02d}.mp4").write_bytes(b"x")
    files = D.index_shot_files(ep, tmp_path, "g")
    assert [f.error is None for f in files] == [True, True, False, True, True]
    assert "shot 3: no shot_03" in files[2].error
    (tmp_path / "shot_00.mp4").write_bytes(b"x")
    files = D.index_shot_files(ep, tmp_path, "g")
    assert all(f.error and "1-based" in f.error for f in files)


def test_tables_6_to_8_quantities():
    ep = D.parse_episode(episode())
    s = D.episode_statistics(ep)
    assert (s["registry_characters"], s["registry_objects"], s["registry_locations"]) == (1, 1, 1)
    assert (s["appearances_character"], s["appearances_object"], s["appearances_location"]) == (3, 2, 2)
    assert (s["first_appearances_character"], s["reappearances_character"]) == (1, 2)
    assert s["reappearance_rate_character"] == pytest.approx(2 / 3)
    assert s["scenes"] == 3
    assert s["mean_entities_per_shot"] == pytest.approx(7 / 5)
    assert s["frac_shots_tritype"] == pytest.approx(1 / 5)  # only shot 2 has c + o + l
    assert s["frac_shots_2c1o"] == 0.0


def test_dataset_table_aggregates_tiers():
    import pandas as pd
    from bench_assets.entitybench.dataset_stats import dataset_table
    a = D.episode_statistics(D.parse_episode(episode()))
    b = D.episode_statistics(D.parse_episode(episode(episode_id="e8")))
    t = dataset_table(pd.DataFrame([a, b])).set_index("tier")
    assert list(t.index) == ["easy", "all"]
    assert t.loc["all", "episodes"] == 2 and t.loc["all", "shots"] == 10
    assert t.loc["all", "appearances_character"] == 6 and t.loc["all", "reappearance_rate"] == pytest.approx(4 / 7)
    assert t.loc["all", "recurrence_gap_max"] == 2 and t.loc["all", "cut_rate"] == pytest.approx(0.6)


def test_pooled_statistics_of_tables_3_7_10():
    """Issue 13 'Also': gap mean +- sd, per-episode max gap mean +- sd, unique scheduled entities, recurring
    rate, median per-entity max gap, max characters per shot, >= 3 characters, 0/1/2 characters per shot;
    'mean per-entity max gap' pooled over entities (old: a mean of episode means)."""
    import pandas as pd
    from bench_assets.entitybench.dataset_stats import dataset_table
    a = D.episode_statistics(D.parse_episode(episode()))
    # e8: c1 at 1 and 5 only (gap 3), o1 and l1 never recur
    b = D.episode_statistics(D.parse_episode(episode(episode_id="e8", shots=[
        {"index": 1, "cut": True, "entities": ["c1", "l1"], "action": "a"},
        {"index": 2, "cut": True, "entities": ["o1"], "action": "b"},
        {"index": 3, "cut": True, "entities": [], "action": "c"},
        {"index": 4, "cut": True, "entities": [], "action": "d"},
        {"index": 5, "cut": True, "entities": ["c1"], "action": "e"}])))
    assert a["recurrence_gaps"] == [0, 2, 0, 0] and a["per_entity_max_gaps"] == [2, 0, 0]
    assert (a["frac_shots_0_chars"], a["frac_shots_1_chars"], a["frac_shots_2_chars"]) == (0.4, 0.6, 0.0)
    t = dataset_table(pd.DataFrame([json.loads(json.dumps(a)), json.loads(json.dumps(b))])).set_index("tier")
    row = t.loc["all"]
    gaps = [0, 2, 0, 0, 3]
    assert row["recurrence_gap_mean"] == pytest.approx(1.0) and row["recurrence_gap_sd"] == pytest.approx(
        float(pd.Series(gaps).std(ddof=0)))
    assert row["episode_max_gap_mean"] == pytest.approx(2.5) and row["episode_max_gap_sd"] == pytest.approx(0.5)
    # pooled over the 4 recurring entities (2, 0, 0 | 3): mean 1.25, median 1.0; the episode-mean version is 1.833
    assert row["mean_per_entity_max_gap"] == pytest.approx(1.25)
    assert row["median_per_entity_max_gap"] == pytest.approx(1.0)
    assert row["mean_per_entity_max_gap_episode_mean"] == pytest.approx((2 / 3 + 3) / 2)
    assert row["unique_scheduled_entities"] == 6 and row["recurring_entity_rate"] == pytest.approx(4 / 6)
    assert row["max_characters_per_shot"] == 1 and row["frac_shots_3plus_chars"] == 0.0
    assert row["frac_shots_0_chars"] == pytest.approx((2 + 3) / 10)
