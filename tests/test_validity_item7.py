"""Issue 23 item 7, LoCoT2V's validity cases shuffled_events, truncated_file and wrong_rate_header (helper "cases"):
the perturbed files are what the cases say they are. Small synthetic videos through the same builders the suite uses
(bench_assets/locot2v/validity.py) and the project's frame source (core/media.py); the dialogue's shot order is
checked against the clip's hand-checked labels (data/footage/Megamind.yaml). Bounded: a few seconds."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench_assets.core import footage, media
from bench_assets.core import validity as V
from bench_assets.locot2v import validity as L
from bench_assets.locot2v.metric_specs import METRICS

N, FPS = 90, 25.0


def _video(tmp_path: Path) -> Path:
    """A clip where every frame differs (a bar moving over a grey ramp), written as the suite writes its reference."""
    frames = np.zeros((N, 48, 64, 3), np.uint8)
    for i in range(N):
        frames[i, :, :, 1] = (i * 7) % 256
        frames[i, :, (i * 3) % 64] = 255
    return V.write_video(frames, tmp_path / "ref.mp4", FPS)


def _all_frames(path: Path) -> tuple[media.VideoSource, np.ndarray]:
    src = media.VideoSource(path)
    req = src.take(list(range(src.n_frames)), name="test")
    src.run()
    return src, req.frames


def test_truncated_file_declares_every_frame_decodes_fewer_and_they_are_the_reference_frames(tmp_path):
    ref = _video(tmp_path)
    cut = L.truncate_file(ref, tmp_path / "cut.mp4")
    assert cut.stat().st_size < ref.stat().st_size
    src, got = _all_frames(cut)
    assert src.declared_frames == N and media.MIN_FRAMES_CUT_SHORT <= src.n_frames < N
    _, whole = _all_frames(ref)
    # stream copy: the same frames, only fewer; the cut may fall inside the last one (FFmpeg conceals it)
    np.testing.assert_array_equal(got[:-1], whole[:src.n_frames - 1])
    rec = src.decode_record()      # what LoCoT2V's visual rows carry to the board's n_decode_warnings
    assert rec["corrupt_frames"] <= 1 and rec["lost_frames"] == 0
    assert f"declares {N} frames but the file holds {src.n_frames}" in rec["decode_warnings"]
    assert media.VideoSource(ref).decode_record()["decode_warnings"] == ""


def test_wrong_rate_header_states_the_wrong_rate_while_frames_and_times_are_the_reference(tmp_path):
    ref = _video(tmp_path)
    bad = L.wrong_rate_header(ref, tmp_path / "hdr.mp4", FPS)
    src, got = _all_frames(bad)
    assert src.fps_header == pytest.approx(FPS * L.HEADER_RATE_FACTOR, rel=1e-3)
    assert src.fps == pytest.approx(FPS, rel=2e-3)               # Matroska's millisecond timestamps
    assert any("header states" in w for w in src.warnings)
    r, whole = _all_frames(ref)
    np.testing.assert_array_equal(got, whole)
    np.testing.assert_allclose(src.frame_times(), r.frame_times(), atol=2e-3)
    # the frames a metric sampling at a rate reads (stated on fresh sources: a source states its needs before its pass)
    assert media.VideoSource(bad).at_fps(8.0).indices == media.VideoSource(ref).at_fps(8.0).indices


def test_shuffled_dialogue_shows_both_people_to_each_subject_and_the_reference_does_not():
    _, clip, spans, _, events = L.DIALOGUE
    chars = footage.ground_truth(clip)["characters"]

    def who(span):   # the labelled character whose frames hold the shot
        return next(c for c in ("woman", "man") if any(a <= span[0] and span[1] <= b for a, b in chars[c]["frames"]))

    subject_of = {L.WOMAN: "woman", L.MAN: "man"}
    assert sorted(L.SHUFFLED_ORDER) == list(range(len(spans)))   # the same shots, reordered

    def shown(order):
        out = {}
        for e, k in zip(events, order):
            out.setdefault(subject_of[e["subject"]], set()).add(who(spans[k]))
        return out

    assert shown(range(len(spans))) == {"woman": {"woman"}, "man": {"man"}}
    assert shown(L.SHUFFLED_ORDER) == {"woman": {"woman", "man"}, "man": {"woman", "man"}}


def test_item7_cases_read_validation_sources_name_declared_metrics_and_every_cut_file():
    suite = V.Suite("locot2v", Path("."), Path("."), L.REFERENCE, L.ITEM7_CASES)
    V.check_split(suite)                        # raises on a calibration source or a case naming none
    V.check_expectations(suite, METRICS)        # raises on an undeclared metric
    assert all(footage.SOURCES[s].split == footage.VALIDATION for c in L.ITEM7_CASES for s in c.sources)
    cut = next(c for c in L.ITEM7_CASES if c.case_id == "truncated_file")
    # one expectation per sample: a file that fails to evaluate is its own "cannot run" row, not averaged away
    assert sorted(e.units for e in cut.expectations) == sorted(f"^{s[0]}(/|$)" for s in L.SAMPLES)
    # each regex selects its sample's item-level unit as table_unit_values writes it from a metric table's columns
    # (the item, then the other unit keys, empty on item rows), and no other sample's
    from bench_assets.core.tables import METRIC_COLUMNS
    keys = [k for k in V.UNIT_KEYS if k in METRIC_COLUMNS]
    assert keys[0] == "item"
    units = ["/".join([sid] + [""] * (len(keys) - 1)) for sid in [s[0] for s in L.SAMPLES] + [L.DIALOGUE[0]]]
    for c in L.ITEM7_CASES:
        for e in c.expectations:
            hit = [u for u in units if e.units is None or __import__("re").search(e.units, u)]
            assert hit and (e.units is None or len(hit) == 1), (c.case_id, e.units, hit)
    for c in L.ITEM7_CASES:
        for e in c.expectations:
            assert c.case_id in METRICS[e.metric_id].validity, (c.case_id, e.metric_id)
