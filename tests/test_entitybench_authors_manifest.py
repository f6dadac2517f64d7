"""The run manifest against the authors' (issue 36 item 4): every knob of their ``BENCHMARK_CONFIG`` under their
name in the project's manifest, their ``run_manifest.json`` fields in ``bench export --format official``, and their
``manifest_comparable`` rule. With a clone of Catherine-R-He/EntityBench at ``BENCH_ENTITYBENCH_AUTHORS_CODE``
their own module is imported (it needs no GPU) and checked against ours; the rest runs on our reproduction."""
from __future__ import annotations

import pandas as pd
import pytest

from bench_assets.entitybench import manifest as M
from bench_assets.entitybench.official_export import export
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from tests.support.entitybench_authors_code import authors_module

# build_run_manifest's keys, then what the authors' main() adds before writing run_manifest.json
RUN_MANIFEST_KEYS = ["method_name", "timestamp_utc", "config", "python_version", "platform", "libraries",
                     "model_checkpoints", "strict", "allow_partial", "allow_config_override", "pillars",
                     "n_vlm_keys"]


@pytest.fixture(scope="module")
def ours():
    return M.run_manifest("gen-a", ModelRegistry(profile="offline"), Judge(mode="off"),
                          timestamp_utc="2026-11-29T00:00:00Z")


def test_every_knob_under_the_authors_name(ours):
    assert list(ours) == RUN_MANIFEST_KEYS
    assert list(ours["config"]) == list(M.AUTHORS_CONFIG) and len(M.AUTHORS_CONFIG) == 19
    assert list(ours["libraries"]) == list(M.AUTHORS_LIBRARIES)
    assert list(ours["model_checkpoints"]) == list(M.AUTHORS_CHECKPOINT_ENV)
    man = M.entitybench_manifest(ModelRegistry(profile="offline"), Judge(mode="off"))
    assert man["authors_config"] == ours["config"] and man["judge_prompts"] == "paper"
    # the offline run differs from the authors' locked config where it must, and says how
    diff = man["authors_config_differences"]
    assert diff["dino_model"][0] == "facebook/dinov2-base" and "EfficientNet-Lite0" in diff["dino_model"][1]
    assert diff["vlm_model_entity"] == ["gemini-2.5-pro", "judge off"] and diff["vlm_max_tokens"][0] == 50000
    assert "crop_pad_ratio" not in diff and "n_frames_per_shot" not in diff and "cross_shot_fidelity_gate_threshold" \
        not in diff


def test_judge_knobs_follow_the_judge(ours):
    live = Judge(mode="replay", model="gemini-2.5-pro", max_tokens=50000, cache_dir="/nonexistent")
    cfg = M.authors_config(ModelRegistry(profile="offline"), live)
    assert {cfg[k] for k in cfg if k.startswith("vlm_model_")} == {"gemini-2.5-pro"} and cfg["vlm_max_tokens"] == 50000
    assert not {k for k in M.config_differences(cfg) if k.startswith("vlm_")}


def _variant(m, **changes):
    out = {**m, **{k: v for k, v in changes.items() if k not in ("config", "libraries")}}
    out["config"] = {**m["config"], **changes.get("config", {})}
    out["libraries"] = {**m["libraries"], **changes.get("libraries", {})}
    return out


CASES = [
    ({"method_name": "gen-b", "timestamp_utc": "2027-01-01T00:00:00Z", "platform": "elsewhere", "n_vlm_keys": 5}, 0),
    ({"config": {"crop_pad_ratio": 0.2}}, 1),
    ({"libraries": {"transformers": "5.99.0"}}, 0),            # minor drift tolerated
    ({"libraries": {"transformers": "4.48.3"}}, 1),            # a major change is not
    ({"libraries": {"openai": "1.0.0"}}, 1),                   # one side NOT_INSTALLED: unparseable
    ({"model_checkpoints": {"GDINO_WEIGHTS": {"path": "/x", "size": 1, "head_sha256": "ab"}}}, 1),
    ({"pillars": [1, 2]}, 1),
]


@pytest.mark.parametrize("change,n_diffs", CASES)
def test_manifest_comparable_rule(ours, change, n_diffs):
    other = _variant(ours, **change)
    ok, diffs = M.manifest_comparable(ours, other)
    assert ok == (n_diffs == 0) and len(diffs) == n_diffs, diffs


@pytest.mark.parametrize("change,n_diffs", CASES)
def test_the_authors_own_rule_agrees(ours, change, n_diffs):
    authors = authors_module()
    other = _variant(ours, **change)
    assert authors.manifest_comparable(ours, other) == M.manifest_comparable(ours, other)


def test_the_authors_config_and_manifest_schema(ours):
    authors = authors_module()
    assert authors.BENCHMARK_CONFIG == M.AUTHORS_CONFIG
    theirs = authors.build_run_manifest("x", authors.BENCHMARK_CONFIG)
    assert list(theirs) == RUN_MANIFEST_KEYS[:7] and list(theirs["libraries"]) == list(M.AUTHORS_LIBRARIES)
    assert list(theirs["model_checkpoints"]) == list(M.AUTHORS_CHECKPOINT_ENV)
    # a run at their config: only the machine-specific fields and the added keys can differ
    ok, diffs = authors.manifest_comparable({**ours, "config": dict(authors.BENCHMARK_CONFIG)},
                                            {**theirs, **{k: ours[k] for k in RUN_MANIFEST_KEYS[7:]},
                                             "libraries": ours["libraries"], "python_version": ours["python_version"],
                                             "model_checkpoints": ours["model_checkpoints"]})
    assert ok, diffs


def test_official_export_writes_run_manifest(ours):
    records = pd.DataFrame([{"generator": "gen-a", "item": "e1", "metric_id": "cs_face", "value": 0.5, "n_eval": 2,
                             "n_failed": 0, "n_skipped": 0, "reason": None, "n_failed_evaluator": 0}])
    episodes = pd.DataFrame([{"item": "e1", "tier": "easy", "n_shots": 3}])
    files = export(records, episodes, "gen-a", run_manifest=ours)
    assert files["run_manifest.json"] == ours and M.manifest_comparable(files["run_manifest.json"], ours)[0]
    assert files["report_gen-a.json"]["_manifest"]["config"] == ours["config"]
    assert "run_manifest.json" not in export(records, episodes, "gen-a")   # no run given, no file
