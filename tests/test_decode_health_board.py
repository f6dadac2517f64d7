"""Issue 26 item 6: decode errors counted per file where the file is decoded and surfaced as a warning on the board.

A real generator file damaged in place (400 bytes inverted a third of the way in, as tests/test_hygiene_media.py's
corrupted AVI; the container stays intact) probes clean: the probe alone finds nothing. Only the decode pass finds
the frame FFmpeg conceals (``VideoSource.stats.corrupt_frames``). Through a real Dagster run of EntityBench
(Pillar 1's pass) and LoCoT2V (``locot2v_visual``'s pass), the count reaches the board: ``n_decode_warnings`` is 1
for the damaged generator and 0 for its clean twin, and the board text says WARNING for it alone."""
import shutil
from pathlib import Path

from dagster import instance_for_test

from bench_assets import definitions as d
from bench_assets.core import media
from bench_assets.core.board_text import board_markdown, format_board
from bench_assets.core.generators import discover_generators
from bench_assets.core.runner import evaluate
from bench_assets.locot2v import assets as L
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths

DATA = Path(__file__).resolve().parents[1] / "data"


def damage(path: Path) -> None:
    """Invert 400 bytes a third of the way into the file: frame data, headers and index intact."""
    raw = bytearray(path.read_bytes())
    for i in range(len(raw) // 3, len(raw) // 3 + 400):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def _probe_is_clean_but_pass_is_not(path: Path) -> None:
    assert media.VideoSource(path).warnings == []          # the probe alone would have said nothing
    src = media.VideoSource(path)
    src.chunks(lambda i, f: None)
    src.run()
    rec = src.decode_record()
    assert rec["corrupt_frames"] + rec["lost_frames"] >= 1 and "concealed" in rec["decode_warnings"], rec


def _generator(data: Path, name: str, benchmark: str) -> Path:
    gdir = data / "generators" / name
    gdir.mkdir(parents=True)
    (gdir / "generator.yaml").write_text(f"name: {name}\nbenchmark: {benchmark}\ndescription: decode health test\n")
    return gdir


def _run(root: Path, data: Path, bench: str, items: list, item_assets, generator_assets, aggregate: str):
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(root / "store"), judge=Judge(mode="off"))
    gens, errors = discover_generators(paths.generators_dir, bench)
    assert not errors, errors
    with instance_for_test() as instance:
        stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=d.BENCHMARKS[bench].partitions,
                         items=items, generators=gens, item_assets=item_assets, generator_assets=generator_assets,
                         aggregate_assets=[aggregate], progress=lambda s: None)
    assert not stats.failed, stats.failed
    return resources["store"]


def _check_file_records(store, table: str, bad: str, good: str) -> None:
    """One decode record per generator's file in ``table``: the damaged one counts a concealed frame, the clean
    one none."""
    files = store.query(f"SELECT DISTINCT generator, corrupt_frames, lost_frames, decode_warnings FROM {table}")
    assert len(files) == 2, files
    b = files[files.generator == bad].iloc[0]
    assert b.corrupt_frames + b.lost_frames >= 1 and "concealed" in b.decode_warnings
    g = files[files.generator == good].iloc[0]
    assert (g.corrupt_frames, g.lost_frames, g.decode_warnings) == (0, 0, "")


def _check_board(board, bad: str, good: str, headline: dict, benchmark: str) -> None:
    n = board.groupby("generator")["n_decode_warnings"].agg(["min", "max"])
    assert n.loc[bad].tolist() == [1, 1], n            # every row of the damaged generator: its one damaged file
    assert n.loc[good].tolist() == [0, 0], n           # the clean twin: recorded, and none (not unknown)
    text = format_board(board, headline, benchmark=benchmark)
    lines = [ln for ln in text.splitlines() if ln.startswith("WARNING")]
    assert len(lines) == 1 and lines[0].startswith(f"WARNING {bad}: 1 file read with decode warnings"), lines
    md = board_markdown(board, headline)
    assert f"WARNING {bad}:" in md and f"WARNING {good}:" not in md


def test_entitybench_counts_the_concealed_frame_of_a_shot_on_the_board(tmp_path):
    data = tmp_path / "data"
    (data / "entitybench" / "episodes").mkdir(parents=True)
    shutil.copy(DATA / "entitybench" / "episodes" / "e0001.json", data / "entitybench" / "episodes")
    for name in ("faithful", "faithful_damaged"):
        shutil.copytree(DATA / "generators" / "faithful" / "e0001", _generator(data, name, "entitybench") / "e0001")
    # a short delivery keeps the test quick: the clean twin shot 1, the damaged one shots 1-2 (the rest are missing:
    # failures, and never files read with a decode warning)
    for name, keep in (("faithful", {1}), ("faithful_damaged", {1, 2})):
        for f in (data / "generators" / name / "e0001").glob("shot_*.mp4"):
            if int(f.stem.split("_")[1]) not in keep:
                f.unlink()
    shot = data / "generators" / "faithful_damaged" / "e0001" / "shot_02.mp4"
    damage(shot)
    _probe_is_clean_but_pass_is_not(shot)
    # Pillar 1 is the pass that reads every frame of every shot; the other metric assets are not needed here
    store = _run(tmp_path, data, "entitybench", ["e0001"], d.ENTITYBENCH_ITEM_ASSETS,
                 ["entitybench_outputs", "entitybench_pillar1"], "entitybench_leaderboard")
    rows = store.query("SELECT generator, shot, max(corrupt_frames) AS c, max(lost_frames) AS l "
                       "FROM entitybench_pillar1 WHERE level = 'shot' GROUP BY generator, shot")
    hit = rows[(rows.c + rows.l) > 0]
    assert hit[["generator", "shot"]].values.tolist() == [["faithful_damaged", 2]], rows
    assert rows.c.notna().sum() == 3, rows   # every decoded shot recorded (0 where clean); missing shots None
    board = store.query("SELECT * FROM entitybench_leaderboard")
    _check_board(board, "faithful_damaged", "faithful", {"slice": "all"}, "entitybench")


def test_locot2v_counts_the_concealed_frame_of_a_video_on_the_board(tmp_path):
    from tests.support.locot2v import SAMPLE, one_sample_world
    data = tmp_path / "data"
    one_sample_world(data, "locot2v_smooth", SAMPLE)
    gdir = _generator(data, "locot2v_damaged", "locot2v")
    shutil.copy(DATA / "generators" / "locot2v_smooth" / f"{SAMPLE}.mp4", gdir)
    damage(gdir / f"{SAMPLE}.mp4")
    _probe_is_clean_but_pass_is_not(gdir / f"{SAMPLE}.mp4")
    store = _run(tmp_path, data, "locot2v", [SAMPLE], L.ITEM_ASSETS, ["locot2v_visual"], L.LEADERBOARD)
    _check_file_records(store, "locot2v_visual", "locot2v_damaged", "locot2v_smooth")
    board = store.query("SELECT * FROM locot2v_leaderboard")
    _check_board(board, "locot2v_damaged", "locot2v_smooth", {"slice": L.board.SLICE}, "locot2v")


def test_mbench_counts_the_concealed_frame_of_a_video_on_the_board(tmp_path):
    from bench_assets.mbench import dataset as mdata
    case = "a_env01"   # action-conditioned: triggered by its actions, no judge needed
    data = tmp_path / "data"
    (data / "mbench" / "cases").mkdir(parents=True)
    shutil.copytree(DATA / "mbench" / "frames", data / "mbench" / "frames")
    shutil.copy(DATA / "mbench" / "cases" / f"{case}.json", data / "mbench" / "cases")
    for name in ("mbench_consistent", "mbench_damaged"):
        shutil.copy(DATA / "generators" / "mbench_consistent" / f"{case}.mp4", _generator(data, name, "mbench"))
    video = data / "generators" / "mbench_damaged" / f"{case}.mp4"
    damage(video)
    _probe_is_clean_but_pass_is_not(video)
    B = d.BENCHMARKS["mbench"]
    store = _run(tmp_path, data, "mbench", mdata.discover_cases(data / "mbench" / "cases"), B.item_assets,
                 B.generator_assets, B.aggregate_assets[0])
    _check_file_records(store, "mbench_scores", "mbench_damaged", "mbench_consistent")
    board = store.query("SELECT * FROM mbench_leaderboard")
    _check_board(board, "mbench_damaged", "mbench_consistent", {"slice": "A"}, "mbench")
