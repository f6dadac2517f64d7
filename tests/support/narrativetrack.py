"""NarrativeTrack: the embedded videos, the recorded judge their pipeline asks, and a fork of the session world's
store holding chosen videos' item tables (so a test that adds answers and a leaderboard starts from the world's
pipeline output instead of recomputing it)."""
from __future__ import annotations

import ast
import hashlib
import re
import shutil
from collections import Counter
from pathlib import Path

from tests.support.fake_anthropic import tool_answer

VIDEOS = ["nt001", "nt002", "nt003"]
ANSWERERS = ["narrativetrack_claude_haiku", "narrativetrack_claude_sonnet"]
JUDGE_VIDEO = "nt003"  # its pipeline runs with a live judge (the fake server): verification, context, flags, filters


class PipelineJudge:
    """Recorded judge answers by prompt (told apart by the answer schema): every face crop the same person except the
    last one per request ("unsure"); context per segment in free text; flags; grammar fine; options not similar."""

    def __init__(self):
        self.kinds = Counter()

    def __call__(self, body):
        props = body["tools"][0]["input_schema"]["properties"]
        n_img = sum(b["type"] == "image" for b in body["messages"][0]["content"])
        if "verdicts" in props:
            self.kinds["verify"] += 1
            return tool_answer({"verdicts": [{"same_identity": True, "justification": "same face"}] * (n_img - 2)
                                + [{"same_identity": "unsure", "justification": "blurred"}]})
        if "scene" in props and "action" in props:
            # deterministic per segment (requests arrive concurrently): chosen by the segment's first frame
            self.kinds["context"] += 1
            h = int(hashlib.sha256(body["messages"][0]["content"][0]["source"]["data"].encode()).hexdigest(), 16)
            return tool_answer({"action": ["talking on a phone", "waving", "reading a map"][h % 3],
                                "outfit": ["a grey suit", "a black coat", "a red scarf"][(h // 3) % 3],
                                "scene": ["a launch pad", "a temple courtyard"][(h // 9) % 2]})
        if "similar_looking_existence" in props:
            # read the change lists the prompt gives and answer the flags they imply (vetoing nothing)
            self.kinds["flags"] += 1
            text = body["messages"][0]["content"][-1]["text"]
            lists = {a: ast.literal_eval(re.search(rf"{a} changes (\[.*?\])[;.]", text).group(1))
                     for a in ("action", "outfit", "scene")}
            return tool_answer({f"significant_{a}_transition": len(v) >= 2 for a, v in lists.items()}
                               | {f"over_three_{a}_changes": len(set(v)) >= 3 for a, v in lists.items()}
                               | {"similar_looking_existence": True, "other_entities": []})
        if "grammar" in props:
            self.kinds["grammar"] += 1
            return tool_answer({"grammar": "yes", "understandable": "yes", "justification": "fine"})
        self.kinds["similar"] += 1
        return tool_answer({"answer": "no", "justification": "different"})


def fork_items(src_root: str | Path, dst_root: str | Path, assets: list[str], items: list[str]) -> Path:
    """A new store at ``dst_root`` holding the tables of ``assets`` for the partitions of ``items`` only (each table's
    ``<dim>=<item>`` folders) and every artifact (crops are content-addressed: extra ones are never read)."""
    src, dst = Path(src_root), Path(dst_root)
    for name in assets:
        table = src / "tables" / name
        for part in table.rglob("part.parquet"):
            segs = part.relative_to(table).parts[:-1]
            if any(s.split("=", 1)[1] in items for s in segs if "=" in s):
                out = dst / "tables" / name / part.relative_to(table)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(part, out)
    if (src / "artifacts").exists():
        shutil.copytree(src / "artifacts", dst / "artifacts", dirs_exist_ok=True)
    return dst


def run_clips(tmp_path: Path, clips: dict) -> object:
    """Every item asset of NarrativeTrack (judge off, offline models) on the given clips (video id -> file, copied
    into the dataset folder: media stays inside it); the store."""
    import json

    from dagster import instance_for_test, materialize

    from bench_assets.narrativetrack import assets as A
    from bench_resources.config import build_resources
    from bench_resources.judge import Judge
    from bench_resources.paths import BenchPaths
    root = Path(tmp_path) / "data" / "narrativetrack"
    (root / "videos").mkdir(parents=True)
    for k, v in clips.items():
        shutil.copyfile(v, root / "videos" / Path(v).name)
    (root / "videos.json").write_text(json.dumps({"videos": [{"video_id": k, "file": f"videos/{Path(v).name}"}
                                                             for k, v in clips.items()]}))
    paths = BenchPaths(data_root=str(Path(tmp_path) / "data"), generators_root=str(Path(tmp_path) / "gens"))
    res = build_resources(store_root=str(Path(tmp_path) / "store"), paths=paths, judge=Judge(mode="off"))
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with instance_for_test() as inst:
        inst.add_dynamic_partitions(A.P.items.name, list(clips))
        for vid in clips:
            assert materialize(A.ASSETS, selection=A.ITEM_ASSETS, partition_key=vid, instance=inst, resources=res,
                               run_config=quiet).success, vid
    return res["store"]
