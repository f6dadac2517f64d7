"""``judge_prompts: authors`` on the wire: the project's EntityBench judge requests equal, request for request, what
the authors' own judge client sent for the same episodes (issue 36 item 3).

golden/entitybench/requests.json was written by scripts/parity_golden_entitybench.py: every request the authors'
``evaluate_episode`` (eval/evaluate_benchmark.py at 3776439, its openai.AzureOpenAI client) sent to the fixtures'
judge on 127.0.0.1: path, the headers that reach an endpoint, and the body with each prompt text and image replaced
by digests (their texts are not stored in this project). Here the project's row builders run on the same fixtures
(tests/support/entitybench_project.py) with the authors' prompt texts (read from a scratch clone of their
repository at that commit) and a real ``Judge`` (openai backend, ``azure_api_version``) posting to the same kind of
server; what it received is compared with the golden records:
- as JSON, with images compared as decoded pixels (message list and roles, part order, text, parameters, path,
  headers): equal;
- with images compared as bytes (JPEG quality 90 through the same PIL): equal;
- the answers read back (the authors' first-{...} reading) give the judged metrics the authors' code computed;
- the reading itself is the authors' ``_vlm_api_call``'s, run from their module on the same replies.

The clone: ``BENCH_ENTITYBENCH_AUTHORS_CODE`` (a clone holding the commit), else ``BENCH_ENTITYBENCH_AUTHORS_REPO``
or the mirror at /work/.mirror to clone from; without any, the tests are skipped with that reason.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.support import entitybench_golden as fx
from tests.support import entitybench_project as wp

COMMIT = "3776439e7037b2128ac3b5d2d1ce63e424cca166"
MIRROR = Path("/work/.mirror/Catherine-R-He+EntityBench/repo")
EXACT = 1e-9
API_VERSION = "2023-07-01-preview"   # what their client sends when AZURE_OPENAI_API_VERSION is unset


def golden_requests() -> dict:
    return json.loads((wp.GOLDEN_DIR / "requests.json").read_text())


@pytest.fixture(scope="module")
def authors_clone(tmp_path_factory) -> Path:
    """A scratch clone of the authors' repository at COMMIT (never inside the project)."""
    src = (os.environ.get("BENCH_ENTITYBENCH_AUTHORS_CODE", "").strip()
           or os.environ.get("BENCH_ENTITYBENCH_AUTHORS_REPO", "").strip() or (str(MIRROR) if MIRROR.exists() else ""))
    if not src:
        pytest.skip("no clone of Catherine-R-He/EntityBench: set BENCH_ENTITYBENCH_AUTHORS_CODE (a clone) or "
                    "BENCH_ENTITYBENCH_AUTHORS_REPO (a repository to clone)")
    dst = tmp_path_factory.mktemp("authors") / "EntityBench"
    subprocess.run(["git", "clone", "-q", "--no-checkout", src, str(dst)], check=True)
    subprocess.run(["git", "-C", str(dst), "checkout", "-q", COMMIT], check=True)
    return dst


@pytest.fixture(scope="module")
def project_wire(tmp_path_factory, authors_clone):
    """Per episode: the project's rows and the requests its judge sent, under judge_prompts: authors."""
    from bench_assets.entitybench import judging as J
    from bench_resources.judge import Judge
    root = tmp_path_factory.mktemp("eb_wire")
    out = {}
    with pytest.MonkeyPatch.context() as mp, fx.JudgeServer() as srv:
        mp.setenv(J.PROMPTS_ENV, "authors")
        mp.setenv(J.AUTHORS_CODE_ENV, str(authors_clone))
        mp.setenv("EB_WIRE_KEY", "fixture")   # the key the golden script gave their client
        judge = Judge(mode="live", backend="openai", base_url=srv.url, model="gemini-2.5-pro",
                      api_key_env="EB_WIRE_KEY", azure_api_version=API_VERSION, cache_dir=str(root / "cache"),
                      max_concurrency=1)
        models = wp.Models(fx.checkpoints(str(root / "checkpoints")))
        for eid in fx.EPISODE_IDS:
            n0 = len(srv.bodies)
            rows = wp.project_rows(root, judge.ask_many, clip=models, embed=models.embed, only=[eid])[eid]
            out[eid] = {"rows": rows["rows"], "requests": wp.wire_records(srv.bodies[n0:])}
    return out


def _without_bytes(recs: list[dict]) -> list[str]:
    """The records as canonical JSON with each image's byte digest dropped (its decoded pixels stay)."""
    out = []
    for r in recs:
        r = json.loads(json.dumps(r))
        for m in r["body"]["messages"]:
            for p in m["content"] if isinstance(m["content"], list) else []:
                if p.get("type") == "image_url":
                    p["image_url"]["url"].pop("bytes_sha256")
        out.append(json.dumps(r, sort_keys=True))
    return sorted(out)


def _explain(got: list[str], want: list[str]) -> str:
    """The first golden record the project did not send, beside the project's record closest to it."""
    missing = [w for w in want if w not in got]
    extra = [g for g in got if g not in want]
    if not missing:
        return f"{len(extra)} extra project request(s): {extra[:1]}"
    w = json.loads(missing[0])

    def diff(a, b, path=""):
        if isinstance(a, dict) and isinstance(b, dict):
            return [d for k in sorted(set(a) | set(b)) for d in diff(a.get(k), b.get(k), f"{path}.{k}")]
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
        return [] if a == b else [f"{path}: authors {json.dumps(a)[:160]} project {json.dumps(b)[:160]}"]
    best = min((diff(w, json.loads(g)) for g in extra), key=len, default=["(no project request left)"])
    return (f"{len(missing)} of {len(want)} authors' requests not sent as they were, {len(extra)} project requests "
            f"unmatched; first: " + "; ".join(best[:6]))


def test_golden_requests_are_the_golden_runs():
    """requests.json comes from the run that wrote episodes.json: same meta, one record per judge key."""
    g, eps = golden_requests(), wp.golden()
    assert g["meta"] == eps["meta"]
    for eid in fx.EPISODE_IDS:
        assert len(g["requests"][eid]) == len(eps["episodes"][eid]["judge_keys"]) > 0


@pytest.mark.parametrize("eid", fx.EPISODE_IDS)
def test_requests_equal_the_authors_with_images_as_pixels(project_wire, eid):
    """Message list and roles, part order (text, then images), every text, model, max_tokens, no sampling
    parameter, no response_format, path and key header; each image's media type, size and decoded pixels."""
    got = _without_bytes(project_wire[eid]["requests"])
    want = _without_bytes(golden_requests()["requests"][eid])
    assert got == want, _explain(got, want)


@pytest.mark.parametrize("eid", fx.EPISODE_IDS)
def test_images_are_byte_identical(project_wire, eid):
    """JPEG quality 90 through the same PIL: the bytes on the wire are the same, not only the pixels."""
    got = sorted(json.dumps(r, sort_keys=True) for r in project_wire[eid]["requests"])
    want = sorted(json.dumps(r, sort_keys=True) for r in golden_requests()["requests"][eid])
    assert got == want, _explain(got, want)


JUDGED = tuple(f"intra_{p}_{c}" for p, cs in (("face", ("fidelity", "face", "hair", "clothing", "build")),
                                               ("object", ("fidelity", "shape", "color_texture", "proportions",
                                                           "details")),
                                               ("location", ("fidelity", "layout", "color_mood", "landmarks",
                                                             "perspective"))) for c in cs) + tuple(
    f"llm_{p}_{c}" for p, cs in (("face", ("accuracy", "mean_score", "face", "hair", "clothing", "build")),
                                 ("object", ("accuracy", "mean_score", "shape", "color_texture", "proportions",
                                             "details")),
                                 ("scene", ("accuracy", "mean_score", "layout", "color_mood", "landmarks",
                                            "perspective"))) for c in cs) + tuple(
    f"intra_action_{f}" for f in ("overall", "depicted", "subject_identity", "subject_action", "object_interaction",
                                  "motion_quality"))


@pytest.mark.parametrize("metric", JUDGED)
@pytest.mark.parametrize("eid", fx.EPISODE_IDS)
def test_answers_read_back_give_the_authors_values(project_wire, eid, metric):
    """The fixtures' judge answers both sides from the same content; read back through the authors' wire (their
    first-{...} reading, their field names) the judged metrics are the values their code computed."""
    df = project_wire[eid]["rows"]
    r = df[(df["level"] == "item") & (df["metric_id"] == metric)]
    assert len(r) == 1, (metric, len(r))
    got = None if pd.isna(r["value"].iloc[0]) else float(r["value"].iloc[0])
    want = wp.golden()["episodes"][eid]["metrics"].get(metric, {}).get("value")
    assert (got is None) == (want is None) and (want is None or abs(got - want) <= EXACT), (eid, metric, got, want)


REPLIES = ['{"score": 4, "same": false}', 'Sure. {"score": 4, "reason": "the coat {red} differs"} Hope it helps.',
           '```json\n{"score": 9}\n```', '{"a": 1} then {"b": 2}', '{"outer": {"inner": {"deep": 1}}}',
           '{"score": 4, "same": maybe}', "no JSON here", "", "```json\n[1, 2]\n```", "   {\"x\": 2}  "]


def test_reading_is_the_authors_vlm_api_call(authors_clone, monkeypatch):
    """Their _vlm_api_call (from their module, its client stubbed to return each reply) and the project's
    first-object reader give the same object, or both none."""
    from bench_resources.judge.openai import _read_first_object
    from tests.support.entitybench_authors_code import authors_module
    from tests.support.fake_openai import completion
    monkeypatch.setenv("BENCH_ENTITYBENCH_AUTHORS_CODE", str(authors_clone))
    mod = authors_module()
    for raw in REPLIES:
        monkeypatch.setattr(mod, "_get_rotating_vlm_client",
                            lambda raw=raw: type("C", (), {"call": lambda self, **kw: raw.strip()})())
        theirs = mod._vlm_api_call([], "prompt", "m")
        ours = _read_first_object(completion(raw)["body"]).answer
        theirs = theirs if isinstance(theirs, dict) else None
        assert ours == theirs, (raw, ours, theirs)


def test_wire_and_texts_are_the_authors_and_enter_the_protocol_digest(authors_clone, monkeypatch):
    """AUTHORS_WIRE's max_tokens is their BENCHMARK_CONFIG's; prompt_set_id names the wire, so a change of wire
    is another protocol digest (answers from two wires are never comparable)."""
    from dataclasses import replace

    from bench_assets.entitybench import judging as J
    from bench_assets.entitybench import wiring
    from bench_resources.judge import Judge
    from bench_resources.models import ModelRegistry
    from tests.support.entitybench_authors_code import authors_module
    monkeypatch.setenv("BENCH_ENTITYBENCH_AUTHORS_CODE", str(authors_clone))
    assert authors_module().BENCHMARK_CONFIG["vlm_max_tokens"] == J.AUTHORS_WIRE.max_tokens
    monkeypatch.setenv(J.PROMPTS_ENV, "authors")
    monkeypatch.setenv(J.AUTHORS_CODE_ENV, str(authors_clone))
    models, judge = ModelRegistry(profile="offline"), Judge(mode="off")
    assert J.prompt_set_id().endswith("/" + J.wire_id()) and J.wire_id().startswith(J.AUTHORS_WIRE.name + ".")
    digests = {wiring.protocol(models, ["clip_b32"], judge)}
    for change in ({"name": "entitybench-authors-v0"}, {"max_tokens": 4096}, {"text_first": False}):
        monkeypatch.setattr(J, "AUTHORS_WIRE", replace(J.AUTHORS_WIRE, **change))
        digests.add(wiring.protocol(models, ["clip_b32"], judge))
    assert len(digests) == 4   # a renamed wire, or one field changed without a new name: another protocol each


def test_anchor_is_the_authors_representative(authors_clone, monkeypatch):
    """judged.authors_anchor picks the crop their compute_cross_shot_consistency names representative_shot, also
    for two appearances, where both are equally close in exact arithmetic and float rounding decides (the old
    re-normalising centroid_scores picked the other one in gold-ep3: its images went out in the other order)."""
    import numpy as np

    from bench_assets.entitybench.judged import authors_anchor
    from bench_assets.entitybench.metrics import centroid_scores
    from tests.support.entitybench_authors_code import authors_module
    monkeypatch.setenv("BENCH_ENTITYBENCH_AUTHORS_CODE", str(authors_clone))
    mod = authors_module()
    rng = np.random.default_rng(36)
    disagree = 0
    for trial in range(300):
        n = 2 if trial % 3 else int(rng.integers(3, 7))
        e = rng.standard_normal((n, 768)).astype(np.float32)
        e = e / np.linalg.norm(e, axis=1, keepdims=True)
        keys = [f"1:{i + 1}" for i in range(n)]
        crops = {"X": [mod.EntityCrop("X", "character", "d", k, 0, (0, 0, 1, 1), "", 0.0, e[i])
                       for i, k in enumerate(keys)]}
        _, per, _ = mod.compute_cross_shot_consistency(crops, "character", keys)
        theirs = keys.index(per["X"]["representative_shot"])
        assert authors_anchor(e) == theirs, (trial, n)
        disagree += int(np.argmax(centroid_scores(e)[1])) != theirs
    assert disagree > 0   # the trials do reach the ties the re-normalising arithmetic breaks otherwise
