"""Issue 25 on the other input assets: a LoCoT2V sample file, a LoCoT2V output video, a NarrativeTrack video and its
sampling rate are versioned by content: an edit marks exactly its partition (input files changed), the others stay
up to date. Real files, a real instance; only the cheap input assets are materialised."""
import json
import shutil

from dagster import AssetKey, AssetMaterialization, instance_for_test, materialize

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.automation import INPUT_SHA_KEY, current_input_version, input_changed, rerun_plan
from bench_resources.paths import BenchPaths
from tests.support import DATA


def plan(instance, bench, key, pk, paths):
    return {k.to_user_string(): why for k, why in
            rerun_plan(instance, BENCHMARKS[bench].assets, [AssetKey(key)], pk, {"paths": paths}).items()}


def by_key(bench):
    return {k.to_user_string(): a for a in BENCHMARKS[bench].assets for k in getattr(a, "keys", [])}


def test_locot2v_sample_and_video_versions(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA / "locot2v" / "samples", data / "locot2v" / "samples")
    ids = sorted(p.stem for p in (data / "locot2v" / "samples").glob("*.json"))[:2]
    gen = data / "generators" / "locot2v_smooth"
    gen.mkdir(parents=True)
    for i in ids:
        shutil.copy(DATA / "generators" / "locot2v_smooth" / f"{i}.mp4", gen)
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    P = BENCHMARKS["locot2v"].partitions
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(P.items.name, ids)
        instance.add_dynamic_partitions(P.generators.name, ["locot2v_smooth"])
        sample = by_key("locot2v")["locot2v_sample"]
        for i in ids:
            assert materialize([sample], partition_key=i, instance=instance, resources={"paths": paths}).success
            # the visual asset's record as its run leaves it (the asset itself needs the video models)
            pk = str(P.key("locot2v_smooth", i))
            instance.report_runless_asset_event(AssetMaterialization(
                "locot2v_visual", partition=pk,
                metadata={INPUT_SHA_KEY: current_input_version("locot2v_visual", paths, pk)}))
        assert all(plan(instance, "locot2v", "locot2v_sample", i, paths) == {} for i in ids)

        path = data / "locot2v" / "samples" / f"{ids[0]}.json"
        doc = json.loads(path.read_text())
        path.write_text(json.dumps(doc, indent=3))
        assert plan(instance, "locot2v", "locot2v_sample", ids[0], paths) == {"locot2v_sample": "input files changed"}
        assert plan(instance, "locot2v", "locot2v_sample", ids[1], paths) == {}

        # (a runless record has no code version, so Dagster calls it stale anyway: ask the content check itself)
        pk0, pk1 = (str(P.key("locot2v_smooth", i)) for i in ids)
        visual = AssetKey("locot2v_visual")
        assert not input_changed(instance, visual, pk0, paths) and not input_changed(instance, visual, pk1, paths)
        shutil.copy(DATA / "generators" / "locot2v_jerky" / f"{ids[1]}.mp4", gen / f"{ids[1]}.mp4")
        assert input_changed(instance, visual, pk1, paths) and not input_changed(instance, visual, pk0, paths)


def test_narrativetrack_video_and_its_index_entry(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA / "narrativetrack", data / "narrativetrack")
    paths = BenchPaths(data_root=str(data))
    index = json.loads((data / "narrativetrack" / "videos.json").read_text())
    vids = [v["video_id"] for v in index["videos"]][:3]
    P = BENCHMARKS["narrativetrack"].partitions
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(P.items.name, vids)
        video = by_key("narrativetrack")["narrativetrack_video"]
        for v in vids:
            assert materialize([video], partition_key=v, instance=instance, resources={"paths": paths}).success
        assert all(plan(instance, "narrativetrack", "narrativetrack_video", v, paths) == {} for v in vids)
        # one entry's sampling rate changed in the shared index: that video only
        index["videos"][0]["sample_fps"] = 2.0
        (data / "narrativetrack" / "videos.json").write_text(json.dumps(index))
        assert plan(instance, "narrativetrack", "narrativetrack_video", vids[0], paths) == {
            "narrativetrack_video": "input files changed"}
        assert plan(instance, "narrativetrack", "narrativetrack_video", vids[1], paths) == {}
        # a replaced video file
        f = data / "narrativetrack" / next(v["file"] for v in index["videos"] if v["video_id"] == vids[2])
        other = data / "narrativetrack" / next(v["file"] for v in index["videos"] if v["video_id"] == vids[1])
        shutil.copy(other, f)
        assert plan(instance, "narrativetrack", "narrativetrack_video", vids[2], paths) == {
            "narrativetrack_video": "input files changed"}
        assert plan(instance, "narrativetrack", "narrativetrack_video", vids[1], paths) == {}
