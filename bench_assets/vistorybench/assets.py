"""ViStoryBench wiring, assembled: the inputs (stories, references, generator outputs, character matches;
input_assets.py), the metrics (scores, judge alignment, Inception Score; metric_assets.py) and the aggregates
(leaderboard, human alignment; aggregate_assets.py) over one wiring.py. Rows are built in shots / scores /
alignment.py, the manifest in manifest.py, the maths in metrics.py / board.py / human_alignment.py."""

from bench_assets.vistorybench.aggregate_assets import vistorybench_human_alignment, vistorybench_leaderboard
from bench_assets.vistorybench.input_assets import (vistorybench_matches, vistorybench_outputs,
                                                    vistorybench_references, vistorybench_story)
from bench_assets.vistorybench.metric_assets import (vistorybench_alignment, vistorybench_inception_score,
                                                     vistorybench_scores)
from bench_assets.vistorybench.wiring import P

__all__ = ["P", "ASSETS", "ITEM_ASSETS", "GENERATOR_ASSETS"]  # what benchmarks.py reads

ASSETS = [vistorybench_story, vistorybench_references, vistorybench_outputs, vistorybench_matches,
          vistorybench_scores, vistorybench_alignment, vistorybench_inception_score, vistorybench_leaderboard,
          vistorybench_human_alignment]
ITEM_ASSETS = ["vistorybench_story", "vistorybench_references"]
GENERATOR_ASSETS = ["vistorybench_outputs", "vistorybench_matches", "vistorybench_scores", "vistorybench_alignment"]
