"""Every metric of the locot2v board, declared once (core/metric_spec.py): the board, the site, the CLI
(`bench metrics`), validity and parity read these.

The 26 sub-dimensions (family = their dimension), the five dimensions and `overall` (paper aggregates: a value only
when every part has one), and one partial mean per aggregate (`<name>_available`, an addition: the mean of whichever
parts have a value, with its coverage). All in %, higher is better (the paper averages every sub-dimension as is).
``slots`` are the model slots whose checkpoint decides the value, read from pipeline.py / stream.py: the substitute
mark of an item row comes from them (``label_substitutes`` in assets.py)."""
from __future__ import annotations

from typing import Optional

from bench_assets.core.metric_spec import ADDITION, MetricSpec, MetricSpecs, judge_substitute
from bench_assets.locot2v import constants

VISUAL = ("locot2v_visual",)
JUDGED = ("locot2v_judged",)
# the MLLM the paper names for its judged evaluation (Sec. 3.2.2: "we employ Qwen2.5-VL-7B to generate a detailed
# description"); a value any other model judged carries the substitute mark
PAPER_JUDGE = "Qwen2.5-VL-7B"


def judge_label(model: Optional[str]) -> Optional[str]:
    """The substitute label of a value this judge model answered, None for the paper's judge."""
    return judge_substitute(model, PAPER_JUDGE)
HEADLINE_FAMILY = "dimensions and overall"   # the five dimensions and overall (the site's headline chart)
PARTIAL_FAMILY = "partial means (additions)"
SUB_AGGREGATION = ("mean over the samples with a value (a sample the generator did not deliver counts 0 in value, "
                   "not in raw_mean); coverage = samples scored / samples")
EVENT_SLOTS = ("image_embedder", "open_vocab_detector", "subject_segmenter", "clip_b32")


def _sub(mid: str, description: str, slots: tuple[str, ...] = (), inputs=VISUAL, validity=()) -> MetricSpec:
    dim = next(d for d, ms in constants.DIMENSIONS.items() if mid in ms)
    return MetricSpec(mid, dim, "higher", description, scale=(0.0, 100.0), unit="%", aggregation=SUB_AGGREGATION,
                      slots=slots, inputs=inputs, validity=validity)


SUB_DIMENSIONS = [
    # static quality
    _sub("aesthetic_quality", "aesthetic predictor v2.5 at 1 frame/s, mean over frames / RR-UB, capped at 1",
         ("aesthetic_v25",), validity=("blur",)),
    _sub("technical_quality", "DOVER++ fused score on clips shorter than 10 s, mean over clips", ("dover",),
         validity=("blur",)),
    # text-video alignment (the judge describes the video; the text embedder compares)
    _sub("overall_alignment", "clipped cosine of the judge's video description and the prompt base (text embeddings)",
         ("long_text_embedder",), JUDGED),
    _sub("event_alignment", "Hungarian-matched events of the description vs the prompt's, S_sem x mean field "
         "similarity, times the order factor 1 - I / I_max", ("long_text_embedder",), JUDGED),
    # temporal quality
    _sub("dynamic_degree", "VBench dynamic degree: 100 when enough analysis pairs move (top-5 % flow magnitude rule), "
         "else 0",
         ("flow",), validity=("frozen", "wrong_rate_header")),
    _sub("motion_smoothness", "VBench on native frames: 100 x (255 - MAE) / 255 of each odd frame rebuilt from its "
         "neighbours (AMT-S in the paper profile, flow midpoints offline)", ("interpolator",),
         validity=("frozen", "shuffle", "truncated_file")),
    _sub("warping_error", "100 x (1 - WE), WE = mean abs difference of the flow-warped previous frame over "
         "non-occluded pixels (-log(WE) kept in detail)", ("flow",), validity=("shuffle", "wrong_rate_header")),
    _sub("semantic_consistency", "mean clipped cosine of consecutive analysis frames' image features", ("siglip2",)),
    _sub("temporal_flickering", "100 x (255 - MAE) / 255 over static consecutive native frame pairs (VBench static "
         "rule per pair; VBench's per-video filter in the detail)", ("flow",),
         validity=("flicker",)),
    _sub("transition_smoothness", "1 - A of the normalised pair similarities in the 2k+1 window around each "
         "PySceneDetect transition, mean over transitions", ("flow", "siglip2")),
    _sub("human_action", "judge: occurrence share x smoothness share of the prompt's human actions", (), JUDGED),
    _sub("intra_event_subject_consistency", "mean cosine of consecutive grounded subject crops inside each event "
         "(event-length weights)", EVENT_SLOTS),
    _sub("intra_event_background_consistency", "mean cosine of consecutive backgrounds (frame minus the grounded "
         "subject) inside each event", EVENT_SLOTS),
    _sub("inter_event_subject_consistency", "mean pairwise similarity between events of a subject grounded in >= 2 "
         "events", EVENT_SLOTS, validity=("identity_swap", "shuffled_events")),
    _sub("inter_event_background_consistency", "mean pairwise similarity between the events' backgrounds",
         EVENT_SLOTS),
    # content clarity (judge, R rounds)
    *[_sub(m, f"judge: {m.replace('_', ' ')} 0-4, mean over rounds / 4", (), JUDGED) for m in constants.CLARITY_IDS],
    # HERD (judge yes / no / unclear with polarity)
    *[_sub(f"herd.{d}", f"judge: polarity-consistent answers / (yes + no) over the {d} questions", (), JUDGED)
      for d in constants.HERD_DIMENSIONS],
]
assert [s.id for s in SUB_DIMENSIONS] == list(constants.SUB_DIMENSIONS)

# issue 23 item 4: face identity beside the paper's crop embedding; an addition (paper_id None), in its own family
# so that no dimension aggregate, partial mean or overall ever reads it
ADDITION_FAMILY = "identity (additions)"
FACE_IDENTITY = MetricSpec(
    "inter_event_subject_face_identity", ADDITION_FAMILY, "higher",
    "an addition beside inter_event_subject_consistency: the same inter-event formula (B.7) over face-identity "
    "vectors (ArcFace; YuNet+SFace offline) of the faces inside each subject's grounded boxes; faces below the "
    "quality floors (size, blur, detector confidence) are counted apart (n_low_quality), not read as another person",
    paper_id=ADDITION, scale=(0.0, 100.0), unit="%", aggregation=SUB_AGGREGATION, slots=("face", *EVENT_SLOTS),
    inputs=VISUAL, validity=("shuffled_events",))
ADDITIONS = [FACE_IDENTITY]

_BY_ID = {s.id: s for s in SUB_DIMENSIONS}


def _slots(parts) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for p in parts for x in _BY_ID[p].slots))


def _inputs(parts) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for p in parts for x in _BY_ID[p].inputs))


AGGREGATES, PARTIALS = [], []
for _dim, _parts in constants.DIMENSIONS.items():
    AGGREGATES.append(MetricSpec(
        _dim, HEADLINE_FAMILY, "higher", f"unweighted mean of the {len(_parts)} {_dim} sub-dimensions; None unless "
        "every one has a value", scale=(0.0, 100.0), unit="%",
        aggregation="mean of its parts, all of them; coverage = mean of the parts' coverage",
        slots=_slots(_parts), inputs=_inputs(_parts), parts=_parts, kind="aggregate"))
    PARTIALS.append(MetricSpec(
        f"{_dim}_available", PARTIAL_FAMILY, "higher", f"mean of whichever {_dim} sub-dimensions have a value (not "
        "the paper's dimension when one lacks a value: see the coverage)", paper_id=ADDITION, scale=(0.0, 100.0),
        unit="%", aggregation="mean of the parts with a value; coverage = mean of the parts' coverage (a part "
        "without a value counts 0)", slots=_slots(_parts), inputs=_inputs(_parts)))
ALL_SUBS = constants.SUB_DIMENSIONS
AGGREGATES.append(MetricSpec(
    "overall", HEADLINE_FAMILY, "higher", "unweighted mean of the five dimensions; None unless all five have a value",
    scale=(0.0, 100.0), unit="%", aggregation="mean of the five dimensions, all of them; coverage = mean of the "
    "dimensions' coverage", slots=_slots(ALL_SUBS), inputs=_inputs(ALL_SUBS),
    parts=tuple(constants.DIMENSIONS), kind="aggregate"))
PARTIALS.append(MetricSpec(
    "overall_available", PARTIAL_FAMILY, "higher", "mean of the dimensions' partial means (<dimension>_available) "
    "that have a value: what `overall` was before it needed all five", paper_id=ADDITION, scale=(0.0, 100.0),
    unit="%", aggregation="mean of the partial dimension means with a value; coverage = mean of the five dimensions' "
    "coverage", slots=_slots(ALL_SUBS), inputs=_inputs(ALL_SUBS)))

METRICS = MetricSpecs("locot2v", [*SUB_DIMENSIONS, *AGGREGATES, *PARTIALS, *ADDITIONS])
