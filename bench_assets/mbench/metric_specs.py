"""Every metric of the mbench board, declared once (core/metric_spec.py): the board, the site, the CLI
(`bench metrics`), validity and parity read these.

The board's ids are the paper's Table 2 cells: the trigger-conditioned M-Score of each of the 12 sub-dimensions
(``m_score.<sub-dimension>``, 100 x harmonic mean of trigger coverage C_k and reliability S_k, paper Eq. 1-3) and
the three dimension M-Scores (mean of their sub-dimensions' M-Scores). Additions carry ``paper_id=None``.
``slots`` are every model slot that can decide a value; ``slots_used`` narrows them to the slots one score row
actually used (mode, mask source), from which ``mbench_scores`` labels its substitutes at compute time.
"""
from __future__ import annotations

from typing import Optional

from bench_assets.core.metric_spec import ADDITION, MetricSpec, MetricSpecs
from bench_assets.mbench import metrics

SCALE = (0.0, 100.0)
SCORES = ("mbench_scores",)
# families: the site groups the board by them (core/site.py reads MetricSpec.family)
FAMILY = {k: dim for dim, ks in metrics.DIMENSIONS.items() for k in ks}

# which slots can decide each sub-dimension's per-case score (the judge, not a model slot, decides self-evolution)
SUB_SLOTS: dict[str, tuple[str, ...]] = {
    "identity": ("face",),
    "appearance": ("face", "person_detector", "image_embedder"),
    "geometry": ("pose", "object_segmenter", "open_vocab_detector"),
    "texture": ("image_embedder", "object_segmenter", "pose", "open_vocab_detector"),
    "epipolar": ("pose",),
    "reprojection": ("pose",),
    "lighting": ("pose",),            # the revisit pairs come from the trajectory
    "style": ("style_vgg",),
    "state_evolution": (),
    "evolution_correctness": (),
    "text_instruction": ("clip_b32",),
    "action_instruction": ("pose",),
}
SUB_TEXT = {
    "identity": "face tracks over 32 frames (greedy, rolling-average matching); mean over tracks with >= 2 "
                "detections of the mean cosine to the track centroid (paper Eq. 6). As defined it reads each "
                "track's own consistency: a person replaced by another between shots forms a consistent track of "
                "their own and lowers it only when the tracker wrongly merges the two (identity_first_appearance, "
                "an addition, reads the replacement); faces below the face model's quality floors are tracked as "
                "the paper does and counted in the row's detail (low_quality)",
    "appearance": "the identity tracks' full-body crops embedded by the image embedder; centroid consistency",
    "geometry": "SSIM inside the object mask of the reference frame vs the return frame warped into its view (Eq. 4)",
    "texture": "image-embedder features of the masked object per frame; mean cosine to the track centroid (Eq. 5)",
    "epipolar": "exp(-E), E the symmetric point-to-epipolar-line distance over revisit pairs, F from the poses (Eq. 7)",
    "reprojection": "exp(-E), E the reprojection error of triangulated matches over revisit pairs (Eq. 8); an A "
                    "case whose schedule only rotates has no baseline and is not one of its cases",
    "lighting": "exp(-D/tau), D the CIELAB lightness and colour shift between revisit pairs (Eq. 9-12)",
    "style": "1 - mean adjacent-frame Frobenius distance of normalised VGG-16 Gram matrices (Eq. 13)",
    "state_evolution": "judge 1-5 (did the out-of-view process happen), g = (x-1)/4",
    "evolution_correctness": "judge 1-5 physical plausibility s = (x-1)/4; g x s (Eq. 14)",
    "text_instruction": "per segment, mean CLIP cosine of 4 frames to the segment text (Eq. 15); T cases",
    "action_instruction": "per frame twist from the poses vs the action's ideal twist, (cos+1)/2 outside the wait "
                          "phase (Eq. 16-17); A cases whose schedule moves the camera",
}
# the validity cases (validity.py CASES) whose expectations name the sub-dimension
VALIDITY = {"geometry": ("changed_world", "camera_ignores_actions"),
            "epipolar": ("changed_world", "camera_ignores_actions"),
            "reprojection": ("changed_world", "camera_ignores_actions"),
            "identity": ("changed_world", "within_track_drift"), "action_instruction": ("camera_ignores_actions",)}
M_SCORE_TEXT = ("; M-Score = 100 x 2 S C / (S + C), C = triggered / cases it applies to, S = mean score over every "
                "triggered case (a triggered case without a score counts 0)")

# additions (ours): a per-case score id in mbench_scores -> its own M-Score row, never a part of a paper dimension
IDENTITY_FIRST_APPEARANCE = "identity_first_appearance"
ADDITION_SUBS = (IDENTITY_FIRST_APPEARANCE,)
ADDITION_SLOTS = {IDENTITY_FIRST_APPEARANCE: ("face",)}
ADDITION_SUBSETS = {IDENTITY_FIRST_APPEARANCE: "human"}

POSE_BOX_STAND_IN = "object_segmenter: box carried by the pose trajectory (no SAM 2)"


def board_id(sub: str) -> str:
    """The board's id of a sub-dimension's (or dimension's) M-Score."""
    return f"m_score.{sub}"


def _sub_spec(k: str) -> MetricSpec:
    return MetricSpec(board_id(k), FAMILY[k], "higher", SUB_TEXT[k] + M_SCORE_TEXT, scale=SCALE, unit="M-Score",
                      aggregation="trigger-conditioned M-Score over the cases of the mode", coverage_policy="reported",
                      slots=SUB_SLOTS[k], inputs=SCORES, validity=VALIDITY.get(k, ()), unit_id=k)


METRICS = MetricSpecs("mbench", [
    *(_sub_spec(k) for k in metrics.ALL_METRICS),
    *(MetricSpec(board_id(dim), "dimension M-Scores", "higher",
                 f"mean of the {dim} sub-dimensions' M-Scores that apply in the mode; None unless all have a value",
                 scale=SCALE, unit="M-Score", aggregation="mean of the sub-dimension M-Scores",
                 coverage_policy="reported", slots=tuple(dict.fromkeys(s for k in ks for s in SUB_SLOTS[k])),
                 inputs=("mbench_scores",), parts=tuple(board_id(k) for k in ks), kind="aggregate")
      for dim, ks in metrics.DIMENSIONS.items()),
    MetricSpec(board_id(IDENTITY_FIRST_APPEARANCE), "additions", "higher",
               "ours: the paper's identity (centroid consistency of the face tracks) x the fraction of later sampled "
               "frames whose closest face is still within the threshold of the first appearance (a person replaced "
               "by another forms two clean tracks, which the paper's identity scores as consistent)" + M_SCORE_TEXT,
               paper_id=ADDITION, scale=SCALE, unit="M-Score",
               aggregation="trigger-conditioned M-Score over the human cases of the mode", coverage_policy="reported",
               slots=ADDITION_SLOTS[IDENTITY_FIRST_APPEARANCE], inputs=SCORES,
               validity=("changed_world", "within_track_drift"),
               unit_id=IDENTITY_FIRST_APPEARANCE),
])


def slots_used(sub: str, mode: str, mask_source: Optional[str] = None,
               segmenter_available: bool = False) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(slots one score row of ``sub`` used, stand-in labels): A cases place the object by the case's box (no
    open-vocabulary detector); without the object_segmenter the box carried by the pose is the mask (a stand-in
    named in the label, the pose then deciding texture too); with SAM 2 masks, texture no longer reads the pose."""
    slots = list(SUB_SLOTS.get(sub) or ADDITION_SLOTS.get(sub, ()))
    extra: list[str] = []
    if mode == "A" and "open_vocab_detector" in slots:
        slots.remove("open_vocab_detector")
    if sub in ("geometry", "texture"):
        pose_box = mask_source == "pose_box" or (mask_source is None and not segmenter_available)
        if pose_box:
            slots.remove("object_segmenter")
            extra.append(POSE_BOX_STAND_IN)
        elif sub == "texture":
            slots.remove("pose")
    return tuple(slots), tuple(extra)


# the paper's judges (Sec. 5.1): Seed 2.0 decides the T trigger, Qwen3-VL-235B-A22B self-evolution
PAPER_JUDGES = {"trigger": "Seed 2.0", "self_evolution": "Qwen3-VL-235B-A22B"}
_PAPER_JUDGE_KEYS = {"trigger": ("seed-2.0", "seed 2.0", "seed2.0"), "self_evolution": ("qwen3-vl-235b",)}


def judge_substitute(role: str, model: Optional[str]) -> Optional[str]:
    """'<role> judge: <model> (paper: ...)' when the judge that answered is not the paper's; None when it is."""
    if not model:
        return None
    if any(k in model.lower() for k in _PAPER_JUDGE_KEYS[role]):
        return None
    return f"{role.replace('_', '-')} judge: {model} (paper: {PAPER_JUDGES[role]})"


def label_text(label: Optional[str]) -> Optional[str]:
    """One substitute label made safe to join: '; ' separates labels (core.metric_spec.join_substitutes), so a
    checkpoint name holding one (the offline pose: '...; 60 deg horizontal FOV') keeps it as ', '."""
    return None if label is None else label.replace(";", ",")
