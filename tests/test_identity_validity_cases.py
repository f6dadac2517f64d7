"""Issue 23 item 7 (helper "identity"): the identity validity cases are built from validation sources only and
perturb only what they say (cross-fade, heavy compression of the same person, a face donor from another source;
LoCoT2V's shuffled events)."""
import numpy as np

from bench_assets.core.footage import require_footage


def test_identity_validity_cases_read_only_validation_sources_and_build(tmp_path):
    from bench_assets.core import footage as FT
    from bench_assets.entitybench import validity as EV
    ids = {c.case_id: c for c in EV.CASES}
    for cid in ("cross_fade", "heavy_compression", "identity_swap_face_donor"):
        assert ids[cid].sources and all(FT.SOURCES[s].split == FT.VALIDATION for s in ids[cid].sources)
    shot = np.zeros((5, 8, 10, 3), np.uint8)
    donor = np.full((3, 16, 20, 3), 200, np.uint8)
    faded = EV.cross_fade(shot, donor)
    assert faded.shape == shot.shape and faded[0].max() == 0 and faded[-1].min() == 200
    assert 90 <= faded[2].mean() <= 110   # halfway: half of each
    require_footage("carphone_pristine.mp4", "carphone_distorted.mp4", "Megamind.avi")
    shots = [np.zeros((4, 288, 352, 3), np.uint8) + k for k in range(3)]
    got = EV.identity_variants("vcarphone", shots, {"p_cross_fade", "p_heavy_compression",
                                                    "p_identity_swap_face_donor"})
    for name, v in got.items():
        assert [s.shape for s in v] == [s.shape for s in shots], name
        assert np.array_equal(v[0], shots[0]) and np.array_equal(v[2], shots[2]), name   # only shot 2 changes
        assert not np.array_equal(v[1], shots[1]), name
    untouched = EV.identity_variants("vrabbit", shots, {"p_cross_fade"})["p_cross_fade"]
    assert all(np.array_equal(a, b) for a, b in zip(untouched, shots))
