"""NarrativeTrack wiring, assembled: each pipeline stage an asset partitioned by video (stage_assets.py,
registry_assets.py), the QA set per video, answers per (answerer x video) and the leaderboard (qa_assets.py), the
authors' released QA (released.py); QA over generated EntityBench episodes lives in bridges/narrativetrack_episodes.py.
Math in pipeline.py / qa.py / scoring.py / metrics.py / board.py, model work in stages.py, prompts in judging.py."""

from bench_assets.narrativetrack import released
from bench_assets.narrativetrack.qa_assets import narrativetrack_answers, narrativetrack_leaderboard, narrativetrack_qa
from bench_assets.narrativetrack.registry_assets import (narrativetrack_context, narrativetrack_entity_registry,
                                                         narrativetrack_pipeline_quality)
from bench_assets.narrativetrack.stage_assets import (narrativetrack_detections, narrativetrack_faces,
                                                      narrativetrack_frames, narrativetrack_identities,
                                                      narrativetrack_reid, narrativetrack_tracklets,
                                                      narrativetrack_video)
from bench_assets.narrativetrack.wiring import P

# what benchmarks.py reads: the partitions and the asset lists
__all__ = ["P", "ASSETS", "ITEM_ASSETS", "GENERATOR_ASSETS"]

ASSETS = [narrativetrack_video, narrativetrack_frames, narrativetrack_detections, narrativetrack_tracklets,
          narrativetrack_reid, narrativetrack_faces, narrativetrack_identities, narrativetrack_context,
          narrativetrack_entity_registry, narrativetrack_pipeline_quality, narrativetrack_qa, narrativetrack_answers,
          narrativetrack_leaderboard, *released.ASSETS]
ITEM_ASSETS = ["narrativetrack_video", "narrativetrack_frames", "narrativetrack_detections",
               "narrativetrack_tracklets", "narrativetrack_reid", "narrativetrack_faces", "narrativetrack_identities",
               "narrativetrack_context", "narrativetrack_entity_registry", "narrativetrack_pipeline_quality",
               "narrativetrack_qa"]
GENERATOR_ASSETS = ["narrativetrack_answers"]
