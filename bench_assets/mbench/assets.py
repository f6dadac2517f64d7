"""MBench wiring, assembled: the inputs (the case, the camera trajectory, the shared tracks; input_assets.py), the
metrics (the T trigger, the sub-dimension scores; metric_assets.py) and the leaderboard (aggregate_assets.py), over
wiring.py. Rows are built in tracking.py / scoring.py / cases.py, the maths in metrics.py / geometry.py / board.py,
per-case model work in pipeline.py, the metric specs in metric_specs.py."""

from bench_assets.mbench.aggregate_assets import mbench_leaderboard
from bench_assets.mbench.input_assets import mbench_case, mbench_poses, mbench_tracks
from bench_assets.mbench.metric_assets import mbench_scores, mbench_trigger
from bench_assets.mbench.wiring import P

# what benchmarks.py reads (P, and the order kept from before the split)
__all__ = ["P", "ASSETS", "ITEM_ASSETS", "GENERATOR_ASSETS"]
ASSETS = [mbench_case, mbench_poses, mbench_tracks, mbench_trigger, mbench_scores, mbench_leaderboard]
ITEM_ASSETS = ["mbench_case"]
GENERATOR_ASSETS = ["mbench_poses", "mbench_tracks", "mbench_trigger", "mbench_scores"]
