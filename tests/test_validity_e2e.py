"""The validity suite end to end on real footage, bounded for CI: two EntityBench episodes cut from real clips
(the animated dialogue cut at its real cuts, where the identity swap puts the man in the woman's shot; a man in a
suit cycling), the identity-swap and frozen-frames cases, evaluated through the normal assets. `bench validate`
runs every case of every benchmark (README: Validity)."""
import pytest

from bench_assets.core import footage as F
from bench_assets.core import validity as V


@pytest.mark.slow
def test_identity_swap_and_frozen_frames_move_entitybench_the_right_way(tmp_path):
    F.require_footage("Megamind.avi", "carphone_pristine.mp4", "bikes.mp4")
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.entitybench import validity as EV

    suite = EV.build_suite(tmp_path, episodes=["vdialogue", "vsuit"], cases=["identity_swap", "frozen"])
    table = V.evaluate_suite(suite, BENCHMARKS["entitybench"], tmp_path, progress=lambda _s: None)
    print(V.format_table(table))
    rows = table.set_index(["case", "metric_id"])

    swap = rows.loc[("identity_swap", "cs_face_identity")]
    assert swap["passed"], swap.to_dict()
    # the bar: a character identity metric drops by at least 0.10 when a shot shows another person
    assert swap["difference"] <= -0.10
    assert rows.loc[("frozen", "dynamic_degree")]["passed"]
    # the paper's appearance-embedding consistency is reported beside it; it must not move the wrong way
    assert rows.loc[("identity_swap", "cs_face")]["difference"] < 0
