"""Aggregates wait for a metric partition: an item run alone must not launch a leaderboard with nothing to aggregate
(the automation sensor did, and the run failed: "no ... partition has been materialised yet")."""
from dagster import (AssetExecutionContext, AutomationCondition, Definitions, DynamicPartitionsDefinition, asset,
                     evaluate_automation_conditions, instance_for_test, materialize)
from bench_assets.core.automation import board_condition

P = DynamicPartitionsDefinition(name="toy_items")

@asset
def toy_item():
    return 1

@asset(partitions_def=P)
def toy_metric(context: AssetExecutionContext):
    return 2

@asset(deps=[toy_item, toy_metric], automation_condition=board_condition("toy_metric"))
def toy_board():
    return 3

def test_board_waits_for_a_metric_partition():
    defs = Definitions(assets=[toy_item, toy_metric, toy_board])
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("toy_items", ["a", "b"])
        r = evaluate_automation_conditions(defs=defs, instance=instance)
        materialize([toy_item], instance=instance)
        r = evaluate_automation_conditions(defs=defs, instance=instance, cursor=r.cursor)
        assert r.get_num_requested(toy_board.key) == 0
        materialize([toy_metric], partition_key="a", instance=instance)
        r = evaluate_automation_conditions(defs=defs, instance=instance, cursor=r.cursor)
        assert r.get_num_requested(toy_board.key) == 1


def test_every_leaderboard_waits_for_a_metric_partition():
    from bench_assets.benchmarks import BENCHMARKS
    for name, b in BENCHMARKS.items():
        board = next(a for a in b.assets if b.leaderboard in {k.to_user_string() for k in a.keys})
        cond = board.automation_conditions_by_key[next(iter(board.keys))]
        assert "some metric partition exists" in repr(cond), name
