"""Golden fixtures for ViStoryBench's aggregation: runs the official code (ViStoryBench/vistorybench) on fixed small
inputs and writes tests/parity/golden/vistorybench/{inputs,outputs}.json with the commit it ran. The official code
runs from its own copy, never from the project, and no model is loaded: the inputs are the numbers the models would
give (unit feature vectors, judge replies, aesthetic scores), built here from a seed.

    # a copy of the repository's python tree (the commit below was 514cc31f2a7130550b48b8f2c66d18b6b6880a9c)
    git clone https://github.com/ViStoryBench/vistorybench /tmp/vistory_src
    mkdir -p /tmp/vistory_ref && git -C /tmp/vistory_src archive HEAD vistorybench utils | tar -x -C /tmp/vistory_ref
    .venv/bin/python scripts/parity_golden_vistorybench.py /tmp/vistory_ref --commit <sha>

What runs, all of it the official code:
- CIDS and copy-paste: ``CIDSEvaluator.evaluate``'s per-character and per-story aggregation block (from the comment
  "Aggregate per-character and story metrics" to the end of the ``results["metrics"]`` try-block). It is inline
  in ``evaluate``, whose other parts need Grounding DINO, ArcFace and the dataset, so the block's source is read
  from cids_evaluator.py and executed as it stands, with ``self`` an evaluator whose ``get_char_feat`` returns the
  fixed features of the crops and whose ``_compute_multimodel_similarity_matrix`` is the official method.
  The modules the evaluator imports for its models (insightface, groundingdino, facexlib, AdaFace) are stubbed.
- CSD: ``CSDEvaluator.get_self_csd_score`` and ``get_cross_csd_score``, with ``_get_image_embed`` returning the
  fixed style vector of each image path.
- CSD preprocessing: ``CSDEvaluator._preprocess`` and ``_encode`` on three fixed images (two scikit-image
  photographs, one seeded noise image), the encoder a stub that average-pools the tensor to 16 x 16.
- Aesthetic: ``AestheticEvaluator.evaluate`` with ``load_outputs`` and ``get_aesthetic_score`` returning fixed
  values.
- Single-character action: the per-shot block of ``CIDSEvaluator.evaluate``'s shot loop (from "Aggregate
  single_character_action for this shot" to ``pa_story_scores.append``), read from its source and executed per
  shot with the fixture's judge scores of the matched characters, then the story line of the aggregation block
  above (``int(round(mean of the shot values))``).
- Prompt alignment: ``PromptAlignEvaluator.evaluate`` with ``gptv_query`` returning fixed "Score: N" replies (its
  own regex parses them), then ``utils/summarize_leaderboard._compute_pa_avg_from_row`` for the total.
- Across stories: ``ResultManager._aggregate_story_metrics_mean`` (the newest snapshot's summary: the mean of the
  per-story values).
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import textwrap
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "parity" / "golden" / "vistorybench"
DIM = 8


def unit(rng, n, base=None, noise=0.6):
    v = rng.normal(size=(n, DIM)) * noise + (0 if base is None else base)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def build_inputs(seed: int = 24) -> dict:
    rng = np.random.default_rng(seed)
    stories = {}
    # story 01: three characters (3, 1 and 0 matched crops); story 02: one character with 2 crops. Different counts
    # per story make a pooled mean over characters differ from the mean of per-story means.
    # story 03: one character never matched (no crop at all: the official copy-paste is "null" there).
    for sid, plan in (("01", {"A": (3, 3), "B": (2, 1), "C": (1, 0)}), ("02", {"D": (2, 2)}), ("03", {"E": (1, 0)})):
        chars = {}
        for key, (n_ref, n_crop) in plan.items():
            base = rng.normal(size=DIM)
            refs = unit(rng, n_ref, base, 0.4)
            mirror = unit(rng, 1, refs[0], 0.3)
            crops = unit(rng, n_crop, base, 0.5) if n_crop else np.zeros((0, DIM))
            chars[key] = {"references": refs.tolist(), "mirror": mirror[0].tolist(), "crops": crops.tolist()}
        stories[sid] = chars
    style = {f"gen{i}": unit(rng, 1)[0].tolist() for i in range(4)}
    style |= {f"ref_{c}": unit(rng, 1)[0].tolist() for c in "ABC"}
    csd = {"characters": {"A": ["ref_A"], "B": ["ref_B"], "C": ["ref_C"]},
           # shot 3 has nobody on stage: the official code falls back to the first character with images
           "shots": [{"index": 1, "character_key": ["A"]}, {"index": 2, "character_key": ["A", "B"]},
                     {"index": 3, "character_key": []}, {"index": 4, "character_key": ["C", "B"]}],
           "outputs": {"1": "gen0", "2": "gen1", "3": "gen2", "4": "gen3"}, "style": style}
    aesthetic = {"01": [4.25, 5.5, 3.75], "02": [6.0, 4.5]}
    # judge replies per (story, shot, dimension) in the official reply format; 0-4
    judge = {sid: {str(s): {d: int(rng.integers(0, 5)) for d in ("scene", "character_action", "camera")}
                   for s in range(1, n + 1)} for sid, n in (("01", 3), ("02", 2))}
    # single-character action: the judge's 0-4 score per (story, shot, matched character). Chosen so that Python's
    # round (half to even) decides: story 01 shot 1 (2.5 -> 2), shot 3 (1.5 -> 2), story (2, 3, 2) -> 2; story 02
    # shot 1 (2.5 -> 2), story (2, 4, 4) -> 3. The unrounded means (2.2, 3.25) and round-half-up (3, 4) differ.
    single = {"01": {"1": {"A": 2, "B": 3}, "2": {"A": 3}, "3": {"A": 1, "B": 2}},
              "02": {"1": {"D": 2, "F": 3}, "2": {"D": 4}, "3": {"D": 4}}}
    return {"seed": seed, "dim": DIM, "cids": stories, "csd": csd, "aesthetic": aesthetic,
            "prompt_align": {"judge": judge, "single_character": single},
            "csd_pixels": {"skimage": ["chelsea", "coffee"], "noise_seed": seed, "noise_shape": [96, 160]}}


def stub_modules():
    for name in ("insightface", "groundingdino", "groundingdino.util", "groundingdino.util.inference",
                 "facexlib", "facexlib.utils", "facexlib.utils.face_restoration_helper",
                 "vistorybench.bench.content.AdaFace", "vistorybench.bench.content.AdaFace.inference"):
        sys.modules[name] = types.ModuleType(name)
    inf = sys.modules["groundingdino.util.inference"]
    inf.load_model = inf.load_image = inf.predict = inf.annotate = None
    sys.modules["facexlib.utils.face_restoration_helper"].FaceRestoreHelper = None
    ada = sys.modules["vistorybench.bench.content.AdaFace.inference"]
    ada.load_pretrained_model = ada.to_input = None
    ada.adaface_models = {}
    if "natsort" not in sys.modules:
        try:
            import natsort  # noqa: F401
        except ImportError:
            sys.modules["natsort"] = types.SimpleNamespace(natsorted=sorted)


def aggregation_block(src: str) -> str:
    """The official per-character / per-story block of CIDSEvaluator.evaluate, dedented."""
    lines = src.splitlines()
    start = next(i for i, ln in enumerate(lines) if "# Aggregate per-character and story metrics" in ln)
    end = next(i for i in range(start, len(lines)) if "failed to compute CIDS story metrics" in lines[i])
    return textwrap.dedent("\n".join(lines[start:end + 1]))


def single_action_block(src: str) -> str:
    """The official per-shot single_character_action block of CIDSEvaluator.evaluate's shot loop (from the comment
    "Aggregate single_character_action for this shot" to ``pa_story_scores.append``), dedented."""
    lines = src.splitlines()
    start = next(i for i, ln in enumerate(lines) if "# Aggregate single_character_action for this shot" in ln)
    end = next(i for i in range(start, len(lines)) if "pa_story_scores.append(shot_pa_mean)" in lines[i])
    return textwrap.dedent("\n".join(lines[start:end + 1]))


def run_single_action(src: str, shots: dict) -> tuple[list, dict]:
    """The official per-shot block over {shot: {character name: judge score}}: (pa_story_scores, detail)."""
    block = compile(single_action_block(src), "cids_evaluator.py:evaluate (single_character_action)", "exec")
    ns = {"pa_available": True, "pa_story_scores": [], "pa_detailed_scores": {}}
    for shot, scores in shots.items():
        ns |= {"shot_id": int(shot), "pa_char_scores": dict(scores)}
        exec(block, ns)
    return ns["pa_story_scores"], ns["pa_detailed_scores"]


def run_cids(ref: Path, inputs: dict) -> dict:
    import torch
    mod = importlib.import_module("vistorybench.bench.content.cids_evaluator")
    ev = object.__new__(mod.CIDSEvaluator)
    ev.ensemble_method = "average"
    ev.use_multi_face_encoder = False
    src = (ref / "vistorybench/bench/content/cids_evaluator.py").read_text()
    block = aggregation_block(src)
    out = {}
    for sid, chars in inputs["cids"].items():
        single = inputs["prompt_align"]["single_character"].get(sid)
        pa_story_scores, pa_detail = run_single_action(src, single) if single else ([], {})
        crops = {k: torch.tensor(c["crops"], dtype=torch.float32) for k, c in chars.items()}
        # a "crop image" is (character, row); its feature is that row of the fixture
        ev.get_char_feat = lambda imgs, encoder_name=None, **kw: torch.stack([crops[k][j] for k, j in imgs])
        ns = {"self": ev, "torch": torch, "np": np, "CHARACTER": list(chars),
              "Characters": {k: {"tag": "non_human", "name": k} for k in chars},
              "char_pil_imgs": {k: [(k, j) for j in range(len(c["crops"]))] for k, c in chars.items()},
              "ref_clip_feats": {k: torch.tensor(c["references"], dtype=torch.float32) for k, c in chars.items()},
              "ref_copy_paste_feats": {k: torch.tensor([c["references"][0], c["mirror"]], dtype=torch.float32)
                                       for k, c in chars.items()},
              "results": {"cids": {}}, "occm_scores": [], "pa_available": bool(single),
              "pa_story_scores": pa_story_scores, "story_id": sid}
        exec(compile(block, "cids_evaluator.py:evaluate (aggregation block)", "exec"), ns)
        r = ns["results"]
        out[sid] = {"cids": r["cids"], "copy-paste-score": r["copy-paste-score"], "metrics": r["metrics"]}
        if single:
            out[sid]["single_character_action_shots"] = {str(k): v for k, v in pa_detail.items()}
    manager = importlib.import_module("vistorybench.result_management.manager")
    across = manager.ResultManager._aggregate_story_metrics_mean(None, {s: {"metrics": v["metrics"]}
                                                                       for s, v in out.items()})
    return {"stories": out, "across_stories": across}


def run_csd(inputs: dict) -> dict:
    import torch
    mod = importlib.import_module("vistorybench.bench.style.csd_evaluator")
    c = inputs["csd"]
    ev = object.__new__(mod.CSDEvaluator)
    ev._get_image_embed = lambda path: torch.tensor([c["style"][path]], dtype=torch.float32)
    story = {"characters": {k: {"images": v} for k, v in c["characters"].items()}, "shots": c["shots"]}
    outputs = {"shots": {int(k): v for k, v in c["outputs"].items()}}
    cross, details = ev.get_cross_csd_score(story, outputs)
    return {"self_csd": ev.get_self_csd_score(list(outputs["shots"].values())), "cross_csd": cross,
            "per_shot": {str(d["index"]): d["score"] for d in details},
            "per_shot_characters": {str(d["index"]): [x["character_key"] for x in d["character_scores"]]
                                    for d in details}}


POOL = 16   # the stub CSD encoder's output: the preprocessed image average-pooled to 16 x 16 (768 numbers)


def csd_images(inputs: dict) -> list:
    """The fixture's images for the CSD preprocessing (RGB uint8): two scikit-image photographs (3:2 and 4:3) and a
    seeded noise image (96 x 160), the shapes a crop to square would change."""
    import skimage.data as sd
    spec = inputs["csd_pixels"]
    noise = np.random.default_rng(spec["noise_seed"]).integers(0, 256, (*spec["noise_shape"], 3), dtype=np.uint8)
    return [getattr(sd, n)() for n in spec["skimage"]] + [noise]


def run_csd_pixels(inputs: dict) -> dict:
    """``CSDEvaluator._preprocess`` then ``_encode`` (the official resize and normalisation) with the evaluator's
    own size / mean / std, its ``csd_encoder`` a stub that average-pools the tensor it is given."""
    import torch
    from PIL import Image
    mod = importlib.import_module("vistorybench.bench.style.csd_evaluator")
    ev = object.__new__(mod.CSDEvaluator)
    ev.device = "cpu"
    # the values CSDEvaluator.__init__ sets (it also loads the model, which is not needed here)
    ev.csd_size, ev.csd_mean, ev.csd_std = 224, [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
    ev.csd_encoder = lambda x: {"style": torch.nn.functional.adaptive_avg_pool2d(x, POOL).flatten(1)}
    out = [ev._encode(ev._preprocess(Image.fromarray(im).convert("RGB")))[0].tolist() for im in csd_images(inputs)]
    return {"pool": POOL, "size": ev.csd_size, "pooled": out}


def run_aesthetic(inputs: dict) -> dict:
    mod = importlib.import_module("vistorybench.bench.quality.aesthetic_evaluator")
    ev = object.__new__(mod.AestheticEvaluator)
    ev.output_path, ev.mode, ev.language, ev.outputs_timestamp = "", "base", "en", None
    out = {}
    for sid, scores in inputs["aesthetic"].items():
        paths = {i + 1: f"{sid}/{i + 1}" for i in range(len(scores))}
        mod.load_outputs = lambda **kw: {sid: {"shots": paths}}
        ev.get_aesthetic_score = lambda p: scores[int(p.split("/")[1]) - 1]
        out[sid] = ev.evaluate("m", sid)["metrics"]
    manager = importlib.import_module("vistorybench.result_management.manager")
    return {"stories": out, "across_stories": manager.ResultManager._aggregate_story_metrics_mean(
        None, {s: {"metrics": v} for s, v in out.items()})}


def run_prompt_align(ref: Path, inputs: dict, cids: dict) -> dict:
    mod = importlib.import_module("vistorybench.bench.prompt_align.prompt_align_evaluator")
    board = importlib.import_module("utils.summarize_leaderboard")
    ev = object.__new__(mod.PromptAlignEvaluator)
    ev.gpt_api_pkg, ev.workers = ("gpt-4.1", "k", "http://127.0.0.1:9"), 1
    ev.output_path, ev.mode, ev.language, ev.outputs_timestamp = "", "base", "en", None
    ev.txt_prompt_list = {d: str(ref / p) for d, p in {
        "scene": "vistorybench/bench/prompt_align/user_prompts/user_prompt_environment_text_align.txt",
        "character_action": "vistorybench/bench/prompt_align/user_prompts/user_prompt_character_text_align.txt",
        "camera": "vistorybench/bench/prompt_align/user_prompts/user_prompt_camera_text_align.txt"}.items()}
    judge = inputs["prompt_align"]["judge"]
    prompts = {}
    mod.load_img_content = lambda path, mode: {"type": "image", "path": path}

    def reply(transcript, **kw):  # the reply names the score the fixture set for this (shot, dimension)
        text, path = transcript[0]["content"][1]["text"], transcript[0]["content"][-1]["path"]
        sid, shot = path.split("/")
        return f"Analysis: fine.\nScore: {judge[sid][shot][prompts[text]]}"
    mod.gptv_query = reply
    stories, rows = {}, {}
    for sid, shots in judge.items():
        data = {"shots": [{"index": int(s), "scene": f"scene {sid}/{s}", "script": f"script {sid}/{s}",
                           "camera": f"camera {sid}/{s}"} for s in shots]}
        for s in shots:
            prompts |= {f"scene {sid}/{s}": "scene", f"script {sid}/{s}": "character_action",
                        f"camera {sid}/{s}": "camera"}
        ev.story_dataset = types.SimpleNamespace(load_story=lambda _sid, d=data: d)
        mod.load_outputs = lambda **kw: {sid: {"shots": {int(s): f"{sid}/{s}" for s in shots}}}
        stories[sid] = ev.evaluate("m", sid)["metrics"]
    manager = importlib.import_module("vistorybench.result_management.manager")
    # the story's single_character_action is the CIDS evaluator's (its metrics), as the leaderboard reads it
    single = {s: cids["stories"][s]["metrics"]["single_character_action"] for s in stories}
    across = manager.ResultManager._aggregate_story_metrics_mean(
        None, {s: {"metrics": v | {"single_character_action": single[s]}} for s, v in stories.items()})
    row = {f"metrics.prompt_align.metrics.{k}": across[k] for k in ("scene", "camera", "character_action")}
    row["metrics.cids.metrics.single_character_action"] = across["single_character_action"]
    return {"stories": stories, "across_stories": across, "pa_avg": board._compute_pa_avg_from_row(row)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ref", help="a copy of ViStoryBench/vistorybench's python tree (vistorybench/, utils/)")
    ap.add_argument("--commit", required=True, help="its commit id (recorded in the fixture)")
    a = ap.parse_args(argv)
    ref = Path(a.ref).resolve()
    sys.path.insert(0, str(ref))
    stub_modules()
    inputs = build_inputs()
    cids = run_cids(ref, inputs)
    outputs = {"source": "ViStoryBench/vistorybench", "commit": a.commit,
               "cids": cids, "csd": run_csd(inputs), "csd_pixels": run_csd_pixels(inputs),
               "aesthetic": run_aesthetic(inputs),
               "prompt_align": run_prompt_align(ref, inputs, cids)}
    GOLDEN.mkdir(parents=True, exist_ok=True)
    (GOLDEN / "inputs.json").write_text(json.dumps(inputs, indent=1) + "\n")
    (GOLDEN / "outputs.json").write_text(json.dumps(outputs, indent=1) + "\n")
    print(json.dumps(outputs, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
