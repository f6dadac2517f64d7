"""Every metric of the narrativetrack board, declared once (core/metric_spec.py): the board, the site, the CLI
(`bench metrics`), validity and parity read these.

The paper's Table 2: accuracy (%) per (dimension x format) cell, 13 cells (EE and EA have no ordering), and "Avg.",
the micro-average over every question (GPT-4o 20 frames: 714 correct of 1006 = 70.97; the mean of its 13 cells would
be 69.32), plus the slices the paper analyses (direction, track type, distractor type). All computed from the paper's
question types only. The face-anchored *measured* questions (measured.py: when is the face of an anchored person
visible, EE; are the two anchors one person, EA) are another construct: additions under ``measured.*``, never pooled
into a paper cell, a slice or the average. ``slots``: the model slots whose checkpoint builds the questions (and so
decides every value): the substitute mark comes from them (board.qa_substitute)."""
from __future__ import annotations

from bench_assets.core.metric_spec import ADDITION, MetricSpec, MetricSpecs

DIMENSIONS = {"EE": "Existence", "AC": "Action Changes", "OC": "Outfit Changes", "SC": "Scene Changes",
              "EA": "Ambiguity"}
# the paper's 13 cells (Table 2 column order); EE and EA have no ordering questions
PAPER_CELLS = (("EE", "binary"), ("EE", "mc"), ("AC", "binary"), ("AC", "mc"), ("AC", "ordering"),
               ("OC", "binary"), ("OC", "mc"), ("OC", "ordering"), ("SC", "binary"), ("SC", "mc"),
               ("SC", "ordering"), ("EA", "binary"), ("EA", "mc"))
# the measured questions' cells (measured.py asks EE binary / MC and EA binary)
MEASURED_CELLS = (("EE", "binary"), ("EE", "mc"), ("EA", "binary"))
FORMAT_LABEL = {"binary": "B", "mc": "MC", "ordering": "O"}
# values every slice family shows (a value without a question is None with its reason); others seen are added
SLICE_VALUES = {"direction": ("start_to_later", "later_to_start", "agnostic"),
                "track_type": ("appear", "disappear", "reappear"),
                "distractor": ("real", "synthetic", "none")}

# families: the site groups the board by them (core/site.py reads MetricSpec.family), plus the additions
AVERAGE, CELLS, MEASURED = "average", "dimension x format", "measured (addition)"
SLICE_FAMILY = {"direction": "direction", "track_type": "track type", "distractor": "distractor"}

QA_SLOTS = ("person_detector", "reid", "face", "image_embedder")
INPUTS = ("narrativetrack_qa", "narrativetrack_answers")
PERCENT = dict(scale=(0.0, 100.0), unit="%", slots=QA_SLOTS, inputs=INPUTS, coverage_policy="reported")
CELL_AGGREGATION = ("correct / (answered + answerer failures) in % (raw_mean: over answered only; questions the "
                    "evaluator could not ask are counted apart)")


def cell_id(dim: str, fmt: str, measured: bool = False) -> str:
    return f"{'measured' if measured else 'accuracy'}.{dim}.{fmt}"


def _cell(dim: str, fmt: str) -> MetricSpec:
    return MetricSpec(cell_id(dim, fmt), CELLS, "higher",
                      f"{DIMENSIONS[dim]} ({dim}), {FORMAT_LABEL[fmt]} questions: strict / lenient accuracy",
                      paper_id=f"Table 2: {dim} {FORMAT_LABEL[fmt]}", aggregation=CELL_AGGREGATION, **PERCENT)


def _slice(col: str, what: str, where: str) -> MetricSpec:
    return MetricSpec(f"accuracy.{col}", SLICE_FAMILY[col], "higher",
                      f"accuracy over the paper's questions of one {what} (accuracy.{col}.<value>)",
                      paper_id=where, pattern=rf"accuracy\.{col}\.[A-Za-z0-9_]+",
                      aggregation="micro-average over the slice's paper questions; " + CELL_AGGREGATION, **PERCENT)


METRICS = MetricSpecs("narrativetrack", [
    *[_cell(d, f) for d, f in PAPER_CELLS],
    MetricSpec("accuracy.avg", AVERAGE, "higher",
               "Table 2 Avg.: micro-average over every paper question (not the mean of the 13 cells)",
               paper_id="Table 2: Avg.", aggregation="micro-average over the paper's questions; " + CELL_AGGREGATION,
               **PERCENT),
    _slice("direction", "temporal direction (start_to_later, later_to_start, agnostic)",
           "§4.2.2 Fig. 5 / 11 (direction)"),
    _slice("track_type", "entity track type (appear, disappear, reappear)", "§4.2.3 Fig. 6 (track type)"),
    _slice("distractor", "distractor type (real, synthetic, none)", "§4.2.4 Fig. 7 (distractor)"),
    MetricSpec("measured", MEASURED, "higher",
               "face-anchored measured questions (measured.py): EE, when the face of the person with the largest "
               "face at the beginning / end is visible (binary, MC); EA, whether the two anchors are one person "
               "(binary). Another construct than the paper's EE / EA: never pooled into a paper cell",
               paper_id=ADDITION, pattern=r"measured\.(EE\.(binary|mc)|EA\.binary)",
               aggregation=CELL_AGGREGATION, **PERCENT),
    MetricSpec("measured.avg", MEASURED, "higher", "micro-average over every measured question",
               paper_id=ADDITION, aggregation="micro-average over the measured questions; " + CELL_AGGREGATION,
               **PERCENT),
    # not on the board: the validity suite's check of the QA's foundation (validity.py)
    MetricSpec("identity_pair_agreement", "pipeline quality (diagnostic)", "higher",
               "share of hand-labelled appearance pairs (same person / different people) on which the pipeline's "
               "identities agree with the labels; 1.0 is the ground truth", paper_id=ADDITION, scale=(0.0, 1.0),
               aggregation="pairs agreeing / labelled pairs, per clip", coverage_policy="none",
               slots=("person_detector", "reid", "face"), kind="diagnostic", validity=("identities",)),
    # not on the board: the validity suite's check of shot cuts (segments and scene questions rest on them)
    MetricSpec("cut_recall", "pipeline quality (diagnostic)", "higher",
               "share of the intervals between consecutive sampled frames that hold a hand-labelled cut in which the "
               "pipeline's shot number changes; 1.0 is the ground truth", paper_id=ADDITION, scale=(0.0, 1.0),
               aggregation="intervals with a cut found / intervals with a cut, per clip and pooled", coverage_policy="none",
               kind="diagnostic", validity=("cuts_moving_camera",)),
    MetricSpec("false_cuts_per_minute", "pipeline quality (diagnostic)", "lower",
               "shot changes between consecutive sampled frames with no hand-labelled cut between them, per minute of "
               "video; 0 is the ground truth", paper_id=ADDITION, scale=None,
               aggregation="false cuts / minutes of video, per clip and pooled", coverage_policy="none",
               kind="diagnostic", validity=("cuts_moving_camera",)),
])
