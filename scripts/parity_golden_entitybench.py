"""Golden outputs of EntityBench's own evaluator: runs the authors' ``eval/evaluate_benchmark.py`` (GitHub
``Catherine-R-He/EntityBench``, commit 3776439, from a scratch clone that is never copied into the project) on the
fixtures of tests/support/entitybench_golden.py and writes ``tests/parity/golden/entitybench/{episodes,report,
requests}.json``.

    git clone -q https://github.com/Catherine-R-He/EntityBench /tmp/eb     # or the mirror's bare repo
    .venv/bin/python -m pip install --target /tmp/eb_site openai     # its judge client, kept out of the venv
    .venv/bin/python scripts/parity_golden_entitybench.py /tmp/eb --site /tmp/eb_site [--work /tmp/eb_work]

What runs, all of it the authors' code: ``evaluate_episode(..., pillars={2, 3}, device="cpu")`` per episode (frame
extraction, the unified grounding pass with CLIP matching and the selection score, crops, DINOv2 embeddings,
presence, fidelity, action grids, the fidelity gate, CS-Face / CS-Object, CS-Transition, the pairwise LLM face /
object judge against the centroid-representative anchor, the location set judge, gap decay), then
``aggregate_results`` (the per-tier report). What is given to it:
- DINOv2 and CLIP: seeded random transformers checkpoints of the same architectures (``DINO_MODEL_PATH``,
  ``CLIP_MODEL_PATH``, the variables its loaders read), their image processors pinned to the PIL backend
  (transformers 4's default; transformers 5 would pick torchvision; recorded as ``processor_backend`` in the meta);
- GroundingDINO (not installable here): ``groundingdino.util.inference.predict`` answers with the fixtures' key-colour
  detector (boxes in GroundingDINO's normalised cx, cy, w, h, a quarter pixel inside so that the authors' int()
  lands on the fixture's pixel box); its transform passes the frame through;
- the VLM: its own Azure OpenAI client pointed (``AZURE_OPENAI_ENDPOINT``) at the fixtures' judge on 127.0.0.1.
  ``requests.json`` is every request that judge received, per episode, in a canonical order: path, the headers
  that reach an endpoint, and the body with each prompt text and image replaced by digests (their texts are not
  stored here; images by media type, bytes, decoded pixels and size). tests/parity/test_entitybench_wire.py
  compares the project's requests under ``judge_prompts: authors`` with it. The full bodies stay in ``--work``.
Pillar 1 (VBench) is not run here: its parity is with VBench's own code (tests/parity/test_parity_vbench.py).

The output has no paths, times or run-specific values, and torch runs on one thread: two runs write the same bytes
(``--check`` reruns and compares sha256 with the files in place).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOLDEN = ROOT / "tests" / "parity" / "golden" / "entitybench"
COMMIT = "3776439e7037b2128ac3b5d2d1ce63e424cca166"

from tests.support import entitybench_golden as fx  # noqa: E402
from tests.support import entitybench_project as wp  # noqa: E402


def stub_groundingdino():
    """The fixtures' detector in GroundingDINO's interface (predict's boxes: normalised cx, cy, w, h)."""
    import numpy as np
    import torch
    pkg = types.ModuleType("groundingdino")
    util = types.ModuleType("groundingdino.util")
    inf = types.ModuleType("groundingdino.util.inference")
    ds = types.ModuleType("groundingdino.datasets")
    tr = types.ModuleType("groundingdino.datasets.transforms")

    class Compose:
        def __init__(self, ts):
            pass

        def __call__(self, img, target):
            return img, target   # the PIL frame itself: predict reads its pixels

    tr.Compose = Compose
    tr.RandomResize = tr.ToTensor = tr.Normalize = lambda *a, **k: None

    def predict(model, image, caption, box_threshold, text_threshold, device="cpu"):
        frame = np.asarray(image)
        h, w = frame.shape[:2]
        boxes, logits = [], []
        for (x1, y1, x2, y2), conf in fx.detect_boxes(frame, fx.entity_for_query(caption)):
            a, b, c, d = x1 + .25, y1 + .25, x2 + .25, y2 + .25
            boxes.append([(a + c) / 2 / w, (b + d) / 2 / h, (c - a) / w, (d - b) / h])
            logits.append(conf)
        return (torch.tensor(boxes, dtype=torch.float64).reshape(-1, 4), torch.tensor(logits, dtype=torch.float64),
                [caption] * len(boxes))

    inf.load_model = lambda cfg, wts, device="cpu": "fixture-detector"
    inf.predict = predict
    for m in (pkg, util, inf, ds, tr):
        sys.modules[m.__name__] = m


PROCESSOR_BACKEND = wp.PROCESSOR_BACKEND
PROCESSOR_NOTE = "pil (transformers 4 default; the authors' transformers version is unpinned)"


def pin_processor_backend():
    """Their loaders call ``AutoImageProcessor.from_pretrained(path)`` / ``CLIPProcessor.from_pretrained(path)``
    with no backend; transformers 5 then picks torchvision, transformers 4 (their era: torch 2.5.1 pinned,
    transformers not) the PIL processors. Pin PIL, as the project's side does (tests/support/entitybench_project)."""
    import transformers
    for cls in (transformers.AutoImageProcessor, transformers.CLIPProcessor):
        original = cls.from_pretrained.__func__

        def from_pretrained(klass, *args, _original=original, **kwargs):
            kwargs.setdefault("backend", PROCESSOR_BACKEND)
            return _original(klass, *args, **kwargs)
        cls.from_pretrained = classmethod(from_pretrained)


def clean(obj):
    """Drop what names this run's folders (crop paths); keep every number as the authors' code produced it."""
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items() if not k.endswith("_path")}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return obj.item()
    return obj


def run(clone: Path, work: Path) -> dict:
    import torch
    torch.set_num_threads(1)
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if head != COMMIT:
        raise SystemExit(f"{clone} is at {head}, the golden files are for {COMMIT}")
    ck = fx.checkpoints(str(work / "checkpoints"))
    results = work / "results"
    eps = fx.write_results(results)
    (work / "gdino.cfg").write_text("fixture")
    os.environ.update(DINO_MODEL_PATH=ck["dino"], CLIP_MODEL_PATH=ck["clip"], GDINO_CONFIG=str(work / "gdino.cfg"),
                      GDINO_WEIGHTS=str(work / "gdino.cfg"), AZURE_OPENAI_API_KEY="fixture", TOKENIZERS_PARALLELISM="false")
    stub_groundingdino()
    pin_processor_backend()
    sys.path.insert(0, str(clone / "eval"))
    import evaluate_benchmark as eb

    grounding: dict[str, dict] = {}
    original = eb.ground_shot_unified

    def recorded(**kw):   # the unified pass as it ran: what the project's grounding must choose
        out = original(**kw)
        grounding[kw["shot_key"]] = {
            name: {"etype": g["etype"], "status": g["status"], "is_small": g["is_small"],
                   "is_low_confidence": g["is_low_confidence"],
                   "frame_idx": g["canonical"].frame_idx if g["canonical"] else None,
                   "bbox": list(g["canonical"].bbox) if g["canonical"] else None,
                   "clip": g["canonical"].clip_text_sim if g["canonical"] else None,
                   "components": g["canonical_score_components"],
                   "n_detections": len(g["all_detections"])}
            for name, g in out["per_entity"].items()}
        return out

    eb.ground_shot_unified = recorded
    intra: dict[str, dict] = {}
    original_intra = eb.evaluate_intra_shot_alignment

    def recorded_intra(**kw):   # Pillar 3 per shot: the fidelity the gate reads, the action verdict
        ev = original_intra(**kw)
        intra[kw["shot_key"]] = {"fidelity": {n: {"overall": f["overall"], "criteria": f["criteria"],
                                                  "vlm_failed": f["vlm_failed"]}
                                              for t in ev["fidelity"].values() for n, f in t.items()},
                                 "action": {k: v for k, v in ev["action"].items() if k != "reason"}}
        return ev

    eb.evaluate_intra_shot_alignment = recorded_intra
    tiers = {e: t for t, ids in fx.TIERS.items() for e in ids}
    per_episode, results_list, wire, wire_raw = {}, [], {}, []
    with fx.JudgeServer() as judge:
        os.environ["AZURE_OPENAI_ENDPOINT"] = judge.url
        for eid, script in eps.items():
            grounding.clear()
            intra.clear()
            n0 = len(judge.requests)
            r = eb.evaluate_episode(eid, str(results), script, tiers[eid], {2, 3}, device="cpu",
                                    work_dir=str(work / "eval_work"), llm_concurrency=1)
            results_list.append(r)
            wire[eid] = judge.bodies[len(wire_raw):]
            wire_raw.extend(wire[eid])
            per_episode[eid] = clean({"tier": tiers[eid], "num_shots": r.num_shots,
                                      "metrics": {m: mv.to_json() for m, mv in sorted(r.metrics.items())},
                                      "per_entity_scores": r.per_entity_scores,
                                      "gap_decay_data": r.gap_decay_data,
                                      "grounding": dict(sorted(grounding.items())),
                                      "intra": dict(sorted(intra.items())),
                                      "judge_keys": sorted(q["key"] for q in judge.requests[n0:])})
    report = clean(eb.aggregate_results(results_list, fx.TIERS))
    meta = {"source": "Catherine-R-He/EntityBench", "commit": COMMIT, "file": "eval/evaluate_benchmark.py",
            "pillars": [2, 3], "all_metrics": list(eb.ALL_METRICS), "config": dict(eb.BENCHMARK_CONFIG),
            "transformers": __import__("transformers").__version__, "torch": torch.__version__.split("+")[0],
            "processor_backend": PROCESSOR_NOTE}
    # their requests in full (prompt texts included) stay in the scratch folder, for reading a difference
    (work / "requests_full.json").write_text(json.dumps(wire, indent=1, sort_keys=True))
    requests = {eid: wp.wire_records(b) for eid, b in wire.items()}
    return {"meta": meta, "episodes": per_episode, "report": report, "requests": requests}


def write(out: dict) -> dict[str, str]:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    files = {"episodes.json": {"meta": out["meta"], "episodes": out["episodes"]},
             "report.json": {"meta": out["meta"], "report": out["report"]},
             "requests.json": {"meta": out["meta"], "requests": out["requests"]}}
    digests = {}
    for name, obj in files.items():
        data = (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode()
        (GOLDEN / name).write_bytes(data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("clone", type=Path, help=f"a clone of Catherine-R-He/EntityBench at {COMMIT[:7]}")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (checkpoints, videos, crops)")
    ap.add_argument("--site", type=Path, default=None,
                    help="a folder with the `openai` package its judge client imports (pip install --target FOLDER "
                         "openai), appended to sys.path when the project's environment has none")
    a = ap.parse_args()
    if a.site:
        sys.path.append(str(a.site))
    work = a.work or Path(tempfile.mkdtemp(prefix="eb_golden_"))
    digests = write(run(a.clone.resolve(), work))
    print(json.dumps(digests, indent=1))


if __name__ == "__main__":
    main()
