"""Issue 25 on ViStoryBench's input assets: a replaced shot image or an edited story marks exactly its partitions
(input files changed, then Dagster's own staleness through the content data versions); unchanged partitions stay
up to date. Real files, a real instance; only the cheap input assets are materialised."""
import json
import shutil

from dagster import AssetKey, instance_for_test, materialize

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.automation import Staleness, rerun_plan
from bench_resources.paths import BenchPaths
from tests.support import DATA

B = BENCHMARKS["vistorybench"]
STORIES = ["01", "02"]
GEN = "vistory_faithful"


def pk(story: str) -> str:
    return str(B.partitions.key(GEN, story))


def test_replaced_shot_and_edited_story_mark_exactly_their_partitions(tmp_path):
    data = tmp_path / "data"
    for s in STORIES:
        shutil.copytree(DATA / "vistorybench" / s, data / "vistorybench" / s)
        shutil.copytree(DATA / "generators" / GEN / s, data / "generators" / GEN / s)
    shutil.copy(DATA / "generators" / GEN / "generator.yaml", data / "generators" / GEN)
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    by_key = {k.to_user_string(): a for a in B.assets for k in getattr(a, "keys", [])}
    story, outputs = by_key["vistorybench_story"], by_key["vistorybench_outputs"]
    keys = [AssetKey("vistorybench_story"), AssetKey("vistorybench_outputs")]
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(B.partitions.items.name, STORIES)
        instance.add_dynamic_partitions(B.partitions.generators.name, [GEN])
        for s in STORIES:
            assert materialize([story], partition_key=s, instance=instance, resources={"paths": paths}).success
            assert materialize([story, outputs], selection=[outputs], partition_key=pk(s),
                               instance=instance, resources={"paths": paths}).success

        def plan(key, pk):
            return {k.to_user_string(): why for k, why in
                    rerun_plan(instance, B.assets, [AssetKey(key)], pk, {"paths": paths}).items()}

        assert all(plan("vistorybench_outputs", pk(s)) == {} for s in STORIES)
        shot = data / "generators" / GEN / "02" / "shot_02.png"
        shutil.copy(DATA / "generators" / GEN / "02" / "shot_01.png", shot)
        assert plan("vistorybench_outputs", pk("02")) == {"vistorybench_outputs": "input files changed"}
        assert plan("vistorybench_outputs", pk("01")) == {}

        meta = data / "vistorybench" / "01" / "story.json"
        doc = json.loads(meta.read_text(encoding="utf-8-sig"))  # the release's files start with a BOM
        meta.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")  # other bytes
        assert plan("vistorybench_story", "01") == {"vistorybench_story": "input files changed"}
        assert plan("vistorybench_story", "02") == {}
        # after the story re-runs, Dagster itself marks what read it stale (its data version is the content)
        assert materialize([story], partition_key="01", instance=instance, resources={"paths": paths}).success
        st = Staleness(instance, B.assets, paths=paths)
        assert st.status(keys[1], pk("01")) == "STALE"
        assert st.status(keys[1], pk("02")) == Staleness.INPUT_CHANGED  # still the replaced shot
