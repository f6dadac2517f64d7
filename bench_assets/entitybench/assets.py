"""EntityBench wiring, assembled: the inputs (episodes, registry, dataset statistics, generator outputs, grounding
crops; input_assets.py), one asset per metric family (metric_assets.py) and the aggregates (leaderboard, gap decay,
effect sizes, manifest; aggregate_assets.py). Rows are built in outputs / grounding / pillar1 / consistency /
judged / dataset_stats.py, the maths in metrics.py / board.py / core."""

from bench_assets.entitybench.aggregate_assets import (entitybench_effect_sizes, entitybench_gap_decay,
                                                       entitybench_leaderboard, entitybench_manifest_table)
from bench_assets.entitybench.input_assets import (entitybench_dataset_statistics, entitybench_entity_registry,
                                                   entitybench_episode, entitybench_grounding, entitybench_outputs)
from bench_assets.entitybench.metric_assets import (entitybench_action, entitybench_fidelity,
                                                    entitybench_llm_consistency, entitybench_pillar1,
                                                    entitybench_presence_consistency)

# what benchmarks.py reads (order kept from before the split)
ASSETS = [entitybench_episode, entitybench_entity_registry, entitybench_dataset_statistics, entitybench_outputs,
          entitybench_grounding, entitybench_pillar1, entitybench_fidelity, entitybench_action,
          entitybench_presence_consistency, entitybench_llm_consistency, entitybench_leaderboard,
          entitybench_gap_decay, entitybench_effect_sizes, entitybench_manifest_table]
