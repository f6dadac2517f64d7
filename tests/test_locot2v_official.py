"""``bench import locot2v`` (issue 35): LoCoT2V-Bench's released prompt files (the review-version draft
``locot2v_prompt_suite.json`` and the final ``data/prompt.json``, each one nested {theme: {sample_id: {...}}} file)
into the project's one-JSON-per-sample format. The fixtures below are written here in the release's schema (field
names and nesting as released; the texts are ours)."""
import json

import pytest

from bench_assets.cli import main as bench
from bench_assets.locot2v import official
from bench_assets.locot2v.constants import HERD_DIMENSIONS
from bench_assets.locot2v.dataset import discover_samples, load_sample

DRAFT_DIMS = ("Emotional Response", "Narrative Structure and Pacing", "Characterization and Relationships",
              "Visual Style", "Themes and Messages", "Openness and Interpretive Depth", "Overall Evaluation")


def _questions(dim: str, n: int = 6, negative: tuple[int, ...] = ()) -> list[dict]:
    return [{"question": f"Does the video show {dim.lower()} aspect {i}?",
             "q_pos": "negative" if i in negative else "positive"} for i in range(n)]


def _draft_sample(tag: str, events: int = 2, actions=None, **over) -> dict:
    s = {"main_content": f"The source video of {tag}: a boat crosses a lake, then a heron lands on a post.",
         "summary": f"A short retelling of {tag}.",
         "evaluation": {d: f"{d} text for {tag}" for d in DRAFT_DIMS},
         "herd_questions": {d: _questions(d, negative=(1, 4) if d.startswith("Openness") else ())
                            for d in DRAFT_DIMS},
         "events_info": [{"event": f"{tag} event {i}", "subject": f"subject {i}", "setting": f"setting {i}",
                          "action": f"action {i}", "camera motion": "static", "prompt": f"event prompt {i}"}
                         for i in range(events)],
         "prompt": f"The test prompt of {tag}: a wooden boat glides over a misty lake at dawn ...",
         "frame_num_ref": 1200 + events, "duration_ref": 40.5}
    if actions is not None:
        s["human_actions"] = actions
    s.update(over)
    return s


def _draft() -> dict:
    lake = _draft_sample("lake_1", actions=[{"subject": "rower", "action": "pulls the oars"}])
    lake["events_info"][1]["setting"] = ""                       # the release has events with an empty setting
    short = _draft_sample("lake_2", events=3, actions=[])        # no human action: an empty list
    short["herd_questions"]["Visual Style"] = _questions("Visual Style", n=5)
    bad = _draft_sample("city_4", actions=[])
    bad["herd_questions"]["Themes and Messages"][2]["q_pos"] = "neutral"
    return {"lake": {"lake_1": lake, "lake_2": short},
            "city": {"city_3": _draft_sample("city_3", actions=[{"subject": "cyclist", "action": "rings a bell"}]),
                     "city_4": bad, "lake_1": _draft_sample("dup", actions=[])}}


def _final_sample() -> dict:
    return {
        "source_description": "The source video: a girl feeds ducks by a pond, then the sun sets over the water.",
        "frame_num_ref": 900, "duration_ref": 31.2,
        "prompt": "Mira, a girl in a red raincoat, scatters bread for the ducks at the pond's edge ...",
        "purified_prompt": "A girl in a red raincoat scatters bread for ducks at a pond ...",
        "character_infos": {"Mira": {"concept": "girl", "description": "A girl in a red raincoat.",
                                     "attributes": {"clothing": "red raincoat"}, "sam_prompt": "girl in red coat"}},
        "background_infos": {
            "Background_1": {"description": "A small pond with reeds.", "type": "pond",
                             "visual_anchors": ["reeds", "ducks"]},
            "Background_2": {"description": "The pond at sunset.", "type": "pond at sunset",
                             "visual_anchors": ["setting sun", "orange water"]}},
        "scene_infos": [
            {"prompt": "Mira scatters bread for the ducks.", "summary": "A girl feeds ducks.",
             "character_mapping": {"Mira": ["scatters bread", "laughs"]}, "background_mapping": "Background_1",
             "camera_movement": "static"},
            {"prompt": "The sun sinks behind the reeds.", "summary": "The sun sets over the pond.",
             "character_mapping": {}, "background_mapping": "Background_2", "camera_movement": "pan right"}],
        "fga_questions": {"character_anchor_questions": {}, "scene_questions": []},
        "herd_expectations": {"Emotional Response": "calm", "Narrative Flow": "from play to dusk",
                              "Character Development": "a carefree girl", "Visual Style": "warm light",
                              "Themes Expression": "small joys", "Overall Impression": "gentle"},
        "herd_questions": {"Emotional Response": ["Is the video calm?", "Is it warm?"],
                           "Character Development": {"girl_1": ["Is there a girl?", "Is she carefree?"]},
                           "Themes Expression": ["Does it show small joys?"]}}


def test_the_draft_imports_in_full(tmp_path):
    src = tmp_path / "locot2v_prompt_suite.json"
    src.write_text(json.dumps(_draft()))
    report = official.import_file(src, tmp_path / "data")
    assert report.release == "draft" and (report.themes, report.samples) == (2, 5)
    assert sorted(report.written) == ["city_3", "lake_1", "lake_2"]
    # one clear error per refused sample, naming it and its theme; every other sample written
    assert any(e.startswith("sample city_4 (theme city): HERD question 3 of 'Themes and Messages' needs") and
               "neutral" in e for e in report.errors), report.errors
    assert any(e.startswith("sample lake_1 (theme city): the id is also a sample of theme lake")
               for e in report.errors), report.errors
    samples_dir = tmp_path / "data" / "locot2v" / "samples"
    assert discover_samples(samples_dir) == ["city_3", "lake_1", "lake_2"]
    s = load_sample(samples_dir / "lake_1.json")
    assert s.theme == "lake" and s.prompt.startswith("The test prompt of lake_1")
    assert s.prompt_base.startswith("The source video of lake_1")
    assert set(s.herd_info) == set(HERD_DIMENSIONS)
    assert s.herd_info["Narrative Flow"] == "Narrative Structure and Pacing text for lake_1"
    assert s.herd_info["Overall Impression"] == "Overall Evaluation text for lake_1"
    assert len(s.herd_questions) == 42 and {q["dimension"] for q in s.herd_questions} == set(HERD_DIMENSIONS)
    depth = [q["polarity"] for q in s.herd_questions if q["dimension"] == "Interpretive Depth"]
    assert depth == ["positive", "negative", "positive", "positive", "negative", "positive"]
    assert [e["setting"] for e in s.events] == ["setting 0", ""] and s.events[0]["prompt"] == "event prompt 0"
    assert s.events[0]["camera motion"] == "static"
    assert s.human_actions == ({"subject": "rower", "action": "pulls the oars"},)
    assert load_sample(samples_dir / "lake_2.json").human_actions == ()
    raw = json.loads((samples_dir / "lake_1.json").read_text())
    assert raw["release"]["fields"] == {"summary": "A short retelling of lake_1.", "frame_num_ref": 1202,
                                        "duration_ref": 40.5}
    # counts and quirks in the report
    assert report.counts["events"] == 2 + 3 + 2 and report.counts["herd_questions"] == 42 + 41 + 42
    assert report.counts["polarity.negative"] == 6 and report.counts["human_actions"] == 2
    assert report.quirks["an event with an empty 'setting'"] == ["lake_1"]
    assert report.quirks["a HERD dimension with other than 6 questions"] == ["lake_2"]
    assert report.quirks["no human action (the human action metric is None for it)"] == ["lake_2"]
    saved = json.loads((tmp_path / "data" / "locot2v" / "import_report_locot2v_prompt_suite.json").read_text())
    assert saved["written"] == 3 and saved["refused"] == 2 and saved["release"] == "draft"


def test_the_final_imports_what_maps_and_names_the_rest(tmp_path):
    second = _final_sample()
    second["herd_expectations"]["Interpretive Thing"] = "?"            # a dimension the import does not know
    src = tmp_path / "prompt.json"
    src.write_text(json.dumps({"pond": {"pond_1": _final_sample(), "pond_2": second}}))
    report = official.import_file(src, tmp_path / "data")
    assert report.release == "final" and report.written == ["pond_1"]
    assert report.errors == ["sample pond_2 (theme pond): 'herd_expectations' has the unknown HERD dimension "
                             "'Interpretive Thing' (known: ['Character Development', 'Emotional Response', "
                             "'Narrative Flow', 'Overall Impression', 'Themes Expression', 'Visual Style'])"]
    s = load_sample(tmp_path / "data" / "locot2v" / "samples" / "pond_1.json")
    assert s.prompt_base.startswith("The source video: a girl") and s.prompt.startswith("Mira")
    assert s.herd_info["Themes"] == "small joys" and "Interpretive Depth" not in s.herd_info
    assert s.herd_questions is None and s.human_actions is None            # left to the judge, said so
    assert s.events[0] == {"event": "A girl feeds ducks.", "subject": "Mira (girl)", "setting": "pond",
                           "action": "scatters bread; laughs", "camera motion": "static",
                           "prompt": "Mira scatters bread for the ducks."}
    assert s.events[1]["subject"] == "setting sun, orange water"           # no character: the visual anchors
    assert s.events[1]["action"] == "The sun sets over the pond."
    raw = json.loads((tmp_path / "data" / "locot2v" / "samples" / "pond_1.json").read_text())
    kept = raw["release"]["fields"]
    assert set(kept) == {"herd_questions", "purified_prompt", "fga_questions", "character_infos",
                         "frame_num_ref", "duration_ref"}
    assert report.counts["unlabelled_questions"] == 5
    assert report.quirks["'herd_expectations' lacks 'Interpretive Depth'"] == ["pond_1"]
    text = "\n".join(report.lines())
    for name in ("purified_prompt", "fga_questions", "herd_questions", "human_actions", "category"):
        assert name in text
    assert "left to the judge: herd_questions: no polarity in the release (HERD polarity left to the judge)" in text


def test_a_file_that_is_no_release_is_one_error(tmp_path):
    with pytest.raises(official.ReleaseError, match="one {theme: {sample_id"):
        official.release_kind([1, 2])
    with pytest.raises(official.ReleaseError, match="theme 'x' must map sample ids"):
        official.release_kind({"x": ["a"]})
    with pytest.raises(official.ReleaseError, match="no sample has the draft's fields"):
        official.release_kind({"x": {"a": {"prompt": "p"}}})
    bad = tmp_path / "p.json"
    bad.write_text("{not json")
    with pytest.raises(official.ReleaseError, match="p.json: not valid UTF-8 JSON"):
        official.import_file(bad, tmp_path / "data")


def test_bench_import_locot2v_writes_the_samples_and_prints_the_report(tmp_path, capsys):
    src = tmp_path / "locot2v_prompt_suite.json"
    draft = _draft()
    del draft["city"]                                      # only convertible samples: exit 0
    src.write_text(json.dumps(draft))
    assert bench(["import", "locot2v", str(src), "--out", str(tmp_path / "root")]) == 0
    out = capsys.readouterr().out
    assert "(draft release): 1 themes, 2 samples, 2 written" in out and "0 refused" in out
    assert discover_samples(tmp_path / "root" / "locot2v" / "samples") == ["lake_1", "lake_2"]
    src.write_text(json.dumps(_draft()))                   # refused samples: named, exit 1
    assert bench(["import", "locot2v", str(src), "--out", str(tmp_path / "root")]) == 1
    assert "error: sample city_4 (theme city)" in capsys.readouterr().out
    src.write_text("[]")
    assert bench(["import", "locot2v", str(src), "--out", str(tmp_path / "root")]) == 2
    assert "error: " in capsys.readouterr().err
