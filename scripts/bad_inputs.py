"""Bad inputs for scripts/fault_suite.py: generator cards, CLI arguments, configuration, generator outputs, dataset
files.

``cli_cases`` stop before any model runs and go through ``bench_assets.cli.main`` in this process (one clear
``error:`` line, exit status != 0, no traceback); a case may set environment variables (configuration errors).
``media_cases`` put bad outputs and bad case files next to a good MBench case in one real ``bench evaluate``
process: each bad one must be named by one clear error (a FAILED line naming the item, or a reason in the item's
rows) and the good case's rows must equal a clean run's. Files that are usable as they come (cut short, a wrong
rate in the header, damage FFmpeg conceals, 4K frames) must instead be scored *and* named by a warning in the run's
Dagster event log (``WARN_KINDS``); frames stored sideways with a display rotation are turned upright, scored and
named by an INFO note there, never by a warning (``NOTE_KINDS``: a portrait phone clip is no decode problem). ``dataset_cases`` (run inside ``media_cases``) call the
dataset readers directly, next to good items, for what a one-benchmark MBench run cannot show: NarrativeTrack
index paths out of the root, a duplicate id, ``sample_fps: 0``, an EntityBench shot linked out of its generator
folder, an episode declaring 10,000 shots with 2 files, a generator card nested 50,000 deep beside good ones.
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
GEN = "mbench_consistent"
GOOD_CASE = "a_obj01"


@dataclass
class CliCase:
    name: str
    root: Path
    data: Path
    argv: list[str]
    expect: tuple[str, ...] = ()   # lower-case fragments the error must contain
    env: dict = field(default_factory=dict)   # set on top of the suite's environment (configuration errors)


def _world(root: Path) -> Path:
    sys.path.insert(0, str(ROOT / "scripts"))
    from fault_suite import mbench_world
    return mbench_world(root)


def _card(folder: Path, content: bytes | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "generator.yaml").write_bytes(content.encode() if isinstance(content, str) else content)
    return folder


def cli_cases(root: Path) -> list[CliCase]:
    root = root / "cli"
    data = _world(root)
    gens = data / "generators"
    out: list[CliCase] = []

    def ev(name: str, folder: Path, expect: tuple[str, ...] = (), bench: str = "mbench",
           data_root: Optional[Path] = None) -> None:
        out.append(CliCase(name, root, data_root or data, ["evaluate", "--benchmark", bench, "--generator",
                                                           str(folder)], expect))

    bad = root / "bad_generators"
    ev("yaml_syntax", _card(bad / "yaml_syntax", "name: [oops\nbenchmark: mbench\n"), ("not valid yaml",))
    ev("yaml_utf16", _card(bad / "yaml_utf16", "name: yaml_utf16\nbenchmark: mbench\n".encode("utf-16")),
       ("utf-8",))
    ev("yaml_binary", _card(bad / "yaml_binary", bytes(range(256))), ("yaml_binary",))
    ev("yaml_list", _card(bad / "yaml_list", "- a\n- b\n"), ("mapping",))
    ev("yaml_empty", _card(bad / "yaml_empty", ""), ("mapping",))
    ev("yaml_name_int", _card(bad / "yaml_name_int", "name: 5\nbenchmark: mbench\n"), ("name",))
    ev("yaml_name_mismatch", _card(bad / "yaml_name_mismatch", "name: other\nbenchmark: mbench\n"),
       ("differs from the folder",))
    ev("yaml_no_benchmark", _card(bad / "yaml_no_benchmark", "name: yaml_no_benchmark\n"), ("benchmark",))
    ev("yaml_benchmark_list", _card(bad / "yaml_benchmark_list", "name: yaml_benchmark_list\nbenchmark: [mbench]\n"),
       ("benchmark",))
    ev("yaml_pipe_name", _card(bad / "pipe", "name: 'a|b'\nbenchmark: mbench\n"), ("|",))
    long = "g" * 200
    ev("name_200_chars", _card(bad / long, f"name: {long}\nbenchmark: mbench\n"), ("at most 100",))
    ev("wrong_benchmark", _card(bad / "wrong_benchmark", "name: wrong_benchmark\nbenchmark: entitybench\n"),
       ("not 'mbench'",))
    ev("unknown_card_benchmark", _card(bad / "unknown_card_benchmark",
                                       "name: unknown_card_benchmark\nbenchmark: nosuch\n"), ("not 'mbench'",))
    folder = bad / "card_is_dir"
    (folder / "generator.yaml").mkdir(parents=True, exist_ok=True)
    ev("card_is_directory", folder, ("generator.yaml",))
    ev("generator_missing", bad / "does_not_exist", ("does not exist",))
    (bad / "generator_is_file").write_text("x")
    ev("generator_is_file", bad / "generator_is_file", ("not a folder",))
    (bad / "no_card").mkdir(exist_ok=True)
    ev("no_generator_yaml", bad / "no_card", ("no generator.yaml",))
    nomatch = _card(bad / "matches_nothing", "name: matches_nothing\nbenchmark: mbench\n")
    shutil.copy(gens / GEN / f"{GOOD_CASE}.mp4", nomatch / "some_other_case.mp4")
    ev("generator_matches_no_item", nomatch, ("none of the 1",))
    ev("unknown_benchmark", gens / GEN, ("unknown benchmark",), bench="nosuchbench")
    ev("missing_data_root", gens / GEN, ("does not exist",), data_root=root / "no_data_here")
    empty_root = root / "empty_data"
    (empty_root / "mbench" / "cases").mkdir(parents=True, exist_ok=True)
    ev("no_items", gens / GEN, ("no case found",), data_root=empty_root)
    other_root = root / "other_data"
    (other_root / "entitybench").mkdir(parents=True, exist_ok=True)
    ev("benchmark_folder_missing", gens / GEN, ("no mbench/ folder",), data_root=other_root)
    out.append(CliCase("leaderboard_before_any_run", root, data, ["leaderboard", "--benchmark", "mbench"],
                       ("no mbench leaderboard",)))
    # configuration: every value checked at start, one `error:` line, exit 2 (bench_resources/settings.py)
    nested = _card(bad / "yaml_nested_50000", "name: " + "[" * 50000 + "]" * 50000 + "\n")
    ev("yaml_nested_50000", nested, ("nested too deeply",))
    out.append(CliCase("generator_empty_string", root, data, ["evaluate", "--benchmark", "mbench", "--generator", ""],
                       ("--generator is empty",)))
    a_file = root / "a_file"
    a_file.write_text("not a folder")

    def cfg(name: str, env: dict, expect: tuple[str, ...]) -> None:
        out.append(CliCase(name, root, data, ["evaluate", "--benchmark", "mbench", "--generator", str(gens / GEN)],
                           expect, env))
    cfg("dagster_home_is_a_file", {"DAGSTER_HOME": str(a_file)}, ("dagster_home", "is a file"))
    cfg("store_root_is_a_file", {"BENCH_STORE_ROOT": str(a_file)}, ("bench_store_root", "is a file"))
    cfg("judge_timeout_not_a_number", {"BENCH_JUDGE_TIMEOUT_S": "soon"}, ("bench_judge_timeout_s", "not a number"))
    cfg("judge_timeout_negative", {"BENCH_JUDGE_TIMEOUT_S": "-5"}, ("bench_judge_timeout_s", "> 0"))
    cfg("judge_backend_unknown", {"BENCH_JUDGE_BACKEND": "gemini"}, ("bench_judge_backend", "anthropic, openai"))
    cfg("judge_mode_unknown", {"BENCH_JUDGE_MODE": "on"}, ("bench_judge_mode", "live, replay, off"))
    cfg("openai_without_model", {"BENCH_JUDGE_BACKEND": "openai", "BENCH_JUDGE_MODEL": ""},
        ("bench_judge_model",))
    cfg("device_unknown", {"BENCH_DEVICE": "gpu"}, ("bench_device",))
    cfg("batch_size_zero", {"BENCH_BATCH_SIZE": "0"}, ("bench_batch_size",))
    cfg("max_stream_side_text", {"BENCH_MAX_STREAM_SIDE": "4k"}, ("bench_max_stream_side",))
    nt_root = root / "nt_duplicate"
    (nt_root / "narrativetrack" / "videos").mkdir(parents=True, exist_ok=True)
    (nt_root / "narrativetrack" / "videos.json").write_text(json.dumps({"videos": [
        {"video_id": "v1", "file": "videos/v1.mp4"}, {"video_id": "v1", "file": "videos/v2.mp4"}]}))
    answerer = _card(root / "nt_answerer", "name: nt_answerer\nbenchmark: narrativetrack\nmodel: m\n")
    out.append(CliCase("narrativetrack_duplicate_video_id", root, nt_root,
                       ["evaluate", "--benchmark", "narrativetrack", "--generator", str(answerer)],
                       ("listed twice", "videos.json")))
    ratings = root / "ratings_bad.csv"
    ratings.write_text("who,what\nx,1\n")
    out.append(CliCase("ratings_wrong_columns", root, data, ["human-alignment", "--ratings", str(ratings)],
                       ("vistorybench leaderboard",)))
    out.append(CliCase("weights_import_missing_file", root, data,
                       ["weights", "import", "flow", str(root / "no_such.pth")], ("no_such.pth",)))
    return out


def run_cli_inprocess(case: CliCase, env: dict[str, str]) -> tuple[int, str]:
    """(exit status, stderr + any traceback) of ``bench <argv>`` in this process with ``env`` applied."""
    from bench_assets import cli
    saved = dict(os.environ)
    os.environ.update(env)
    os.environ.update(case.env)
    err, out = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                rc = cli.main(case.argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 2
            except Exception:  # noqa: BLE001 - an escaping exception is the finding
                err.write(traceback.format_exc())
                rc = 99
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return rc, err.getvalue()


# ---------------------------------------------------------------------- outputs and case files in one run
def _mp4(path: Path, frames: int, w: int, h: int) -> None:
    import cv2
    import numpy as np
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 8, (w, h))
    for i in range(frames):
        vw.write(np.full((h, w, 3), (i * 37) % 255, np.uint8))
    vw.release()


def _png(w: int, h: int) -> bytes:
    import cv2
    import numpy as np
    return cv2.imencode(".png", np.random.default_rng(0).integers(0, 255, (h, w, 3), np.uint8))[1].tobytes()


def _bomb_png(path: Path) -> None:
    from PIL import Image
    Image.new("1", (20000, 20000)).save(path, format="PNG")


def media_kinds(good_mp4: Path) -> dict[str, Callable[[Path], None]]:
    """name -> writes the bad output of case ``<name>`` into the generator folder (argument)."""
    raw = good_mp4.read_bytes()

    def put(name: str, data: bytes) -> Callable[[Path], None]:
        return lambda g: (g / f"m_{name}.mp4").write_bytes(data)

    flipped = bytearray(raw)
    for i in range(len(raw) // 3, len(raw) // 3 + 2000):
        flipped[i] ^= 0xFF
    return {
        "png_renamed_mp4": put("png_renamed_mp4", _png(64, 48)),
        "empty_file": put("empty_file", b""),
        "text_file": put("text_file", b"this is not a video\n"),
        "truncated": put("truncated", raw[: len(raw) // 3]),
        "corrupt_middle": put("corrupt_middle", bytes(flipped)),
        "folder_named_mp4": lambda g: (g / "m_folder_named_mp4.mp4").mkdir(),
        "tiny_2x2": lambda g: _mp4(g / "m_tiny_2x2.mp4", 20, 2, 2),
        "one_frame": lambda g: _mp4(g / "m_one_frame.mp4", 1, 64, 48),
        "zero_frames": lambda g: _mp4(g / "m_zero_frames.mp4", 0, 64, 48),
        "odd_size_17x9": lambda g: _mp4(g / "m_odd_size_17x9.mp4", 16, 17, 9),
        "gif_instead": lambda g: _gif(g / "m_gif_instead.gif"),
        "missing_output": lambda g: None,
        "bomb_png_as_mp4": lambda g: _bomb_png(g / "m_bomb_png_as_mp4.mp4"),
        "symlink_out_of_generator": lambda g: _link_out(g, good_mp4),
        # usable as they come: scored, and named by a warning (WARN_KINDS)
        "cut_short": lambda g: _cut_short(good_mp4, g / "m_cut_short.mp4"),
        "wrong_rate_header": lambda g: _reencode(good_mp4, g / "m_wrong_rate_header.mkv", "matroska", header_rate=30),
        "concealed_corrupt_avi": lambda g: _corrupt_avi(good_mp4, g / "m_concealed_corrupt_avi.avi"),
        "rotated_90": lambda g: _reencode(good_mp4, g / "m_rotated_90.mp4", "mp4", rotation=90),
        "uhd_4096x2160": lambda g: _reencode(good_mp4, g / "m_uhd_4096x2160.mp4", "mp4", size=(4096, 2160)),
    }


# kind -> what the run's warnings must say about it (the item is scored, the finding named)
WARN_KINDS = {"cut_short": "but the file holds", "wrong_rate_header": "timestamps give",
              "concealed_corrupt_avi": "m_concealed_corrupt_avi.avi", "uhd_4096x2160": "at 2048x1080"}
# kind -> what an INFO note of the run must say (scored, what was done named, and no warning naming the file)
NOTE_KINDS = {"rotated_90": "display rotation 90 degrees applied"}


def _frames(path: Path):
    from bench_assets.core.media import decode_video
    clip = decode_video(path)
    return clip.frames, clip.fps


def _reencode(src: Path, dst: Path, fmt: str, header_rate=None, rotation: int = 0, size=None,
              codec: str = "libx264", faststart: bool = False) -> Path:
    """``src``'s frames written again: ``header_rate`` states another rate than the timestamps (Matroska's default
    duration), ``rotation`` frames stored turned clockwise with a display rotation (counter-clockwise degrees, as
    phones write it) that shows them upright again, ``size`` resized frames."""
    from fractions import Fraction
    import av
    import cv2
    import numpy as np
    frames, fps = _frames(src)
    tb = Fraction(1, int(round(fps)))
    out = av.open(str(dst), "w", format=fmt, options={"movflags": "faststart"} if faststart else {})
    s = out.add_stream(codec, rate=header_rate or int(round(fps)))
    w, h = size or (frames.shape[2], frames.shape[1])
    turns = (rotation // 90) % 4
    s.width, s.height = (h, w) if turns % 2 else (w, h)
    s.pix_fmt = "yuv420p"
    if rotation:
        s.set_display_rotation(rotation)
    s.codec_context.time_base = tb
    s.time_base = Fraction(1, 1000) if fmt == "matroska" else tb
    for i, f in enumerate(frames):
        img = cv2.resize(f, (w, h), interpolation=cv2.INTER_CUBIC) if size else f
        if turns:
            img = np.ascontiguousarray(np.rot90(img, -turns))
        vf = av.VideoFrame.from_ndarray(img, format="rgb24")
        vf.pts, vf.time_base = i, tb
        for pkt in s.encode(vf):
            out.mux(pkt)
    for pkt in s.encode():
        out.mux(pkt)
    out.close()
    return dst


def _cut_short(src: Path, dst: Path) -> None:
    """An index at the front declaring every frame, the data cut after about two thirds of them."""
    full = _reencode(src, dst.with_name("full_" + dst.name), "mp4", faststart=True).read_bytes()
    dst.with_name("full_" + dst.name).unlink()
    data = full.index(b"mdat") + 4
    dst.write_bytes(full[: data + (len(full) - data) * 2 // 3])


def _corrupt_avi(src: Path, dst: Path) -> None:
    """MPEG-4 Part 2 in AVI with 400 bytes inverted inside the data: FFmpeg conceals the damage and returns frames."""
    tmp = _reencode(src, dst.with_name("clean_" + dst.name), "avi", codec="mpeg4")
    raw = bytearray(tmp.read_bytes())
    tmp.unlink()
    for i in range(len(raw) // 2, len(raw) // 2 + 400):
        raw[i] ^= 0xFF
    dst.write_bytes(bytes(raw))


def _link_out(gen: Path, good_mp4: Path) -> None:
    """A shot that is a symlink to a file outside the generator folder (any file the worker can read)."""
    outside = gen.parent.parent / "outside_the_generator"
    outside.mkdir(exist_ok=True)
    shutil.copy(good_mp4, outside / "elsewhere.mp4")
    (gen / "m_symlink_out_of_generator.mp4").symlink_to(outside / "elsewhere.mp4")


def _gif(path: Path) -> None:
    from PIL import Image
    frames = [Image.new("RGB", (64, 48), (i * 20, 0, 0)) for i in range(8)]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=125)


def case_kinds(good: dict) -> dict[str, Callable[[str], bytes]]:
    """name -> bytes of a bad case file for case id ``d_<name>`` (its video is a good copy)."""
    def obj(cid: str, **change) -> bytes:
        d = {**good, "case_id": cid, **change}
        return json.dumps({k: v for k, v in d.items() if v is not ...}).encode()
    return {
        "invalid_json": lambda cid: b'{"case_id": "' + cid.encode() + b'", "mode": ',
        "utf16_json": lambda cid: obj(cid).decode().encode("utf-16"),
        "json_list": lambda cid: b"[1, 2, 3]",
        "missing_case_id": lambda cid: obj(cid, case_id=...),
        "unknown_subset": lambda cid: obj(cid, subset="weather"),
        "a_case_without_actions": lambda cid: obj(cid, actions=[]),
        "init_frame_missing": lambda cid: obj(cid, init_frame="no_such_frame.png"),
        "init_frame_escape": lambda cid: obj(cid, init_frame="../../../../../../../etc/passwd"),
        # the box format is [cx, cy, w, h] in pixels of the init frame (README, MBench "Bring your own")
        "box_out_of_frame": lambda cid: obj(cid, target={**good["target"], "bbox": _box_past_edge(good, 95)}),
        "box_nan": lambda cid: obj(cid, target={**good["target"], "bbox": [float("nan"), 100, 50, 50]}),
        "box_negative": lambda cid: obj(cid, target={**good["target"], "bbox": [-20, 100, 50, 50]}),
        "box_zero_size": lambda cid: obj(cid, target={**good["target"], "bbox": [100, 100, 0, 50]}),
        "box_three_numbers": lambda cid: obj(cid, target={**good["target"], "bbox": [100, 100, 50]}),
    }


def _box_past_edge(good: dict, px: float) -> list[float]:
    """The good case's box moved right until its right edge lies ``px`` pixels outside the init frame."""
    from PIL import Image
    w, _ = Image.open(DATA / "mbench" / "frames" / good["init_frame"]).size
    cx, cy, bw, bh = good["target"]["bbox"]
    return [w + px - bw / 2, cy, bw, bh]


def media_cases(root: Path, timeout_s: float, reference: Optional[dict] = None,
                limit: Optional[int] = None) -> list[tuple[str, dict]]:
    """Evaluate every bad output and case file next to the good case in one `bench evaluate` process."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from fault_suite import BENCH, bench_env, run_evaluate, table_differences, tables
    root = root / "media"
    data = _world(root)
    shutil.copytree(data, root / "data_good", dirs_exist_ok=True)  # the clean run's world: the good case only
    gdir = data / "generators" / GEN
    good_case = json.loads((data / "mbench" / "cases" / f"{GOOD_CASE}.json").read_text())
    kinds = list(media_kinds(gdir / f"{GOOD_CASE}.mp4").items())
    cases = list(case_kinds(good_case).items())
    if limit is not None:
        kinds, cases = kinds[:limit], cases[:max(1, limit // 2)]
    names = []
    for name, write in kinds:
        cid = f"m_{name}"
        (data / "mbench" / "cases" / f"{cid}.json").write_text(json.dumps({**good_case, "case_id": cid}))
        write(gdir)
        names.append(cid)
    for name, content in cases:
        cid = f"d_{name}"
        (data / "mbench" / "cases" / f"{cid}.json").write_bytes(content(cid))
        shutil.copy(gdir / f"{GOOD_CASE}.mp4", gdir / f"{cid}.mp4")
        names.append(cid)
    env = bench_env(root, data)
    log = root / "evaluate.log"
    # The clean run of the good case alone runs at the same time, from the same code: a reference taken
    # earlier can differ because the code changed meanwhile (a protocol digest moves), not because of a fault.
    clean_proc = None
    if reference is None:
        from fault_suite import start_evaluate
        clean = root.parent / "media_clean"
        cdata = clean / "data"
        if not cdata.exists():
            shutil.copytree(root / "data_good", cdata)
        clean_proc = start_evaluate(bench_env(clean, cdata), cdata / "generators" / GEN, clean / "evaluate.log")
    rc, _ = run_evaluate(env, gdir, log, timeout_s)
    text = log.read_text(errors="replace")
    got = tables(root / "store")
    if clean_proc is not None:
        try:
            clean_proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            clean_proc.kill()
            clean_proc.wait()
        reference = tables(clean / "store")
    # collateral: the good case's rows, per asset, equal the clean run's
    def good_rows(t: dict) -> dict:
        out = {}
        for asset, df in t.items():
            rows = df[df["_file"].str.contains(f"={GOOD_CASE}")] if "_file" in df else df.iloc[0:0]
            if len(rows):
                out[asset] = rows.reset_index(drop=True)
        return out
    lost = table_differences(good_rows(reference), good_rows(got))
    results = []
    traceback_seen = "Traceback" in text
    warned = _run_warnings(root / "home")
    noted = _run_warnings(root / "home", level=logging.INFO)
    for cid in names:
        kind = cid[2:]
        if cid.startswith("m_") and kind in NOTE_KINDS:  # done to the frames (rotation): scored, noted, no warning
            scored = any(df["_file"].str.contains(f"={cid}(?:/|$)").any() for df in got.values() if "_file" in df)
            hits = [m for m in noted if cid in m and NOTE_KINDS[kind] in m]
            warns = [m for m in warned if cid in m]
            results.append((cid, {"clear": bool(hits) and scored and not warns and not traceback_seen, "exit": rc,
                                  "collateral": 0, "error": (warns[0] if warns else hits[0] if hits else
                                                             f"no note naming it (scored={scored})")[:300]}))
            continue
        if cid.startswith("m_") and kind in WARN_KINDS:  # usable: scored, and named by a warning
            scored = any(df["_file"].str.contains(f"={cid}(?:/|$)").any() for df in got.values() if "_file" in df)
            hits = [m for m in warned if cid in m and WARN_KINDS[kind] in m]
            results.append((cid, {"clear": bool(hits) and scored and not traceback_seen, "exit": rc,
                                  "collateral": 0, "error": (hits[0] if hits else
                                                             f"no warning naming it (scored={scored})")[:300]}))
            continue
        lines = [ln for ln in text.splitlines() if cid in ln and ("FAILED" in ln or "error" in ln.lower())]
        reasons = []
        for asset, df in got.items():
            rows = df[df["_file"].str.contains(f"={cid}/") | df["_file"].str.contains(f"={cid}$")]
            if "reason" in rows:
                reasons += [r for r in rows["reason"].dropna().astype(str) if r]
        clear = bool(lines or reasons) and not traceback_seen
        results.append((cid, {"clear": clear, "exit": rc, "collateral": 0,
                              "error": (lines[0] if lines else (reasons[0] if reasons else "no error naming it"))[:300]}))
    results.append((f"good case {GOOD_CASE} beside them", {"clear": True, "exit": rc,
                                                            "collateral": len(lost), "error": "; ".join(lost[:3])}))
    return results + dataset_cases(root.parent / "datasets")


def _run_warnings(home: Path, level: int = logging.WARNING) -> list[str]:
    """Every message at exactly ``level`` (warning: WARNING, info notes: INFO) of every run in the Dagster home
    (the step logs the UI shows)."""
    from dagster import DagsterInstance
    if not (home / "dagster.yaml").exists():
        return []
    instance = DagsterInstance.from_config(str(home))
    try:
        return [r.user_message for run in instance.get_runs() for r in instance.all_logs(run.run_id)
                if not r.is_dagster_event and level <= r.level < (logging.ERROR if level >= logging.WARNING
                                                                   else logging.WARNING) and r.user_message]
    finally:
        instance.dispose()


# ---------------------------------------------------------------------- dataset readers, next to good items
def dataset_cases(root: Path) -> list[tuple[str, dict]]:
    """Each bad item read by its benchmark's reader next to a good one: the bad one gets one clear error naming it
    and what is wrong, the good one still reads (collateral otherwise)."""
    from bench_assets.core.generators import discover_generators
    from bench_assets.entitybench import dataset as eb
    from bench_assets.narrativetrack import dataset as nt
    results: list[tuple[str, dict]] = []

    def check(name: str, fn: Callable[[], str], expect: tuple[str, ...], good: Callable[[], bool]) -> None:
        try:
            msg = fn()
        except Exception as e:  # noqa: BLE001 - the error is what is checked
            msg = f"{type(e).__name__}: {e}"
        try:
            collateral = 0 if good() else 1
        except Exception:  # noqa: BLE001
            collateral = 1
        clear = bool(msg) and "\n" not in msg and all(x.lower() in msg.lower() for x in expect)
        results.append((name, {"clear": clear, "exit": None, "collateral": collateral, "error": (msg or "accepted")[:300]}))

    # NarrativeTrack: index entries that lead out of the data root, sample_fps 0, beside a good video
    nt_root = root / "narrativetrack"
    (nt_root / "videos").mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "narrativetrack" / "videos" / "nt003.mp4", nt_root / "videos" / "good.mp4")
    (root / "file").write_text("a file outside the data root")
    (nt_root / "videos.json").write_text(json.dumps({"videos": [
        {"video_id": "good", "file": "videos/good.mp4"}, {"video_id": "dotdot", "file": "../file"},
        {"video_id": "etc_passwd", "file": "/etc/passwd"}, {"video_id": "fps_zero", "file": "videos/good.mp4",
                                                              "sample_fps": 0}]}))
    good_nt = lambda: Path(nt.load_video(nt_root, "good").path).is_file()  # noqa: E731

    def nt_error(vid: str) -> Callable[[], str]:
        def f() -> str:
            nt.load_video(nt_root, vid)
            return ""
        return f
    check("narrativetrack_path_dotdot", nt_error("dotdot"), ("'dotdot'", "leads outside"), good_nt)
    check("narrativetrack_path_etc_passwd", nt_error("etc_passwd"), ("'etc_passwd'", "/etc/passwd", "outside"),
          good_nt)
    check("narrativetrack_sample_fps_zero", nt_error("fps_zero"), ("'fps_zero'", "sample_fps", "> 0"), good_nt)

    # EntityBench: a shot linked out of the generator folder; 10,000 declared shots with 2 files
    ep_raw = json.loads((DATA / "entitybench" / "episodes" / "e0001.json").read_text())
    ep = eb.parse_episode(ep_raw)
    gen = root / "generators" / "eb_gen" / ep.episode_id
    gen.mkdir(parents=True, exist_ok=True)
    faithful = sorted((DATA / "generators" / "faithful" / ep.episode_id).glob("shot_*.mp4"))
    for f in faithful:
        shutil.copy(f, gen / f.name)
    (root / "secret.mp4").write_bytes(faithful[0].read_bytes())
    (gen / "shot_02.mp4").unlink()
    (gen / "shot_02.mp4").symlink_to(root / "secret.mp4")
    files = eb.index_shot_files(ep, gen, "eb_gen")
    check("entitybench_shot_symlink_out", lambda: files[1].error or "", ("shot 2", "symlink out of"),
          lambda: all(f.error is None for i, f in enumerate(files) if i != 1))
    big = root / "generators" / "eb_big" / "e_big"
    big.mkdir(parents=True, exist_ok=True)
    for f in faithful[:2]:
        shutil.copy(f, big / f.name)
    huge = eb.parse_episode({**ep_raw, "episode_id": "e_big", "tier": None, "shots": [
        {"index": i, "cut": i == 1, "entities": [], "action": "x"} for i in range(1, 10_001)]})
    check("entitybench_10000_shots_2_files", lambda: (eb.index_shot_files(huge, big, "eb_big"), "")[1],
          ("10000 shots", "files for 2", "cost bound"), lambda: len(eb.index_shot_files(ep, gen, "eb_gen")) == len(ep.shots))

    # generators root: one card nested 50,000 deep never hides the others (CLI, sensors, evaluate job)
    groot = root / "generators_root"
    _card(groot / "good_one", "name: good_one\nbenchmark: mbench\n")
    _card(groot / "nested_deep", "name: " + "[" * 50000 + "]" * 50000 + "\n")
    found = discover_generators(groot, "mbench")
    check("generators_root_nested_card", lambda: "; ".join(found[1]), ("nested_deep", "nested too deeply"),
          lambda: [g.name for g in found[0]] == ["good_one"])
    return results
