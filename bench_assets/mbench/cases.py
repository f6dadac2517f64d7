"""The case table MBench's leaderboard reads, and the outputs a generator did not deliver; no Dagster."""

import pandas as pd

from bench_assets.mbench import board
from bench_assets.mbench import dataset
from bench_resources.paths import BenchPaths


def read_cases(ids: list[str], load) -> tuple[pd.DataFrame, list[str]]:
    """(case_id, subset, mode, moves, translates) of every case that parses, and one error per case that does not:
    a malformed case file must not take the leaderboard of the other cases with it. ``moves`` / ``translates``: an
    A case's schedule asks for camera motion / for translation (board.applicable_cases reads them)."""
    rows, errors = [], []
    for i in ids:
        try:
            c = load(i)
            rows.append({"case_id": c.case_id, "subset": c.subset, "mode": c.mode,
                         **board.case_motion(c.mode, c.frame_actions() if c.mode == "A" else [])})
        except (dataset.CaseError, OSError, ValueError) as e:
            errors.append(str(e))
    return pd.DataFrame(rows, columns=["case_id", "subset", "mode", "moves", "translates"]), errors


def missing_outputs(paths: BenchPaths, generator: str, case_ids) -> set:
    """The cases whose output video the generator did not deliver (counted against it, never left out)."""
    folder = paths.generator_dir(generator)
    return {c for c in case_ids if not _delivered(folder, c)}


def _delivered(folder, case_id: str) -> bool:
    try:
        return dataset.output_video(folder, case_id).exists()
    except dataset.CaseError:  # an output linked out of the generator folder is refused: not delivered
        return False
