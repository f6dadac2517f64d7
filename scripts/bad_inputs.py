"""Bad inputs for scripts/fault_suite.py: generator cards, CLI arguments, generator outputs, dataset files.

``cli_cases`` stop before any model runs and go through ``bench_assets.cli.main`` in this process (one clear
``error:`` line, exit status != 0, no traceback). ``media_cases`` put bad outputs and bad case files next to a
good MBench case in one real ``bench evaluate`` process: each bad one must be named by one clear error (a FAILED
line naming the item, or a reason in the item's rows) and the good case's rows must equal a clean run's.
"""
from __future__ import annotations

import contextlib
import io
import json
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
    }


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
    }


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
    for cid in names:
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
    return results
