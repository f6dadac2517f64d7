"""Input hygiene (issue 26 item 6): media stays inside its roots, a per-item cost bound, MBench boxes checked, every
configuration value checked at start with one `error:` line, and one bad generator folder never stops the others."""
import json
import os
import shutil
from pathlib import Path

import pytest

from bench_assets.core.generators import GeneratorError, discover_generators, read_generator
from bench_resources.paths import OutsideRoot, inside_root
from bench_resources.settings import ConfigError, validate_environment

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


# ------------------------------------------------------------------------------------------ generator folders

def _card(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "generator.yaml").write_text(text)
    return folder


def test_deeply_nested_card_is_one_error_and_the_other_generators_are_found(tmp_path):
    _card(tmp_path / "good_a", "name: good_a\nbenchmark: mbench\n")
    _card(tmp_path / "deep", "name: " + "[" * 50000 + "]" * 50000 + "\n")
    _card(tmp_path / "deep_map", "a: " + "{b: " * 50000 + "1" + "}" * 50000 + "\n")
    _card(tmp_path / "good_b", "name: good_b\nbenchmark: mbench\n")
    big = tmp_path / "huge"
    big.mkdir()
    (big / "generator.yaml").write_bytes(b"name: huge\nbenchmark: mbench\n" + b"#" * (2 << 20))
    gens, errors = discover_generators(tmp_path, "mbench")
    assert [g.name for g in gens] == ["good_a", "good_b"]
    assert len(errors) == 3, errors
    assert sum("nested too deeply" in e for e in errors) == 2
    assert any("'huge'" in e and "bytes" in e for e in errors)
    assert all("\n" not in e for e in errors)
    with pytest.raises(GeneratorError, match="nested too deeply"):
        read_generator(tmp_path / "deep")


def test_an_unexpected_failure_in_one_folder_is_its_error(tmp_path, monkeypatch):
    from bench_assets.core import generators as G
    _card(tmp_path / "good", "name: good\nbenchmark: mbench\n")
    _card(tmp_path / "boom", "name: boom\nbenchmark: mbench\n")
    real = G.read_generator

    def flaky(folder):
        if Path(folder).name == "boom":
            raise MemoryError("simulated")
        return real(folder)
    monkeypatch.setattr(G, "read_generator", flaky)
    gens, errors = G.discover_generators(tmp_path, "mbench")
    assert [g.name for g in gens] == ["good"]
    assert errors == ["generator folder 'boom': cannot be read (MemoryError: simulated)"]


# ------------------------------------------------------------------------------------------ configuration

@pytest.mark.parametrize("env, expect", [
    ({"BENCH_JUDGE_TIMEOUT_S": "abc"}, "BENCH_JUDGE_TIMEOUT_S='abc' is not a number"),
    ({"BENCH_JUDGE_TIMEOUT_S": "0"}, "must be > 0"),
    ({"BENCH_JUDGE_TIMEOUT_S": "inf"}, "out of range"),
    ({"BENCH_JUDGE_RETRIES": "1.5"}, "not an integer"),
    ({"BENCH_JUDGE_CONCURRENCY": "0"}, "must be >= 1"),
    ({"BENCH_JUDGE_TEMPERATURE": "5"}, "<= 2"),
    ({"BENCH_JUDGE_BACKEND": "gemini"}, "use one of anthropic, openai"),
    ({"BENCH_JUDGE_MODE": "on"}, "use one of live, replay, off"),
    ({"BENCH_JUDGE_BACKEND": "openai"}, "needs BENCH_JUDGE_MODEL"),
    ({"BENCH_JUDGE_BASE_URL": "localhost:8000"}, "http(s) URL"),
    ({"BENCH_JUDGE_KEY_ENV": "sk-ant-123"}, "never the key"),
    ({"BENCH_PROFILE": "fast"}, "use one of offline, paper"),
    ({"BENCH_DEVICE": "gpu"}, "cuda:N"),
    ({"BENCH_BATCH_SIZE": "-3"}, ">= 1"),
    ({"BENCH_ALLOW_HUB": "yes"}, "use one of 0, 1"),
    ({"BENCH_EXECUTOR": "threads"}, "multiprocess"),
    ({"BENCH_CLIP_CACHE_BYTES": "1GB"}, "not an integer"),
])
def test_bad_configuration_values_are_named(env, expect):
    with pytest.raises(ConfigError) as e:
        validate_environment(env)
    assert expect in str(e.value) and "\n" not in str(e.value)


def test_good_and_unset_configuration_passes(tmp_path):
    validate_environment({})
    validate_environment({"BENCH_JUDGE_BACKEND": "openai", "BENCH_JUDGE_MODEL": "qwen", "BENCH_DEVICE": "cuda:1",
                          "BENCH_JUDGE_TIMEOUT_S": "2.5", "DAGSTER_HOME": str(tmp_path / "new"),
                          "BENCH_STORE_ROOT": "s3://bucket/x", "BENCH_JUDGE_KEY_ENV": "", "BENCH_EXECUTOR": ""})


def test_folders_that_are_files_are_refused(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    for name in ("DAGSTER_HOME", "BENCH_STORE_ROOT", "BENCH_DATA_ROOT", "BENCH_GENERATORS_ROOT"):
        with pytest.raises(ConfigError, match=f"{name}=.* is a file, not a folder"):
            validate_environment({name: str(f)})
    with pytest.raises(ConfigError, match="BENCH_MEDIA_ROOTS"):
        validate_environment({"BENCH_MEDIA_ROOTS": str(tmp_path / "nope")})


@pytest.mark.parametrize("env, argv, expect", [
    ({"BENCH_JUDGE_TIMEOUT_S": "soon"}, None, "error: BENCH_JUDGE_TIMEOUT_S='soon' is not a number"),
    ({"BENCH_JUDGE_BACKEND": "openai"}, None, "error: BENCH_JUDGE_BACKEND=openai needs BENCH_JUDGE_MODEL"),
    ({}, ["evaluate", "--benchmark", "mbench", "--generator", ""], "error: --generator is empty"),
    ({}, ["evaluate", "--benchmark", "mbench", "--generator", "  "], "error: --generator is empty"),
])
def test_cli_prints_one_error_line_and_exits_2(env, argv, expect, monkeypatch, capsys, tmp_path):
    from bench_assets import cli
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    rc = cli.main(argv or ["evaluate", "--benchmark", "mbench", "--generator", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip().splitlines() == [err.strip()] and err.startswith(expect), err


def test_cli_dagster_home_that_is_a_file(monkeypatch, capsys, tmp_path):
    from bench_assets import cli
    f = tmp_path / "home"
    f.write_text("")
    monkeypatch.setenv("DAGSTER_HOME", str(f))
    assert cli.main(["leaderboard", "--benchmark", "mbench"]) == 2
    assert capsys.readouterr().err == f"error: DAGSTER_HOME={str(f)!r} is a file, not a folder\n"


# ------------------------------------------------------------------------------------------ roots

def test_inside_root(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.mp4").write_bytes(b"x")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "b.mp4").write_bytes(b"y")
    (root / "link_in.mp4").symlink_to(root / "sub" / "a.mp4")
    (root / "link_out.mp4").symlink_to(outside / "b.mp4")
    assert inside_root(root / "sub" / "a.mp4", root, "x") == (root / "sub" / "a.mp4").resolve()
    assert inside_root(root / "link_in.mp4", root, "x") == (root / "sub" / "a.mp4").resolve()
    with pytest.raises(OutsideRoot, match=r"shot 3: .*link_out.mp4 is a symlink out of"):
        inside_root(root / "link_out.mp4", root, "shot 3")
    with pytest.raises(OutsideRoot, match="leads outside"):
        inside_root(root / "sub" / ".." / ".." / "elsewhere" / "b.mp4", root, "video v")
    with pytest.raises(OutsideRoot, match="/etc/passwd"):
        inside_root(root / "/etc/passwd", root, "video v")
    monkeypatch.setenv("BENCH_MEDIA_ROOTS", str(outside))   # a shared store links may lead to on purpose
    assert inside_root(root / "link_out.mp4", root, "x") == (outside / "b.mp4").resolve()


def _episode(n_shots: int) -> dict:
    return {"episode_id": "ep1", "entities": [{"id": "c1", "type": "character", "name": "A", "description": "a"}],
            "shots": [{"index": i, "cut": i == 1, "entities": ["c1"], "action": "x"} for i in range(1, n_shots + 1)]}


def test_entitybench_shot_symlinked_out_is_refused_and_the_others_indexed(tmp_path):
    from bench_assets.entitybench import dataset as D
    ep = D.parse_episode(_episode(3))
    folder = tmp_path / "gen" / "ep1"
    folder.mkdir(parents=True)
    secret = tmp_path / "secret.mp4"
    secret.write_bytes(b"z")
    (folder / "shot_01.mp4").write_bytes(b"a")
    (folder / "shot_02.mp4").symlink_to(secret)
    (folder / "shot_03.mp4").symlink_to(folder / "shot_01.mp4")   # a link inside the generator folder is fine
    files = D.index_shot_files(ep, folder, "gen")
    assert [f.error is None for f in files] == [True, False, True]
    assert "generator 'gen', episode 'ep1', shot 2" in files[1].error and "symlink out of" in files[1].error
    assert str(secret) in files[1].error


def test_entitybench_episode_folder_linked_out_is_refused(tmp_path):
    from bench_assets.entitybench import dataset as D
    ep = D.parse_episode(_episode(1))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shot_01.mp4").write_bytes(b"a")
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "ep1").symlink_to(outside)
    [f] = D.index_shot_files(ep, tmp_path / "gen" / "ep1", "gen")
    assert f.path is None and "outside" in f.error


def test_entitybench_cost_bound(tmp_path):
    from bench_assets.entitybench import dataset as D
    folder = tmp_path / "gen" / "ep1"
    folder.mkdir(parents=True)
    for i in (1, 2):
        (folder / f"shot_{i:02d}.mp4").write_bytes(b"a")
    with pytest.raises(D.EpisodeError, match=r"declares 10000 shots but the output folder holds files for 2; "
                                             r"more than 100 undelivered"):
        D.index_shot_files(D.parse_episode(_episode(10_000)), folder, "gen")
    # at the bound: every shot is indexed, the undelivered ones each with their own error
    files = D.index_shot_files(D.parse_episode(_episode(2 + D.MAX_UNDELIVERED_SHOTS)), folder, "gen")
    assert sum(f.error is None for f in files) == 2 and len(files) == 102


# ------------------------------------------------------------------------------------------ MBench boxes

@pytest.mark.parametrize("box, expect", [
    ([1, 2, 3], "list of 4 numbers"),
    ("10,10,5,5", "list of 4 numbers"),
    ([10, 10, "5", 5], "must hold numbers"),
    ([10, 10, True, 5], "must hold numbers"),
    ([float("nan"), 10, 5, 5], "NaN or infinite"),
    ([10, 10, float("inf"), 5], "NaN or infinite"),
    ([10, 10, 0, 5], "both must be > 0"),
    ([10, 10, 5, -4], "both must be > 0"),
    ([-3, 10, 5, 5], "negative centre"),
])
def test_mbench_box_refused(box, expect):
    from bench_assets.mbench import dataset as D
    with pytest.raises(D.CaseError, match=expect) as e:
        D.check_box(box, "a_x01")
    assert str(e.value).startswith("case a_x01: ") and "[cx, cy, w, h]" in str(e.value)


def test_mbench_box_out_of_frame(tmp_path):
    from bench_assets.mbench import dataset as D
    assert D.check_box([160, 120, 320, 240], "c", (320, 240)) == (160.0, 120.0, 320.0, 240.0)
    assert D.check_box([161, 120, 320, 240], "c", (320, 240))          # 1 px over: rounding, accepted
    with pytest.raises(D.CaseError, match=r"reaches 95.0 px outside the 320x240 init frame"):
        D.check_box([340, 100, 150, 40], "c", (320, 240))              # right edge at 415: 95 px past 320
    with pytest.raises(D.CaseError, match="outside the 320x240"):
        D.check_box([10, 10, 300, 300], "c", (320, 240))


def _mbench_case(tmp_path: Path, bbox) -> Path:
    root = tmp_path / "mbench"
    (root / "cases").mkdir(parents=True)
    (root / "frames").mkdir()
    good = json.loads((DATA / "mbench" / "cases" / "a_obj01.json").read_text())
    shutil.copy(DATA / "mbench" / "frames" / good["init_frame"], root / "frames" / good["init_frame"])
    good["target"]["bbox"] = bbox
    p = root / "cases" / "a_obj01.json"
    p.write_text(json.dumps(good))
    return p


def test_mbench_load_case_checks_the_box_against_the_init_frame(tmp_path):
    from PIL import Image
    from bench_assets.mbench import dataset as D
    good = json.loads((DATA / "mbench" / "cases" / "a_obj01.json").read_text())
    w, h = Image.open(DATA / "mbench" / "frames" / good["init_frame"]).size
    assert D.load_case(_mbench_case(tmp_path / "ok", good["target"]["bbox"])).target["bbox"] == good["target"]["bbox"]
    cx, cy, bw, bh = good["target"]["bbox"]
    p = _mbench_case(tmp_path / "off", [w + 95 - bw / 2, cy, bw, bh])   # right edge 95 px past the frame
    with pytest.raises(D.CaseError, match=rf"case a_obj01: .*reaches 95.0 px outside the {w}x{h} init frame"):
        D.load_case(p)
    p = _mbench_case(tmp_path / "nan", [cx, cy, float("nan"), bh])
    with pytest.raises(D.CaseError, match="NaN"):
        D.load_case(p)


def test_mbench_init_frame_out_of_the_frames_folder(tmp_path):
    from bench_assets.mbench import dataset as D
    p = _mbench_case(tmp_path, None)
    raw = json.loads(p.read_text())
    raw["init_frame"] = "../../../../../../etc/passwd"
    p.write_text(json.dumps(raw))
    with pytest.raises(D.CaseError, match="case a_obj01: init_frame: .* leads outside"):
        D.load_case(p)


def test_mbench_output_linked_out_is_refused_and_counted_undelivered(tmp_path):
    from bench_assets.mbench import cases, dataset as D
    from bench_resources.paths import BenchPaths
    gen = tmp_path / "generators" / "g"
    gen.mkdir(parents=True)
    (tmp_path / "x.mp4").write_bytes(b"x")
    (gen / "a_obj01.mp4").symlink_to(tmp_path / "x.mp4")
    (gen / "a_obj02.mp4").write_bytes(b"x")
    with pytest.raises(D.CaseError, match=r"generator 'g', case a_obj01: .* is a symlink out of"):
        D.output_video(gen, "a_obj01")
    assert D.output_video(gen, "a_obj02") == gen / "a_obj02.mp4"
    paths = BenchPaths(data_root=str(tmp_path), generators_root=str(tmp_path / "generators"))
    assert cases.missing_outputs(paths, "g", ["a_obj01", "a_obj02", "a_obj03"]) == {"a_obj01", "a_obj03"}


def test_locot2v_output_linked_out_is_refused_naming_the_sample(tmp_path):
    from dagster import Failure

    from bench_assets.locot2v.assets import _video
    from bench_resources.paths import BenchPaths
    gen = tmp_path / "generators" / "g"
    gen.mkdir(parents=True)
    (tmp_path / "secret.mp4").write_bytes(b"x")
    (gen / "nature_1.mp4").symlink_to(tmp_path / "secret.mp4")
    paths = BenchPaths(data_root=str(tmp_path), generators_root=str(tmp_path / "generators"))
    with pytest.raises(Failure, match=r"generator 'g', sample nature_1: .* is a symlink out of"):
        _video(paths, "g", "nature_1")
    shutil.copy(DATA / "generators" / "locot2v_smooth" / "nature_1.mp4", gen / "nature_2.mp4")
    assert _video(paths, "g", "nature_2").n_frames > 0  # a real file inside the folder still opens


# ------------------------------------------------------------------------------------------ NarrativeTrack index

def _nt_root(tmp_path: Path, entries: list[dict]) -> Path:
    root = tmp_path / "narrativetrack"
    (root / "videos").mkdir(parents=True)
    (root / "videos" / "good.mp4").write_bytes(b"x")
    (root / "videos.json").write_text(json.dumps({"videos": entries}))
    return root


def test_narrativetrack_paths_out_of_the_root_fail_only_their_video(tmp_path):
    from bench_assets.narrativetrack import dataset as D
    (tmp_path / "file").write_text("secret")
    root = _nt_root(tmp_path, [{"video_id": "good", "file": "videos/good.mp4"},
                               {"video_id": "up", "file": "../../file"},
                               {"video_id": "abs", "file": "/etc/passwd"},
                               {"video_id": "zero", "file": "videos/good.mp4", "sample_fps": 0},
                               {"video_id": "text", "file": "videos/good.mp4", "sample_fps": "fast"},
                               {"video_id": "nofile", "file": ""}])
    assert D.discover_videos(root) == ["abs", "good", "nofile", "text", "up", "zero"]
    assert D.load_video(root, "good").path == str(root / "videos" / "good.mp4")
    for vid, expect in [("up", "file '../../file': .* leads outside"), ("abs", "file '/etc/passwd': .* leads outside"),
                        ("zero", "video 'zero' .*sample_fps must be .* > 0, got 0"),
                        ("text", "sample_fps must be .* got 'fast'"), ("nofile", "'file' must be a path")]:
        with pytest.raises(D.DatasetError, match=expect):
            D.load_video(root, vid)


def test_narrativetrack_duplicate_id_is_its_own_error_not_no_video_found(tmp_path):
    from bench_assets.narrativetrack import dataset as D
    root = _nt_root(tmp_path, [{"video_id": "good", "file": "videos/good.mp4"},
                               {"video_id": "good", "file": "videos/good.mp4"}])
    with pytest.raises(D.DatasetError, match=r"video id 'good' listed twice \(entries 0 and 1\)"):
        D.discover_videos(root)


def test_narrativetrack_duplicate_id_in_the_cli(tmp_path, monkeypatch, capsys):
    from bench_assets import cli
    data = tmp_path / "data"
    root = _nt_root(data, [{"video_id": "v", "file": "videos/good.mp4"}, {"video_id": "v", "file": "videos/good.mp4"}])
    gen = _card(data / "generators" / "ans", "name: ans\nbenchmark: narrativetrack\nmodel: m\n")
    monkeypatch.setenv("BENCH_DATA_ROOT", str(data))
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert cli.main(["evaluate", "--benchmark", "narrativetrack", "--generator", str(gen)]) == 2
    err = capsys.readouterr().err
    assert "listed twice" in err and "no video" not in err and len(err.strip().splitlines()) == 1, err
    assert str(root / "videos.json") in err


def test_sensor_keeps_working_beside_a_bad_generator_folder(tmp_path, monkeypatch):
    """The UI's sensors use the same discovery: a card nested 50,000 deep is logged as its folder's error and the
    good generator next to it is still registered and requested."""
    from dagster import DagsterInstance, build_sensor_context
    data = tmp_path / "data"
    (data / "mbench" / "cases").mkdir(parents=True)
    shutil.copy(DATA / "mbench" / "cases" / "a_obj01.json", data / "mbench" / "cases")
    shutil.copytree(DATA / "mbench" / "frames", data / "mbench" / "frames")
    good = data / "generators" / "mbench_consistent"
    good.mkdir(parents=True)
    shutil.copy(DATA / "generators" / "mbench_consistent" / "generator.yaml", good)
    shutil.copy(DATA / "generators" / "mbench_consistent" / "a_obj01.mp4", good)
    _card(data / "generators" / "deep", "name: " + "[" * 50000 + "]" * 50000 + "\n")
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    for k, v in {"BENCH_DATA_ROOT": data, "BENCH_GENERATORS_ROOT": data / "generators", "DAGSTER_HOME": home,
                 "BENCH_STORE_ROOT": tmp_path / "store"}.items():
        monkeypatch.setenv(k, str(v))
    from bench_assets import definitions as d
    from bench_assets.mbench import assets as mb
    instance = DagsterInstance.get()
    try:
        ctx = build_sensor_context(instance=instance, repository_def=d.defs.get_repository_def())
        result = d.SENSORS["mbench"].evaluate_tick(ctx)
        assert list(result.run_requests or []), result.skip_message
        assert instance.get_dynamic_partitions(mb.P.generators.name) == ["mbench_consistent"]
    finally:
        instance.dispose()


# ------------------------------------------------------------------------------------------ ViStoryBench

def test_vistorybench_reference_and_output_links_out_are_refused(tmp_path):
    from bench_assets.vistorybench import dataset as V
    story = tmp_path / "vistorybench" / "01"
    shutil.copytree(DATA / "vistorybench" / "01", story)
    loaded = V.load_story(story)
    key = sorted(loaded.characters)[0]
    ref = sorted((story / "image" / key).iterdir())[0]
    secret = tmp_path / "secret.png"
    shutil.copy(ref, secret)
    ref.unlink()
    ref.symlink_to(secret)
    with pytest.raises(V.StoryError, match=rf"story 01: reference image of character {key!r}: .* symlink out of"):
        V.load_story(story)
    ref.unlink()
    shutil.copy(secret, ref)
    raw = json.loads((story / "story.json").read_text(encoding="utf-8-sig"))
    raw["Characters"]["../../../../etc"] = {**raw["Characters"][key]}
    (story / "story.json").write_text(json.dumps(raw))
    with pytest.raises(V.StoryError, match=r"reference folder of character '../../../../etc': .* leads outside"):
        V.load_story(story)

    out = tmp_path / "generators" / "g" / "01"
    shutil.copytree(DATA / "generators" / "vistory_faithful" / "01", out)
    assert V.index_outputs(loaded, out, "g").files
    first = sorted(p for p in out.iterdir() if p.suffix.lower() in V.IMAGE_SUFFIXES + V.VIDEO_SUFFIXES)[0]
    shutil.copy(first, tmp_path / "away")
    first.unlink()
    first.symlink_to(tmp_path / "away")
    with pytest.raises(V.OutputError, match=r"generator 'g', story 01, shot \d+: .* symlink out of"):
        V.index_outputs(loaded, out, "g")
