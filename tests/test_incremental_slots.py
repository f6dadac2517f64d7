"""Issue 25, item 2: the model slots each asset declares (core/slots.py, each benchmark's wiring.py), which decide
what a weights change re-runs (core/automation.py Staleness.weights_changed; the end-to-end check with an imported
checkpoint is tests/test_incremental_weights.py). Every declared slot exists; every partitioned asset that loads
models declares its slots; every slot a benchmark's metric specs name is
loaded by one of its assets; a slot built on another brings it along."""
import importlib

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.slots import asset_slots, declared_slots, with_needs
from bench_resources.models.specs import SLOTS

UNDECLARED: set = set()  # assets that would count every slot (the safe side) for want of a declaration


def assets_of(bench):
    return [(k.to_user_string(), a) for a in BENCHMARKS[bench].assets for k in getattr(a, "keys", [])]


def test_declared_slots_exist_and_cover_every_model_using_asset():
    for bench in BENCHMARKS:
        for name, a in assets_of(bench):
            slots = asset_slots(name, a.required_resource_keys)
            if "models" not in a.required_resource_keys:
                assert slots == (), (name, slots)   # loads no model: a weights change never touches it
            elif a.partitions_def is not None and name not in UNDECLARED:
                assert slots is not None, f"{name} loads models but declares no slots"
    assert declared_slots() and all(s in SLOTS for v in declared_slots().values() for s in v), declared_slots()
    assert asset_slots("entitybench_fidelity") == () and asset_slots("mbench_trigger") == ()
    assert asset_slots("mbench_scores") == ("clip_b32", "image_embedder", "object_segmenter", "style_vgg")
    assert asset_slots("t_undeclared", {"models"}) is None   # undeclared: every slot
    from bench_assets.locot2v import assets as locot2v_assets, wiring as locot2v_wiring
    assert set(locot2v_wiring.VISUAL_SLOTS) | set(locot2v_wiring.JUDGED_SLOTS) == set(locot2v_assets.SLOTS)


def test_every_spec_slot_is_loaded_by_an_asset_of_its_benchmark():
    for bench in ("entitybench", "vistorybench", "mbench", "locot2v"):
        loaded = set()
        for name, a in assets_of(bench):
            loaded |= set(with_needs(asset_slots(name, a.required_resource_keys) or ()))
        mod = importlib.import_module(f"bench_assets.{bench}.metric_specs")
        named = {s for v in vars(mod).values() if hasattr(v, "specs") for spec in v.specs for s in spec.slots}
        assert named and named <= loaded, (bench, sorted(named - loaded))


def test_needs_bring_the_slots_a_checkpoint_is_built_on():
    assert "text_embedder" in with_needs(("open_vocab_detector",))   # the offline detector reads text embeddings
    assert "clip_l14" in with_needs(("aesthetic",))                  # the aesthetic head sits on CLIP ViT-L/14
    assert with_needs(("pose",)) == ("pose",)


class Models:
    """A registry's ``status`` with given fingerprints (None: the slot has no weights here)."""

    def __init__(self, fps):
        self.fps = fps

    def status(self, slot):
        from bench_resources.models.base import SlotStatus
        fp = self.fps.get(slot)
        return SlotStatus(slot, "paper", fp is not None, f"{slot} checkpoint", "local", fp, None if fp else "missing")


def test_weights_and_judge_changes_rerun_only_what_uses_them(tmp_path):
    """On a real instance: runs record the slots' fingerprints; a changed checkpoint re-runs the assets declaring
    its slot, a provided missing weight re-runs the asset that failed for it, a judge change only the asset that
    asks the judge; evaluator failures elsewhere stay put."""
    from dagster import AssetKey, Output, asset, instance_for_test, materialize
    from bench_assets.core.automation import Staleness, evaluator_tags, rerun_plan
    from bench_assets.core.slots import declare_slots
    from bench_resources.judge import Judge

    declare_slots({"t_embeds": ("image_embedder",), "t_poses": ("pose",)})

    @asset(required_resource_keys={"models"})
    def t_embeds():
        return Output(1, metadata={"evaluator_failures": 0})

    @asset(required_resource_keys={"models"})
    def t_poses():   # failed for its missing pose weights
        return Output(1, metadata={"evaluator_failures": 2})

    @asset(required_resource_keys={"judge"})
    def t_asks():    # failed for judge questions
        return Output(1, metadata={"evaluator_failures": 3})

    @asset
    def t_plain():
        return Output(1, metadata={"evaluator_failures": 0})

    assets = [t_embeds, t_poses, t_asks, t_plain]
    keys = [AssetKey(n) for n in ("t_embeds", "t_poses", "t_asks", "t_plain")]
    a = Models({"image_embedder": "aaa", "pose": None, "face": "fff"})
    judge = Judge(mode="off", cache_dir=str(tmp_path / "c"))
    with instance_for_test() as instance:
        assert materialize(assets, instance=instance, resources={"models": a, "judge": judge},
                           tags=evaluator_tags({"models": a, "judge": judge})).success

        def plan(models, j=judge):
            return {k.to_user_string(): why for k, why in
                    rerun_plan(instance, assets, keys, None, {"models": models, "judge": j}).items()}

        assert plan(a) == {}
        assert plan(Models({**a.fps, "face": "f2"})) == {}   # a slot no asset here loads
        assert plan(Models({**a.fps, "image_embedder": "bbb"})) == {"t_embeds": "weights changed: slot image_embedder"}
        assert plan(Models({**a.fps, "pose": "ppp"})) == {"t_poses": "weights changed: slot pose"}
        other = Judge(mode="replay", cache_dir=str(tmp_path / "c"))
        # off -> replay is another judge identity (issue 39): the asset that asks the judge, nothing else
        assert plan(a, other) == {"t_asks": "judge changed: judge switched on (anthropic-messages claude-sonnet-4-6)"}
        st = Staleness(instance, assets, models=Models({"image_embedder": "bbb", "pose": "ppp"}))
        assert st.weights_changed(AssetKey("t_asks"), None) == [] and st.weights_changed(AssetKey("t_plain"), None) == []
        assert st.status(AssetKey("t_embeds"), None) == Staleness.WEIGHTS_CHANGED


def test_a_run_without_recorded_fingerprints_falls_back_to_the_assets_slot_manifest():
    """Materialize in the UI records no run tags; an asset that records its slots' manifest in its metadata (as
    EntityBench's and ViStoryBench's model assets do) is still marked stale by a changed checkpoint of its slots."""
    from dagster import AssetKey, MetadataValue, Output, asset, instance_for_test, materialize
    from bench_assets.core.automation import Staleness
    from bench_assets.core.slots import declare_slots

    a = Models({"image_embedder": "aaa", "face": "fff"})
    manifest = {s: {"checkpoint": a.status(s).checkpoint, "fingerprint": a.status(s).fingerprint, "available": True}
                for s in ("image_embedder", "face")}
    declare_slots({"t_ui": ("image_embedder", "face"), "t_ui_bare": ("image_embedder",)})

    @asset(required_resource_keys={"models"})
    def t_ui():
        return Output(1, metadata={"models": MetadataValue.json(manifest)})

    @asset(required_resource_keys={"models"})
    def t_ui_bare():   # no manifest, no run tag: unknown, not changed
        return Output(1)

    with instance_for_test() as instance:
        assert materialize([t_ui, t_ui_bare], instance=instance, resources={"models": a}).success
        same = Staleness(instance, [t_ui, t_ui_bare], models=a)
        assert same.weights_changed(AssetKey("t_ui"), None) == []
        moved = Staleness(instance, [t_ui, t_ui_bare], models=Models({"image_embedder": "aaa", "face": "f2"}))
        assert moved.weights_changed(AssetKey("t_ui"), None) == ["face"]
        assert moved.weights_changed(AssetKey("t_ui_bare"), None) == []
