"""EntityMem's bank with the platform writing the chroma key: every phrasing a Portrait Agent may use for the
background (or none) gets exactly one clause naming the attempt's key, so each retry is drawn on the key it is
segmented with; and a reference that failed its last verification is used (the paper's pipeline goes on) but marked
on every keyframe and shot that used it, in the rows, the audit page and the generator card."""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

import pandas as pd
import pytest
import yaml

from bench_assets.entitybench.dataset import parse_episode
from bench_assets.entitymem import audit, configs, pipeline, rows
from bench_assets.entitymem import bank as B
from bench_assets.entitymem.agents import Agents
from bench_resources.generation.offline import CHROMA, chroma_of
from bench_resources.store import Store
from tests.support.entitymem import EPISODE

SUBJECT = "full-body portrait of a knight in a green coat and blue trousers"
PHRASINGS = (
    "{s}, green chroma-key background",
    "{s}, standing in front of a green screen",
    "{s} on a greenscreen",
    "{s} against a solid bright green background.",
    "{s}, chroma-key green background, full body",
    "{s}, chroma key background",
    "{s}, isolated on a pure #00FF00 backdrop",
    "{s}",
    "{s}. Background: plain green.",
    "{s} (green screen)",
    "{s} on a green screen, green chroma-key background",
    "{s}, plain white background, studio light",
    "{s}, blue screen backdrop",
)


@pytest.mark.parametrize("key", B.CHROMA_ORDER)
@pytest.mark.parametrize("phrasing", PHRASINGS)
def test_every_phrasing_is_drawn_on_the_requested_key(phrasing, key):
    out = B.rekey(phrasing.format(s=SUBJECT), key)
    clauses = B.key_clauses(out)
    assert len(clauses) == 1 and clauses[0].lower().startswith(("on a ", "in front of a ", "against a ", key))
    assert f"{key} chroma-key background" in clauses[0]
    assert chroma_of(out) == key                    # what the image model (the stand-in's renderer) reads
    assert SUBJECT in out                           # the subject's own colours are not touched


@dataclass
class WordingAgents(Agents):
    """The rule agents, except that the Portrait Agent words each subject's background its own way (or not at
    all): what a model writes, which the platform must not depend on."""
    wording: dict = field(default_factory=dict)

    def portrait_prompt(self, etype, name, description, context, overview, extras):
        if etype == "location":
            return super().portrait_prompt(etype, name, description, context, overview, extras)
        kind = "full-body portrait of " + name + ":" if etype == "character" else "square object portrait of"
        prompt = f"anime {kind} {description}{self.wording.get(name, '')}"
        self.calls.append({"agent": "entitymem_portrait", "what": name, "answered_by": "test wording",
                           "answer": prompt})
        return {"style": "anime", "prompt": prompt}


SMALL = configs.EntityMemConfig("tiny-offline", "offline stand-in, small", candidates=3, n_frames=8)


def _run(tmp_path, cfg=SMALL, agents=None) -> pipeline.Run:
    backends = pipeline.Backends.from_config(cfg)
    if agents is not None:
        backends.agents = agents
    return pipeline.Run(parse_episode(copy.deepcopy(EPISODE)), cfg, backends, Store(root=str(tmp_path / "store")))


def test_a_green_screen_agent_retries_on_magenta(tmp_path):
    wording = {"Verdant Knight": ", standing in front of a green screen", "Mara": "",
               "Bo": " against a solid bright green background", "the Cat": " (greenscreen)"}
    run = _run(tmp_path, agents=WordingAgents("rules", wording=wording))
    _, refs = pipeline.build_bank(run)
    knight = refs["c1"]["attempts"]
    # the green coat vanished with the green key; the retry was drawn on magenta, keyed on magenta, and passed
    assert [(a["chroma"], a["verdict"]) for a in knight] == [("green", False), ("magenta", True)]
    assert "green screen" not in knight[1]["prompt"] and B.key_clauses(knight[1]["prompt"]) == \
        ["in front of a magenta chroma-key background"]
    for e in ("c1", "c2", "c3", "o1"):
        for a in refs[e]["attempts"]:
            assert chroma_of(a["prompt"]) == a["chroma"]
            for sha in a["candidates"]:          # every candidate was painted on the key it was cut from
                assert tuple(run.get(sha)[0, 0]) == CHROMA[a["chroma"]], (e, a["chroma"])
            assert all(s["key_found"] and s["foreground"] < 0.6 for s in a["stats"])
        assert refs[e]["verified"] is True


def _marked_world(tmp_path):
    cfg = configs.EntityMemConfig("tiny-offline", "offline stand-in, small", candidates=3, n_frames=8,
                                  max_retries=0)   # no retry: the knight's green cut-out fails and is used anyway
    run = _run(tmp_path, cfg)
    cls, refs = pipeline.build_bank(run)
    lays = pipeline.plan_layouts(run)
    kfs = pipeline.compose_keyframes(run, cls, refs, lays)
    shots = pipeline.generate_entitymem(run, cls, refs, kfs)
    return run, cfg, cls, refs, lays, kfs, shots


def test_an_unverified_reference_is_marked_on_every_keyframe_and_shot_that_used_it(tmp_path):
    run, _, cls, refs, lays, kfs, shots = _marked_world(tmp_path)
    assert refs["c1"]["verified"] is False and "missing_body_region" in refs["c1"]["unverified_reason"]
    assert all(refs[e]["verified"] is True for e in ("c2", "c3", "o1"))
    assert [k["unverified"] for k in kfs] == [["Verdant Knight"] if "Verdant Knight" in k["drawn"] else []
                                              for k in kfs]
    assert sum(bool(k["unverified"]) for k in kfs) >= 3
    # shots 1, 2 and 4 show the knight; shot 2 also opens on shot 1's last frame; shot 4 continues shot 3 (no knight)
    assert [s["unverified_references"] for s in shots] == [["Verdant Knight"], ["Verdant Knight"], [],
                                                           ["Verdant Knight"]]
    assert [s["unverified_via_first_frame"] for s in shots] == [[], ["Verdant Knight"], [], []]
    df = rows.shot_rows(shots, "entitymem_tiny-offline")
    assert df["unverified_references"].map(json.loads).tolist() == [s["unverified_references"] for s in shots]
    bank = rows.bank_rows(cls, refs)
    assert "Verdant Knight (character) | portrait | green: missing_body_region (**unverified, used anyway**)" in \
        rows.bank_markdown(bank, run.store)
    kdf = pd.DataFrame(kfs)
    for c in ("entities", "drawn", "unverified"):
        kdf[c] = kdf[c].map(json.dumps)
    page = audit.page("tiny-offline", "t0001", bank, rows.layout_rows(lays), kdf, df, rows.shot_rows([], "c"),
                      lambda sha, ext: f"{sha}.{ext}")
    assert page.count("UNVERIFIED, used anyway") == 1
    assert page.count("uses unverified references: Verdant Knight") == 3
    assert page.count("through its first frame: Verdant Knight") == 1
    assert page.count("unverified: Verdant Knight</span>") == sum(bool(k["unverified"]) for k in kfs)


def test_the_generator_card_lists_each_episodes_unverified_references(tmp_path):
    run, cfg, *_, shots = _marked_world(tmp_path)
    root = tmp_path / "gens"

    def card(arm="entitymem"):
        text = (root / cfg.generator_names()[arm] / "generator.yaml").read_text()
        return yaml.safe_load(text)["entitymem"]["unverified_references"]

    pipeline.write_outputs(run.store, root, cfg, "entitymem", "t0001", shots, run.backends)
    assert card() == {"t0001": {"references": ["Verdant Knight"], "shots": [1, 2, 4]}}
    clean = [{**s, "unverified_references": [], "unverified_via_first_frame": []} for s in shots]
    pipeline.write_outputs(run.store, root, cfg, "entitymem", "t0002", clean, run.backends)
    pipeline.write_outputs(run.store, root, cfg, "entitymem", "t0003", shots[:2], run.backends)
    assert card() == {"t0001": {"references": ["Verdant Knight"], "shots": [1, 2, 4]},
                      "t0003": {"references": ["Verdant Knight"], "shots": [1, 2]}}
    pipeline.write_outputs(run.store, root, cfg, "entitymem", "t0001", clean, run.backends)  # regenerated, verified
    assert card() == {"t0003": {"references": ["Verdant Knight"], "shots": [1, 2]}}
    pipeline.write_outputs(run.store, root, cfg, "control", "t0001", pipeline.generate_control(run), run.backends)
    assert card("control") == {}
