"""QA generation over entity records (the Compositional Reasoning Progression): deterministic for a seed.

Entity record (from the pipeline's registry, or from an EntityBench script):
  {"entity_id", "track_type", "segments": [{"start", "end", "action", "outfit", "scene"}], "flags": {...}}
Questions are generated with the ground truth as option (a) (ordering: a, b, c in time order), filtered (lexical
near-duplicates always; the LLM's grammar and option-similarity checks when the judge is available), then options
are permuted with the seed so that the answer positions are balanced (every MC letter and every ordering
permutation as often as the count allows)."""
from __future__ import annotations

import hashlib
import itertools
import json
from typing import Callable, Optional, Sequence

import numpy as np

from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import states
from bench_assets.narrativetrack import templates
from bench_assets.narrativetrack.pipeline import norm_text

ATTR = {"AC": "action", "OC": "outfit", "SC": "scene"}
LETTERS = ("a", "b", "c")
PERMS = list(itertools.permutations(range(3)))


def _rng(seed: int, *keys: str) -> np.random.Generator:
    h = hashlib.sha256("|".join(keys).encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(h[:8], "little")])


def describe(state: dict) -> str:
    return f"{state['action']}, wearing {state['outfit']}, in {state['scene']}"


def _pick(rng, values: Sequence, k: int) -> list:
    values = list(values)
    if len(values) < k:
        return []
    idx = rng.choice(len(values), size=k, replace=False)
    return [values[i] for i in sorted(idx)]


def _variant(rng) -> int:
    return int(rng.integers(constants.N_VARIANTS))


class Generator:
    """Questions whose gold answers rest only on clean states (states.py): segments from the video's main attribute
    source, attributes without an unsure step, anchors that single the person out, distractors that clearly differ
    from every state of the person, orderings over states that occur in one block each, and the flags honoured."""

    def __init__(self, video_id: str, entities: Sequence[dict], pool: Sequence[dict], seed: int = constants.QA_SEED,
                 style: str = "heuristic") -> None:
        self.video_id, self.seed, self.style = video_id, seed, style
        self.entities = [dict(e) for e in entities if e.get("segments")]
        for e in self.entities:
            # usable segments keep their index in the entity's full segment list (the anchor column)
            e["usable"] = [dict(s, _i=i) for i, s in enumerate(e["segments"]) if states.usable(s, style)]
        self.pool = [p for p in pool if p.get("clip") != video_id and p.get("style", "heuristic") == style]
        self.out: list[dict] = []
        self.present = {attr: {norm_text(s[attr]) for e in self.entities for s in e["usable"]}
                        for attr in ("action", "outfit", "scene")}

    def others(self, ent: dict) -> list[dict]:
        return [s for e in self.entities if e["entity_id"] != ent["entity_id"] for s in e["usable"]]

    # ----------------------------------------------------------------------------------- distractor pools
    def _dedupe(self, values: list[str]) -> list[str]:
        seen, out = set(), []
        for v in values:
            if states.words(v) not in seen:
                seen.add(states.words(v))
                out.append(v)
        return out

    def real_values(self, ent: dict, attr: str) -> list[str]:
        own = ent["usable"]
        return self._dedupe([o[attr] for o in self.others(ent) if states.distinct_from(o, own, attr, self.style)])

    def synthetic_values(self, ent: dict, attr: str) -> list[str]:
        own = ent["usable"]
        return self._dedupe([p[attr] for p in self.pool if norm_text(p[attr]) not in self.present[attr]
                             and states.distinct_from(p, own, attr, self.style)])

    def _not_own_state(self, cand: dict, own: Sequence[dict]) -> bool:
        return all(any(states.relation(cand, s, a, self.style) == "change" for a in states.ATTRS) for s in own)

    def real_states(self, ent: dict) -> list[str]:
        return self._dedupe([describe(o) for o in self.others(ent) if self._not_own_state(o, ent["usable"])])

    def synthetic_states(self, ent: dict) -> list[str]:
        here = {norm_text(describe(s)) for e in self.entities for s in e["usable"]}
        return self._dedupe([describe(p) for p in self.pool if norm_text(describe(p)) not in here
                             and self._not_own_state(p, ent["usable"])])

    # ----------------------------------------------------------------------------------- records
    def add(self, ent, dim, fmt, direction, distractor, question, options, answer, template, anchor, kind=None,
            sources=None):
        k = len(self.out)
        self.out.append({
            "qa_id": f"{self.video_id}.{ent['entity_id']}.{dim}.{fmt}.{direction}.{k:03d}",
            "video_id": self.video_id, "entity_id": str(ent["entity_id"]), "dimension": dim, "format": fmt,
            "direction": direction, "track_type": ent["track_type"], "distractor": distractor,
            "question": question, "options": options, "answer": answer, "template": template,
            "anchor_segment": anchor, "group": kind, "attribute_sources": json.dumps(sources or {}, sort_keys=True)})

    @staticmethod
    def _src(seg: dict) -> dict:
        """The source of each attribute of a segment (one source per segment: judge, heuristic or script)."""
        return {a: seg.get("source", "script") for a in states.ATTRS}

    @staticmethod
    def _spans_video(ent: dict) -> bool:
        """A reappearing person seen at the very beginning and again at the very end (runs within the edge
        tolerance of both ends); without runs and duration the templates' "at the end" cannot be checked."""
        runs, dur = ent.get("runs"), ent.get("duration")
        if not runs or dur is None:
            return False
        edge = ent.get("edge", constants.EDGE_TOLERANCE_S)
        return runs[0][0] <= edge and runs[-1][1] >= dur - edge

    @staticmethod
    def _at_edge(ent: dict, seg: dict, direction: str) -> bool:
        """"At the beginning" / "at the end" must be the person's first / last segment, usable or not."""
        if direction == "start_to_later":
            return seg["_i"] == 0
        if direction == "later_to_start":
            return seg["_i"] == len(ent["segments"]) - 1
        return True

    def _anchor_ok(self, ent: dict, seg: dict) -> bool:
        return states.identifies(seg, self.others(ent), self.style)

    # ----------------------------------------------------------------------------------- dimensions
    def existence(self, ent: dict) -> None:
        tt = ent["track_type"]
        segs = ent["segments"]
        for direction in ("start_to_later", "later_to_start"):
            group = templates.EE_GROUP.get((tt, direction))
            if group is None:
                continue
            anchor = 0 if direction == "start_to_later" else len(segs) - 1
            st = segs[anchor]
            if not states.usable(st, self.style) or not self._anchor_ok(ent, st):
                continue  # the description would rest on another source, or fit someone else too
            if tt == "reappear" and not self._spans_video(ent):
                continue  # every reappear template says "at the beginning" ... "at the end"
            src = {"anchor": self._src(st)}
            rng = _rng(self.seed, self.video_id, ent["entity_id"], "EE", direction)
            for g, ans in ((group, "yes"), (templates.EE_NEGATIVE[group], "no")):
                v = _variant(rng)
                q = templates.fill(templates.EE_BINARY[g][v], direction, st["action"], st["outfit"], st["scene"])
                self.add(ent, "EE", "binary", direction, "none", q, None, ans, f"EE.binary.{g}.{v}", anchor, g, src)
            v = _variant(rng)
            q = templates.fill(templates.EE_MC[v], direction, st["action"], st["outfit"], st["scene"])
            opts = [templates.EE_OPTIONS[tt]] + [templates.EE_OPTIONS[o] for o in ("appear", "reappear", "disappear")
                                                 if o != tt]
            self.add(ent, "EE", "mc", direction, "none", q, opts, "a", f"EE.mc.{direction}.{v}", anchor, None, src)

    def change(self, ent: dict, dim: str) -> None:
        attr = ATTR[dim]
        segs = ent["usable"]
        att = states.attribute_states(segs, attr, self.style)
        if att is None or len(att["blocks"]) < 2:
            return  # no clean change: no question
        fl = ent.get("flags") or {}
        blocks = att["blocks"]
        if fl.get(f"significant_{attr}_transition", True):
            for direction in ("start_to_later", "later_to_start"):
                b = 0 if direction == "start_to_later" else len(blocks) - 1
                nb = b + 1 if direction == "start_to_later" else b - 1
                st = segs[blocks[b][0] if b == 0 else blocks[b][-1]]
                if not self._at_edge(ent, st, direction) or not self._anchor_ok(ent, st):
                    continue
                truth_seg = segs[blocks[nb][0]]
                truth = att["text"][att["state"][nb]]
                rng = _rng(self.seed, self.video_id, ent["entity_id"], dim, direction)
                self._binary_mc(ent, dim, direction, st, truth, {"real": self.real_values(ent, attr),
                                                                 "synthetic": self.synthetic_values(ent, attr)},
                                rng, {"anchor": self._src(st), "answer": self._src(truth_seg)[attr]})
        single = att["single_block"]
        if len(single) >= 3 and fl.get(f"over_three_{attr}_changes", True):
            # only states that occur in one block each: their chronological order is unambiguous
            order = [att["text"][k] for k in single[:3]]
            opt_src = [self._src(segs[blocks[att["state"].index(k)][0]])[attr] for k in single[:3]]
            for direction in constants.DIRECTIONS:
                anchor = {"start_to_later": 0, "later_to_start": len(segs) - 1, "agnostic": len(segs) // 2}[direction]
                st = segs[anchor]
                if not self._at_edge(ent, st, direction) or not self._anchor_ok(ent, st):
                    continue
                rng = _rng(self.seed, self.video_id, ent["entity_id"], dim, "ordering", direction)
                v = _variant(rng)
                q = templates.fill(templates.ORDERING[dim][v], direction, st["action"], st["outfit"], st["scene"])
                self.add(ent, dim, "ordering", direction, "none", q, list(order), "a, b, c",
                         f"{dim}.ordering.{direction}.{v}", st["_i"], None,
                         {"anchor": self._src(st), "options": opt_src})

    def ambiguity(self, ent: dict) -> None:
        segs = ent["usable"]
        if len(segs) < 2:
            return
        pools = {"real": self.real_states(ent), "synthetic": self.synthetic_states(ent)}
        similar = bool(ent.get("flags", {}).get("similar_looking_existence"))
        if not pools["real"] and not similar:
            return  # EA needs a similar-looking person or real distractors
        for direction in ("start_to_later", "later_to_start"):
            anchor = 0 if direction == "start_to_later" else len(segs) - 1
            other = len(segs) - 1 if direction == "start_to_later" else 0
            if not (self._at_edge(ent, segs[anchor], direction) and self._anchor_ok(ent, segs[anchor])
                    and self._anchor_ok(ent, segs[other])):
                continue
            rng = _rng(self.seed, self.video_id, ent["entity_id"], "EA", direction)
            self._binary_mc(ent, "EA", direction, segs[anchor], describe(segs[other]), pools, rng,
                            {"anchor": self._src(segs[anchor]), "answer": self._src(segs[other])})

    def _binary_mc(self, ent, dim, direction, st, truth, pools, rng, sources) -> None:
        """Per available distractor kind: one yes and one no binary question, and one MC question (2 distractors).
        The pools hold only values that clearly differ from every state of the person."""
        x_fmt = (lambda v: f"while {v}") if dim == "EA" else (lambda v: v)
        for kind in ("real", "synthetic"):
            pool = [v for v in pools[kind] if states.words(v) != states.words(truth)]
            if not pool:
                continue
            neg = pool[int(rng.integers(len(pool)))]
            for x, ans in ((truth, "yes"), (neg, "no")):
                v = _variant(rng)
                q = templates.fill(templates.BINARY[dim][v], direction, st["action"], st["outfit"], st["scene"],
                                   x_fmt(x))
                self.add(ent, dim, "binary", direction, kind if ans == "no" else "none", q, None, ans,
                         f"{dim}.binary.{direction}.{v}", st["_i"], kind, sources)
            two = _pick(rng, pool, 2)
            if two:
                v = _variant(rng)
                q = templates.fill(templates.MC[dim][v], direction, st["action"], st["outfit"], st["scene"])
                self.add(ent, dim, "mc", direction, kind, q, [truth, *two], "a", f"{dim}.mc.{direction}.{v}",
                         st["_i"], None, sources)

    def run(self) -> list[dict]:
        for ent in self.entities:
            self.existence(ent)
            for dim in ("AC", "OC", "SC"):
                self.change(ent, dim)
            self.ambiguity(ent)
        return self.out


def generate(video_id: str, entities: Sequence[dict], pool: Sequence[dict], seed: int = constants.QA_SEED,
             style: str = "heuristic") -> list[dict]:
    """Unfiltered, unpermuted QA (truth at (a), orderings in time order)."""
    return Generator(video_id, entities, pool, seed, style).run()


# ------------------------------------------------------------------------------------------- filters

def jaccard(a: str, b: str) -> float:
    x, y = set(norm_text(a).split()), set(norm_text(b).split())
    return len(x & y) / max(len(x | y), 1)


def lexical_duplicates(options: Optional[Sequence[str]], threshold: float = constants.NEAR_DUPLICATE_JACCARD) -> bool:
    if not options:
        return False
    return any(norm_text(a) == norm_text(b) or jaccard(a, b) >= threshold
               for a, b in itertools.combinations(options, 2))


def apply_filters(qas: list[dict], grammar: Optional[Callable[[dict], tuple[Optional[str], str]]] = None,
                  similar: Optional[Callable[[str, str], tuple[Optional[bool], str]]] = None) -> tuple[list[dict], list[dict]]:
    """(kept, dropped-with-reason). ``grammar(qa)`` -> (corrected question or None, status); ``similar(o1, o2)`` ->
    (True when near-duplicates, status). A filter that could not run leaves the QA unchanged and says so."""
    kept, dropped = [], []
    for qa in qas:
        qa = dict(qa)
        status = []
        if lexical_duplicates(qa["options"]):
            dropped.append({**qa, "drop_reason": "lexical near-duplicate options"})
            continue
        if similar is not None and qa["options"]:
            dup = None
            for o1, o2 in itertools.combinations(qa["options"], 2):
                verdict, st = similar(o1, o2)
                status.append(f"similarity:{st}")
                if verdict:
                    dup = (o1, o2)
                    break
            if dup:
                dropped.append({**qa, "drop_reason": f"LLM: options {dup[0]!r} and {dup[1]!r} are near-duplicates"})
                continue
        if grammar is not None:
            fixed, st = grammar(qa)
            status.append(f"grammar:{st}")
            if fixed:
                qa["question_original"] = qa["question"]
                qa["question"] = fixed
        qa["filters"] = ";".join(sorted(set(status))) or "lexical"
        kept.append(qa)
    return kept, dropped


# ------------------------------------------------------------------------------------------- permutation

def balance(qas: list[dict], seed: int = constants.QA_SEED, key: str = "") -> list[dict]:
    """Permute options so the answers are balanced: MC answer letters cycle a/b/c in a seeded order (each as often as
    the count allows), ordering answers cycle through the 6 permutations; "(d) None of the above" is appended."""
    rng = _rng(seed, "balance", key)
    mc = [i for i, q in enumerate(qas) if q["format"] == "mc"]
    order = [i for i, q in enumerate(qas) if q["format"] == "ordering"]
    pos = (list(range(3)) * (len(mc) // 3 + 1))[:len(mc)]
    rng.shuffle(pos)
    perms = (list(range(6)) * (len(order) // 6 + 1))[:len(order)]
    rng.shuffle(perms)
    out = [dict(q) for q in qas]
    for i, p in zip(mc, pos):
        q = out[i]
        opts = list(q["options"])
        if q["answer"] == "d":  # "None of the above" is the answer: the three options only change places
            opts = [opts[j] for j in rng.permutation(len(opts))]
            q["options"] = {**dict(zip(LETTERS, opts)), "d": constants.NONE_OPTION}
            continue
        others = [o for o in opts[1:]]
        others = [others[j] for j in rng.permutation(len(others))]
        new = others[:p] + [opts[0]] + others[p:]
        q["options"] = {**dict(zip(LETTERS, new)), "d": constants.NONE_OPTION}
        q["answer"] = LETTERS[p]
    for i, p in zip(order, perms):
        q = out[i]
        chrono = list(q["options"])          # time order
        perm = PERMS[p]                       # option letter j shows chrono[perm[j]]
        shown = [chrono[perm[j]] for j in range(3)]
        q["options"] = {**dict(zip(LETTERS, shown)), "d": constants.NONE_OPTION}
        q["answer"] = ", ".join(LETTERS[perm.index(t)] for t in range(3))
    for q in out:
        if q["format"] == "binary":
            q["options"] = None
    return out


def prompt_text(qa: dict) -> str:
    """The question as the answerer sees it: options inline for MC and ordering."""
    how = {"binary": "Answer yes or no.", "mc": "Answer with one option letter.",
           "ordering": "Answer with the letters of the options in chronological order, e.g. \"b, a, c\"."}[qa["format"]]
    if not qa.get("options"):  # binary, or a released question with its options inline
        return f"{qa['question']} {how}"
    opts = " ".join(f"({k}) {v}" for k, v in qa["options"].items())
    return f"{qa['question']} {opts} {how}"


def coverage(qas: Sequence[dict]) -> set[tuple[str, str, str]]:
    return {(q["dimension"], q["format"], q["direction"]) for q in qas}


def all_cells() -> set[tuple[str, str, str]]:
    cells = set()
    for dim in constants.DIMENSIONS:
        for fmt in constants.FORMATS:
            if fmt == "ordering" and dim not in constants.ORDERING_DIMENSIONS:
                continue
            for d in constants.DIRECTIONS:
                if d == "agnostic" and fmt != "ordering":
                    continue
                cells.add((dim, fmt, d))
    return cells
