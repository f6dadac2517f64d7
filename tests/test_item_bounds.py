"""An item's cost is bounded by what its files hold, checked when it is parsed (issue 39): a schedule of 10^9
frames or a registry of 10,000 entities the shots never schedule is one error naming the item, the count and the
limit, in well under a second; the embedded items still parse and the other items of a set still score."""
import json
import time
import warnings

import pytest

from bench_assets.entitybench import dataset as ED
from bench_assets.mbench import cases as MC
from bench_assets.mbench import dataset as MD
from tests.support import DATA

MB_CASES = DATA / "mbench" / "cases"
EB_EPISODES = DATA / "entitybench" / "episodes"


def _a_case(cid: str, frames: int) -> dict:
    raw = json.loads((MB_CASES / "a_env01.json").read_text(encoding="utf-8"))
    raw["case_id"] = cid
    raw["actions"] = [{"phase": "exit", "action": "yaw_right", "frames": frames},
                      {"phase": "wait", "action": "wait", "frames": 3},
                      {"phase": "reenter", "action": "yaw_left", "frames": 12}]
    return raw


@pytest.mark.parametrize("cid,frames", [("a_huge", 10 ** 9), ("a_big2", 10_001 - 15)])
def test_an_mbench_schedule_past_the_limit_is_refused_at_once(cid, frames):
    started = time.perf_counter()
    with pytest.raises(MD.CaseError) as e:
        MD.parse_case(_a_case(cid, frames), cid)
    assert time.perf_counter() - started < 0.5
    total = frames + 15
    assert str(e.value) == (f"case {cid}: the action schedule spans {total:,} frames; the limit is "
                            f"{MD.MAX_SCHEDULE_FRAMES:,} (BENCH_MAX_SCHEDULE_FRAMES)")


def test_the_schedule_limit_is_configurable_and_checked_against_the_video(monkeypatch):
    assert MD.parse_case(_a_case("a_ok", 10_000 - 15), "a_ok").frame_actions()[:1] == ["yaw_right"]
    monkeypatch.setenv("BENCH_MAX_SCHEDULE_FRAMES", "20")
    with pytest.raises(MD.CaseError, match=r"case a_small: the action schedule spans 27 frames; the limit is 20"):
        MD.parse_case(_a_case("a_small", 12), "a_small")
    monkeypatch.setenv("BENCH_MAX_SCHEDULE_FRAMES", "lots")
    with pytest.raises(MD.CaseError, match="BENCH_MAX_SCHEDULE_FRAMES='lots' is not a whole number"):
        MD.parse_case(_a_case("a_small", 12), "a_small")
    monkeypatch.delenv("BENCH_MAX_SCHEDULE_FRAMES")
    with pytest.raises(MD.CaseError, match=r"case c7: the action schedule spans 40 frame transitions but the "
                                           r"video has 32 \(33 frames\)"):
        MD.check_schedule_length("c7", 40, video_frames=33)
    MD.check_schedule_length("c7", 32, video_frames=33)


@pytest.mark.parametrize("frames", ["12", 2.5, True, None])
def test_an_action_whose_frames_is_no_whole_number_names_the_case(frames):
    raw = _a_case("a_odd", 12)
    raw["actions"][0]["frames"] = frames
    with pytest.raises(MD.CaseError, match=r"case a_odd: bad action .*frames a whole number >= 1"):
        MD.parse_case(raw, "a_odd")


def test_every_embedded_mbench_case_parses():
    ids = MD.discover_cases(MB_CASES)
    assert len(ids) >= 8
    for cid in ids:
        case = MD.load_case(MB_CASES / f"{cid}.json")
        assert case.case_id == cid


def test_the_other_cases_still_read_beside_a_huge_one():
    good = {p.stem: MD.parse_case(json.loads(p.read_text(encoding="utf-8")), p.stem)
            for p in sorted(MB_CASES.glob("*.json"))}
    raws = {"a_huge": _a_case("a_huge", 10 ** 9)}

    def load(i):
        return good[i] if i in good else MD.parse_case(raws[i], i)

    started = time.perf_counter()
    table, errors = MC.read_cases([*good, "a_huge"], load)
    assert time.perf_counter() - started < 1.0
    assert sorted(table.case_id) == sorted(good)
    assert errors == [f"case a_huge: the action schedule spans {10 ** 9 + 15:,} frames; the limit is "
                      f"{MD.MAX_SCHEDULE_FRAMES:,} (BENCH_MAX_SCHEDULE_FRAMES)"]


def _episode(eid: str, extra: int) -> dict:
    raw = json.loads((EB_EPISODES / "e0001.json").read_text(encoding="utf-8"))
    raw["episode_id"] = eid
    raw["shots"] = raw["shots"][:2]
    raw["tier"] = "easy"
    scheduled = {x for s in raw["shots"] for x in s["entities"]}
    raw["entities"] = [e for e in raw["entities"] if e["id"] in scheduled] + [
        {"id": f"{eid}_x{i}", "type": ("character", "object", "location")[i % 3], "name": f"extra {i}",
         "description": f"an entity no shot of {eid} schedules, number {i}"} for i in range(extra)]
    return raw


def test_an_episode_with_ten_thousand_unscheduled_entities_is_refused_at_once():
    raw = _episode("e_flood", 10_000)
    n_sched = len({x for s in raw["shots"] for x in s["entities"]})
    started = time.perf_counter()
    with pytest.raises(ED.EpisodeError) as e:
        ED.parse_episode(raw, "e_flood.json")
    assert time.perf_counter() - started < 0.5
    limit = n_sched + ED.UNSCHEDULED_ENTITY_ALLOWANCE
    assert str(e.value) == (f"episode 'e_flood' (e_flood.json): the registry declares {10_000 + n_sched} entities "
                            f"but the shots schedule {n_sched}; the limit is {limit} (scheduled + "
                            f"{ED.UNSCHEDULED_ENTITY_ALLOWANCE} unscheduled, BENCH_MAX_UNSCHEDULED_ENTITIES)")


def test_the_allowance_is_kept_and_configurable(monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # never-scheduled entities are a warning, not an error
        ep = ED.parse_episode(_episode("e_some", ED.UNSCHEDULED_ENTITY_ALLOWANCE), "e_some.json")
    assert len(ep.entities) == len({x for s in ep.shots for x in s.entities}) + ED.UNSCHEDULED_ENTITY_ALLOWANCE
    monkeypatch.setenv("BENCH_MAX_UNSCHEDULED_ENTITIES", "2")
    with pytest.raises(ED.EpisodeError, match=r"episode 'e_three' \(e_three.json\): the registry declares \d+ "
                                              r"entities .* \(scheduled \+ 2 unscheduled"):
        ED.parse_episode(_episode("e_three", 3), "e_three.json")


def test_one_shot_scheduling_too_many_entities_is_refused(monkeypatch):
    monkeypatch.setenv("BENCH_MAX_ENTITIES_PER_SHOT", "1")
    raw = _episode("e_crowd", 0)
    n = len(raw["shots"][0]["entities"])
    assert n > 1
    with pytest.raises(ED.EpisodeError, match=rf"episode 'e_crowd' \(e_crowd.json\): shot 1 schedules {n} "
                                              rf"entities; the limit is 1 per shot \(BENCH_MAX_ENTITIES_PER_SHOT\)"):
        ED.parse_episode(raw, "e_crowd.json")


def test_every_embedded_episode_parses():
    paths = sorted(EB_EPISODES.glob("*.json"))
    assert paths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in paths:
            assert ED.load_episode(p).episode_id == p.stem


def _shots(tmp_path, eid: str, n_declared: int, n_files: int):
    raw = _episode(eid, 0)
    shot = raw["shots"][0]
    raw["shots"] = [dict(shot, index=i) for i in range(1, n_declared + 1)]
    folder = tmp_path / "gen" / eid
    folder.mkdir(parents=True)
    for i in range(1, n_files + 1):
        (folder / f"shot_{i:02d}.mp4").write_bytes(b"a")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ED.parse_episode(raw, f"{eid}.json"), folder


def test_the_undelivered_shot_limit_is_configurable_and_the_other_episodes_still_index(tmp_path, monkeypatch):
    """Shot counts (issue 39 item 3): an episode's shots without a file are bounded like its entities, by an
    environment variable, and the refusal names the episode, the counts and the limit."""
    many, many_dir = _shots(tmp_path, "e_many", 7, 2)
    few, few_dir = _shots(tmp_path, "e_few", 4, 2)
    assert len(ED.index_shot_files(many, many_dir, "gen")) == 7      # 5 undelivered: under the default 100
    monkeypatch.setenv("BENCH_MAX_UNDELIVERED_SHOTS", "3")
    started = time.perf_counter()
    with pytest.raises(ED.EpisodeError) as e:
        ED.index_shot_files(many, many_dir, "gen")
    assert time.perf_counter() - started < 0.5
    assert ("the episode declares 7 shots but the output folder holds files for 2; more than 3 undelivered"
            in str(e.value))
    assert "e_many" in str(e.value) and "BENCH_MAX_UNDELIVERED_SHOTS" in str(e.value)
    files = ED.index_shot_files(few, few_dir, "gen")                # 2 undelivered: at most 3, still indexed
    assert [f.error is None for f in files] == [True, True, False, False]
    monkeypatch.setenv("BENCH_MAX_UNDELIVERED_SHOTS", "2")
    assert len(ED.index_shot_files(few, few_dir, "gen")) == 4       # at the limit
    monkeypatch.setenv("BENCH_MAX_UNDELIVERED_SHOTS", "some")
    with pytest.raises(ED.EpisodeError, match="BENCH_MAX_UNDELIVERED_SHOTS='some' is not a whole number"):
        ED.index_shot_files(few, few_dir, "gen")
