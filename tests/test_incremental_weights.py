"""Issue 25, item 2: a weights change re-runs exactly the assets that load that slot, nothing else. Real files, a
real Dagster instance, MBench (one case, one generator, every generator asset). The image_embedder slot runs the
paper's DINOv2 ViT-B/14 from a checkpoint imported with `bench weights import`'s function (a seeded random
checkpoint of that architecture; the other slots are the offline substitutes). Importing a different checkpoint
re-runs mbench_scores (the one asset that declares image_embedder) and nothing else: the case,
poses, tracks and trigger keep their materialisations. The declarations (core/slots.py) are checked against what
each asset actually loads during the run."""
import shutil

import torch
from dagster import AssetKey, instance_for_test

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.automation import SLOT_FP_TAG, rerun_plan
from bench_assets.core.generators import discover_generators
from bench_assets.core.runner import evaluate
from bench_assets.core.slots import asset_slots, with_needs
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.models.specs import SLOTS
from bench_resources.paths import BenchPaths
from tests.support import DATA

B = BENCHMARKS["mbench"]
CASES = ["a_obj01"]  # one partition: DINOv2 ViT-B/14 on CPU embeds its texture crops in ~40 s
GEN = "mbench_consistent"
SLOT = "image_embedder"


def checkpoint(path, seed):
    """A randomly initialised DINOv2 ViT-B/14 state dict (the paper checkpoint's architecture and file name)."""
    from bench_resources.models.vision import dinov2_module
    torch.manual_seed(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(dinov2_module().state_dict(), path)
    return path


def test_imported_checkpoint_reruns_exactly_the_assets_using_its_slot(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "mbench" / "cases").mkdir(parents=True)
    shutil.copytree(DATA / "mbench" / "frames", data / "mbench" / "frames")
    gen = data / "generators" / GEN
    gen.mkdir(parents=True)
    shutil.copy(DATA / "generators" / GEN / "generator.yaml", gen)
    for c in CASES:
        shutil.copy(DATA / "mbench" / "cases" / f"{c}.json", data / "mbench" / "cases")
        shutil.copy(DATA / "generators" / GEN / f"{c}.mp4", gen)
    # the paper's DINOv2 for this one slot, the offline substitutes for the rest (a slot alternative)
    monkeypatch.setitem(SLOTS[SLOT].alternatives, "dinov2_local", SLOTS[SLOT].paper)
    weights = tmp_path / "weights"
    models = ModelRegistry(profile="offline", weights_dir=str(weights), checkpoints={SLOT: "dinov2_local"})
    assert not models.status(SLOT).available
    models.import_weights(SLOT, checkpoint(tmp_path / "seed0" / "dinov2_vitb14.pth", 0))  # `bench weights import`
    first_fp = models.status(SLOT).fingerprint

    # which slots each asset really loads, recorded from inside the runs (the declarations must cover them)
    from dagster import AssetExecutionContext
    loaded: dict[str, set] = {}
    real_slot = ModelRegistry.slot

    def recording_slot(self, name, device=None):
        try:
            asset = AssetExecutionContext.get().asset_key.to_user_string()
        except Exception:  # noqa: BLE001 - outside an asset
            asset = None
        loaded.setdefault(asset, set()).add(name)
        return real_slot(self, name, device)

    monkeypatch.setattr(ModelRegistry, "slot", recording_slot)
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    store = tmp_path / "store"
    resources = build_resources(paths=paths, store_root=str(store), models=models,
                                judge=Judge(mode="off", cache_dir=str(store / "judge_cache")))
    gens, _ = discover_generators(paths.generators_dir, "mbench")
    gen_assets = list(B.generator_assets)

    def run():
        stats = evaluate(instance, assets=B.assets, resources=resources, partitions=B.partitions, items=CASES,
                         generators=gens, item_assets=list(B.item_assets), generator_assets=gen_assets,
                         aggregate_assets=[], progress=lambda s: None, show_progress=False)
        assert not stats.failed, stats.failed
        return stats

    def texture():
        t = resources["store"].query("SELECT case_id, value FROM mbench_scores WHERE metric_id = 'texture'")
        return dict(zip(t["case_id"], t["value"]))

    with instance_for_test() as instance:
        first = run()
        assert len(first.materialized) == len(CASES) * (1 + len(gen_assets))
        before = texture()
        assert set(before) == set(CASES) and all(v == v for v in before.values()), before  # DINOv2 was used
        for asset, slots in loaded.items():   # every slot an asset loaded is declared for it
            assert asset is not None and set(slots) <= set(with_needs(asset_slots(asset) or ())), (asset, slots)
        assert SLOT in loaded.get("mbench_scores", set())
        run_tags = instance.get_run_by_id(instance.get_runs(limit=1)[0].run_id).tags
        assert SLOT_FP_TAG in run_tags  # the run recorded the checkpoints it ran with
        assert run().materialized == []  # nothing changed, nothing re-runs

        # a different checkpoint for the slot (same file name, other weights)
        models.import_weights(SLOT, checkpoint(tmp_path / "seed1" / "dinov2_vitb14.pth", 1))
        # a model loaded once per process stays loaded (the registry's cache key is the slot and checkpoint name,
        # not its weights): `bench evaluate` and the daemon's runs are new processes; this test is one process
        from bench_resources.models.registry import clear_loaded
        clear_loaded()
        assert models.status(SLOT).fingerprint != first_fp
        keys = [AssetKey(a) for a in gen_assets]
        for c in CASES:
            plan = rerun_plan(instance, B.assets, keys, f"{c}|{GEN}", resources)
            assert {k.to_user_string(): why for k, why in plan.items()} == \
                {"mbench_scores": f"weights changed: slot {SLOT}"}, plan
            assert rerun_plan(instance, B.assets, [AssetKey(a) for a in B.item_assets], c, resources) == {}
        second = run()
        # exactly the asset that loads the slot, in every partition, and nothing else
        assert sorted(second.materialized) == [("mbench_scores", f"{c}|{GEN}") for c in CASES]
        assert second.reruns == {f"weights changed: slot {SLOT}": [("mbench_scores", f"{c}|{GEN}") for c in CASES]}
        after = texture()
        assert all(after[c] != before[c] for c in CASES), (before, after)  # the new weights gave the values
        assert run().materialized == []
    print(f"first run {len(first.materialized)} asset partitions; after the import {len(second.materialized)}: "
          f"{second.materialized}; texture {before} -> {after}")
