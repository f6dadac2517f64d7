"""Every metric of the vistorybench board, declared once (core/metric_spec.py): the board, the site, the CLI
(`bench metrics`), validity and parity read these.

``paper_id`` is the column the paper prints (Table 1 for the board's columns, Table 7 for the alignment aspects).
Additions (``paper_id`` ADDITION, marked ``+`` wherever the board is read, never ranked): the CIDS values over
good-quality faces only (issue 23), beside the paper's CIDS, which reads every crop and reference as defined. Scales: the starred columns (CSD, CIDS, alignment, OCCM) and the copy-paste degree
on 0-100 (cosines x 100), the Inception Score raw (exp KL, >= 1), aesthetics on the predictor's 1-10, the
alignment aspects on the judge's 0-4 (Table 7).

Substitute marks: most metrics run on a fixed set of slots (``label_substitutes`` from the spec), but the identity
metrics use a different encoder per character (``face`` for realistic humans, ``character_embedder`` for every
other tag), so ``label_rows`` labels those rows by the character's space and each story row by the characters it
averaged.
"""
from __future__ import annotations

from typing import Mapping, Optional

import pandas as pd

from bench_assets.core.metric_spec import ADDITION, MetricSpec, MetricSpecs, join_substitutes, judge_substitute, \
    label_substitutes, substitute_label

STARRED = (0.0, 100.0)
PER_STORY = "mean over stories of the story value"
SCORES = ("vistorybench_scores",)
ALIGNMENT = ("vistorybench_alignment",)
# the identity encoder of a character's space (characters.space_of): which slot a row's value depends on
SPACE_SLOT = {"face": "face", "features": "character_embedder"}
IDENTITY_SLOTS = ("character_detector", "face", "character_embedder")

# the paper's judge of prompt alignment (Sec. 4, "We primarily use GPT-4.1 for automated evaluation"): a value any
# other model judged carries the substitute mark
PAPER_JUDGE = "gpt-4.1"


def judge_label(model: Optional[str]) -> Optional[str]:
    """The substitute label of a value this judge model answered, None for the paper's judge."""
    return judge_substitute(model, PAPER_JUDGE)


METRICS = MetricSpecs("vistorybench", [
    MetricSpec("csd_cross", "style", "higher",
               "CSD style cosine x100 of each shot against the first reference of each on-stage character; mean "
               "in shot, then over shots, then over stories", paper_id="CSD (Style) Cross*", scale=STARRED,
               unit="cosine x 100", aggregation=PER_STORY, slots=("style_csd",), inputs=SCORES,
               validity=("colour_shift",)),
    MetricSpec("csd_self", "style", "higher",
               "mean CSD style cosine x100 over all pairs of a story's generated shots", paper_id="CSD (Style) Self*",
               scale=STARRED, unit="cosine x 100", aggregation=PER_STORY, slots=("style_csd",), inputs=SCORES),
    MetricSpec("cids_cross", "character identity", "higher",
               "per character: mean cosine x100 of its matched crops against its references (face identity for "
               "realistic humans, image features otherwise; Hungarian matching of 'character' boxes); story = "
               "mean over its characters, a never-matched character counts 0",
               paper_id="CIDS (Character) Cross*", scale=STARRED, unit="cosine x 100", aggregation=PER_STORY,
               slots=IDENTITY_SLOTS, inputs=SCORES + ("vistorybench_matches", "vistorybench_references"),
               validity=("identity_swap", "colour_shift")),
    MetricSpec("cids_self", "character identity", "higher",
               "per character: mean cosine x100 over pairs of its matched crops (strict upper triangle; 100 when "
               "matched once, 0 when never); story = mean over its characters",
               paper_id="CIDS (Character) Self*", scale=STARRED, unit="cosine x 100", aggregation=PER_STORY,
               slots=IDENTITY_SLOTS, inputs=SCORES + ("vistorybench_matches", "vistorybench_references"),
               validity=("identity_swap",)),
    # issue 23 item 4: additions, not the paper's (paper_id None); cids_cross / cids_self keep the paper's definition
    MetricSpec("cids_cross_good_faces_only", "character identity", "higher",
               "an addition beside cids_cross: the same per-character value with the faces below the quality floors "
               "(face size, blur or detector confidence below models.face's floors; crops and references) set aside, so a "
               "low-quality face is not scored as another person; a character whose matched faces (or references) "
               "are all below the floors has no value (skipped, with the reason), a never-matched one counts 0 as "
               "in the paper; non-face characters keep the paper's value; counts of low-quality faces in detail",
               paper_id=ADDITION, scale=STARRED, unit="cosine x 100",
               aggregation=PER_STORY + " (of the characters with a value)", slots=IDENTITY_SLOTS,
               inputs=SCORES + ("vistorybench_matches", "vistorybench_references")),
    MetricSpec("cids_self_good_faces_only", "character identity", "higher",
               "an addition beside cids_self: mean cosine x100 over pairs of a character's matched crops whose "
               "faces pass the quality floors (100 when one good face); a character whose matched faces are all "
               "below the floors has no value (skipped, with the reason); non-face characters keep the paper's "
               "value; counts of low-quality faces in detail",
               paper_id=ADDITION, scale=STARRED, unit="cosine x 100",
               aggregation=PER_STORY + " (of the characters with a value)", slots=IDENTITY_SLOTS,
               inputs=SCORES + ("vistorybench_matches", "vistorybench_references")),
    MetricSpec("occm", "character identity", "higher",
               "onstage character count matching: 100 exp(-|D - E| / (1e-6 + E)) per shot with E scheduled "
               "characters and D 'character' detections; shots with E = 0 skipped",
               paper_id="OCCM Score*", scale=STARRED, aggregation=PER_STORY, slots=("character_detector",),
               inputs=SCORES + ("vistorybench_matches",)),
    MetricSpec("alignment", "prompt alignment", "higher",
               "judge prompt alignment: mean of the four aspect means (0-4) x 25 per story",
               paper_id="Alignment Score*", scale=STARRED, aggregation=PER_STORY,
               # single-character questions show the matched crop: the detector and the identity encoders chose it
               slots=IDENTITY_SLOTS, inputs=ALIGNMENT + ("vistorybench_matches",),
               definition="the mean of the four subtasks x 25 (the official leaderboard script averages five "
                          "numbers on 0-4, the single-character action twice)"),
    MetricSpec("alignment.scene", "prompt alignment", "higher",
               "judge 0-4: the shot against its Setting Description (background, objects, mood; characters "
               "excluded)", paper_id="Scene score (Table 7)", scale=(0.0, 4.0), unit="judge score 0-4",
               aggregation=PER_STORY, inputs=ALIGNMENT),
    MetricSpec("alignment.camera", "prompt alignment", "higher",
               "judge 0-4: the shot against its Shot Perspective Design", paper_id="Camera score (Table 7)",
               scale=(0.0, 4.0), unit="judge score 0-4", aggregation=PER_STORY, inputs=ALIGNMENT),
    MetricSpec("alignment.character_action", "prompt alignment", "higher",
               "judge 0-4: the whole shot against its Static Shot Description",
               paper_id="Global character action score (Table 7)", scale=(0.0, 4.0), unit="judge score 0-4",
               aggregation=PER_STORY, inputs=ALIGNMENT),
    MetricSpec("alignment.single_character_action", "prompt alignment", "higher",
               "judge 0-4: each matched character's crop with its name against the Static Shot Description",
               paper_id="Single character action score (Table 7)", scale=(0.0, 4.0), unit="judge score 0-4",
               aggregation=PER_STORY, slots=IDENTITY_SLOTS, inputs=ALIGNMENT + ("vistorybench_matches",)),
    MetricSpec("inception_score", "image quality", "higher",
               "Inception Score exp(E KL(p(y|x) || p(y))), one split, over every delivered shot image of the slice; "
               "coverage = shot images read / shots of the slice's stories",
               paper_id="Inception Score", scale=None, unit="IS (>= 1)",
               aggregation="one score over all shot images of the slice", slots=("inception",),
               inputs=("vistorybench_inception_score",)),
    MetricSpec("aesthetics", "image quality", "higher",
               "aesthetic predictor v2.5 (SigLIP so400m), mean over shots then stories; >= 5.5 is 'excellent'",
               paper_id="Aesthetics Score", scale=(1.0, 10.0), unit="1-10", aggregation=PER_STORY,
               slots=("aesthetic_v25",), inputs=SCORES, validity=("blur",)),
    # copy-paste degree: higher = more copying of the reference; the paper prints no arrow and underlines an
    # excessively high value as a degradation sign, so there is no 'better' direction and it is never ranked
    MetricSpec("copy_paste", "copy-paste", "none",
               "copy-paste degree, protocol 1.3 (the reference code): per matched crop softmax([s(g, ref), "
               "s(g, mirror(ref))] / 0.01)[0] x100 (100: copies the reference's exact orientation, 50: as close to "
               "the mirror image); single-reference generators only; diagnostic, not ranked",
               paper_id="Copy-Paste Degree (reference code v1.3)", scale=STARRED, unit="probability x 100",
               aggregation=PER_STORY, slots=IDENTITY_SLOTS, inputs=SCORES + ("vistorybench_references",),
               kind="diagnostic", validity=("copy_paste",),
               definition="a story with no matched character has no value and is left out of the mean (the "
                          "official summary averages its 0.0 in); the paper averages over the stories that have it"),
    MetricSpec("copy_paste_paper", "copy-paste", "none",
               "copy-paste degree as the paper defines it (its Table 1 numbers): s(g, reference used) - mean s(g, "
               "the character's other references) x100, characters with >= 2 references; single-reference "
               "generators only; diagnostic, not ranked",
               paper_id="Copy-Paste Degree", scale=(-200.0, 200.0), unit="cosine difference x 100",
               aggregation=PER_STORY, slots=IDENTITY_SLOTS, inputs=SCORES + ("vistorybench_references",),
               kind="diagnostic",
               definition="s(g, reference used) - s(g, the character's other references) (the reference code "
                          "v1.3 scores a softmax against the mirrored reference: copy_paste beside it)"),
])

# Every id on the board, in the board's order.
BOARD_METRICS = tuple(s.id for s in METRICS)
# metrics whose value depends on the characters' spaces: labelled per row (character, crop, question)
SPACE_DEPENDENT = ("cids_cross", "cids_self", "cids_cross_good_faces_only", "cids_self_good_faces_only", "copy_paste",
                   "copy_paste_paper", "alignment.single_character_action")
# a story row takes the labels of these rows (alignment's only model-dependent part is its single-character aspect)
LABEL_SOURCE = {"alignment": "alignment.single_character_action"}

def row_slots(metric_id: str, space: Optional[str]) -> tuple[str, ...]:
    """The slots one row's value came from: the spec's, narrowed to the character's identity encoder."""
    slots = METRICS[metric_id].slots
    if space not in SPACE_SLOT:
        return slots
    return tuple(s for s in slots if s not in SPACE_SLOT.values() or s == SPACE_SLOT[space])


def label_rows(df: pd.DataFrame, models, spaces: Mapping[str, str]) -> pd.DataFrame:
    """Adds the ``substitute`` column to a ViStoryBench metric table at compute time.

    Every row gets its spec's label (``label_substitutes``); then a row of a space-dependent metric naming a
    character (``entity_id``, looked up in ``spaces``: character -> 'face' | 'features') gets the label of its
    detector and that character's encoder only, and a story row (level 'item') joins the labels of the rows with a
    value behind it (so a story of non-human characters is not marked with the face model, and vice versa)."""
    df = label_substitutes(df, METRICS, models)
    if not len(df):
        return df
    cache: dict[tuple[str, ...], Optional[str]] = {}

    def label(slots: tuple[str, ...]) -> Optional[str]:
        if slots not in cache:
            cache[slots] = substitute_label(slots, models)
        return cache[slots]

    subs = df["substitute"].astype(object).where(df["substitute"].notna(), None).tolist()
    ent = df["entity_id"].astype(object).where(df["entity_id"].notna(), None).tolist() \
        if "entity_id" in df.columns else [None] * len(df)
    for i, (mid, level, who) in enumerate(zip(df["metric_id"], df["level"], ent)):
        if mid in SPACE_DEPENDENT and level != "item" and who in spaces:
            subs[i] = label(row_slots(mid, spaces[who]))
    df["substitute"] = pd.array(subs, dtype="string")
    items = df.index[(df["level"] == "item") & df["metric_id"].isin(SPACE_DEPENDENT + tuple(LABEL_SOURCE))]
    for idx in items:
        src = LABEL_SOURCE.get(df.at[idx, "metric_id"], df.at[idx, "metric_id"])
        behind = df[(df["level"] != "item") & (df["metric_id"] == src) & (df["item"] == df.at[idx, "item"])
                    & df["value"].notna() & df["entity_id"].isin(list(spaces))]
        if len(behind):
            df.at[idx, "substitute"] = join_substitutes(behind["substitute"])
    return df
