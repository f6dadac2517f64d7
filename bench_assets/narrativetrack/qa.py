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
from typing import Callable, Optional, Sequence

import numpy as np

from bench_assets.narrativetrack import constants as K
from bench_assets.narrativetrack import templates as T
from bench_assets.narrativetrack.pipeline import distinct_in_order, norm_text

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
    return int(rng.integers(K.N_VARIANTS))


class Generator:
    def __init__(self, video_id: str, entities: Sequence[dict], pool: Sequence[dict], seed: int = K.QA_SEED,
                 style: str = "heuristic") -> None:
        self.video_id, self.seed = video_id, seed
        self.entities = [e for e in entities if e.get("segments")]
        self.pool = [p for p in pool if p.get("clip") != video_id and p.get("style", "heuristic") == style]
        self.out: list[dict] = []
        present = {attr: {norm_text(s[attr]) for e in self.entities for s in e["segments"]}
                   for attr in ("action", "outfit", "scene")}
        self.present = present

    # ----------------------------------------------------------------------------------- distractor pools
    def real_values(self, ent: dict, attr: str) -> list[str]:
        own = {norm_text(s[attr]) for s in ent["segments"]}
        vals = [s[attr] for e in self.entities if e["entity_id"] != ent["entity_id"] for s in e["segments"]]
        return [v for v in distinct_in_order(vals) if norm_text(v) not in own]

    def synthetic_values(self, attr: str) -> list[str]:
        return [v for v in distinct_in_order([p[attr] for p in self.pool]) if norm_text(v) not in self.present[attr]]

    def real_states(self, ent: dict) -> list[str]:
        own = {norm_text(describe(s)) for s in ent["segments"]}
        vals = [describe(s) for e in self.entities if e["entity_id"] != ent["entity_id"] for s in e["segments"]]
        return [v for v in distinct_in_order(vals) if norm_text(v) not in own]

    def synthetic_states(self) -> list[str]:
        here = {norm_text(describe(s)) for e in self.entities for s in e["segments"]}
        return [v for v in distinct_in_order([describe(p) for p in self.pool]) if norm_text(v) not in here]

    # ----------------------------------------------------------------------------------- records
    def add(self, ent, dim, fmt, direction, distractor, question, options, answer, template, anchor, kind=None):
        k = len(self.out)
        self.out.append({
            "qa_id": f"{self.video_id}.{ent['entity_id']}.{dim}.{fmt}.{direction}.{k:03d}",
            "video_id": self.video_id, "entity_id": str(ent["entity_id"]), "dimension": dim, "format": fmt,
            "direction": direction, "track_type": ent["track_type"], "distractor": distractor,
            "question": question, "options": options, "answer": answer, "template": template,
            "anchor_segment": anchor, "group": kind})

    # ----------------------------------------------------------------------------------- dimensions
    def existence(self, ent: dict) -> None:
        tt = ent["track_type"]
        segs = ent["segments"]
        for direction in ("start_to_later", "later_to_start"):
            group = T.EE_GROUP.get((tt, direction))
            if group is None:
                continue
            anchor = 0 if direction == "start_to_later" else len(segs) - 1
            st = segs[anchor]
            rng = _rng(self.seed, self.video_id, ent["entity_id"], "EE", direction)
            for g, ans in ((group, "yes"), (T.EE_NEGATIVE[group], "no")):
                v = _variant(rng)
                q = T.fill(T.EE_BINARY[g][v], direction, st["action"], st["outfit"], st["scene"])
                self.add(ent, "EE", "binary", direction, "none", q, None, ans, f"EE.binary.{g}.{v}", anchor, g)
            v = _variant(rng)
            q = T.fill(T.EE_MC[v], direction, st["action"], st["outfit"], st["scene"])
            opts = [T.EE_OPTIONS[tt]] + [T.EE_OPTIONS[o] for o in ("appear", "reappear", "disappear") if o != tt]
            self.add(ent, "EE", "mc", direction, "none", q, opts, "a", f"EE.mc.{direction}.{v}", anchor)

    def change(self, ent: dict, dim: str) -> None:
        attr = ATTR[dim]
        segs = ent["segments"]
        values = distinct_in_order([s[attr] for s in segs])
        if len(values) < 2:
            return  # no valid change: no question
        own = {norm_text(v) for v in values}
        for direction in ("start_to_later", "later_to_start"):
            anchor = 0 if direction == "start_to_later" else len(segs) - 1
            st = segs[anchor]
            rest = segs[anchor + 1:] if direction == "start_to_later" else segs[:anchor]
            cands = [v for v in distinct_in_order([s[attr] for s in rest]) if norm_text(v) != norm_text(st[attr])]
            if not cands:
                continue
            rng = _rng(self.seed, self.video_id, ent["entity_id"], dim, direction)
            truth = cands[0]
            self._binary_mc(ent, dim, direction, anchor, st, truth, {"real": self.real_values(ent, attr),
                                                                      "synthetic": self.synthetic_values(attr)},
                            own, rng)
        if len(values) >= 3:
            order = values[:3]
            for direction in K.DIRECTIONS:
                anchor = {"start_to_later": 0, "later_to_start": len(segs) - 1, "agnostic": len(segs) // 2}[direction]
                st = segs[anchor]
                rng = _rng(self.seed, self.video_id, ent["entity_id"], dim, "ordering", direction)
                v = _variant(rng)
                q = T.fill(T.ORDERING[dim][v], direction, st["action"], st["outfit"], st["scene"])
                self.add(ent, dim, "ordering", direction, "none", q, list(order), "a, b, c",
                         f"{dim}.ordering.{direction}.{v}", anchor)

    def ambiguity(self, ent: dict) -> None:
        segs = ent["segments"]
        if len(segs) < 2:
            return
        pools = {"real": self.real_states(ent), "synthetic": self.synthetic_states()}
        similar = bool(ent.get("flags", {}).get("similar_looking_existence"))
        if not pools["real"] and not similar:
            return  # EA needs a similar-looking person or real distractors
        own = {norm_text(describe(s)) for s in segs}
        for direction in ("start_to_later", "later_to_start"):
            anchor = 0 if direction == "start_to_later" else len(segs) - 1
            other = len(segs) - 1 if direction == "start_to_later" else 0
            rng = _rng(self.seed, self.video_id, ent["entity_id"], "EA", direction)
            self._binary_mc(ent, "EA", direction, anchor, segs[anchor], describe(segs[other]), pools, own, rng)

    def _binary_mc(self, ent, dim, direction, anchor, st, truth, pools, own, rng) -> None:
        """Per available distractor kind: one yes and one no binary question, and one MC question (2 distractors)."""
        x_fmt = (lambda v: f"while {v}") if dim == "EA" else (lambda v: v)
        for kind in ("real", "synthetic"):
            pool = [v for v in pools[kind] if norm_text(v) not in own]
            if not pool:
                continue
            neg = pool[int(rng.integers(len(pool)))]
            for x, ans in ((truth, "yes"), (neg, "no")):
                v = _variant(rng)
                q = T.fill(T.BINARY[dim][v], direction, st["action"], st["outfit"], st["scene"], x_fmt(x))
                self.add(ent, dim, "binary", direction, kind if ans == "no" else "none", q, None, ans,
                         f"{dim}.binary.{direction}.{v}", anchor, kind)
            two = _pick(rng, pool, 2)
            if two:
                v = _variant(rng)
                q = T.fill(T.MC[dim][v], direction, st["action"], st["outfit"], st["scene"])
                self.add(ent, dim, "mc", direction, kind, q, [truth, *two], "a", f"{dim}.mc.{direction}.{v}", anchor)

    def run(self) -> list[dict]:
        for ent in self.entities:
            self.existence(ent)
            for dim in ("AC", "OC", "SC"):
                self.change(ent, dim)
            self.ambiguity(ent)
        return self.out


def generate(video_id: str, entities: Sequence[dict], pool: Sequence[dict], seed: int = K.QA_SEED,
             style: str = "heuristic") -> list[dict]:
    """Unfiltered, unpermuted QA (truth at (a), orderings in time order)."""
    return Generator(video_id, entities, pool, seed, style).run()


# ------------------------------------------------------------------------------------------- filters

def jaccard(a: str, b: str) -> float:
    x, y = set(norm_text(a).split()), set(norm_text(b).split())
    return len(x & y) / max(len(x | y), 1)


def lexical_duplicates(options: Optional[Sequence[str]], threshold: float = K.NEAR_DUPLICATE_JACCARD) -> bool:
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

def balance(qas: list[dict], seed: int = K.QA_SEED, key: str = "") -> list[dict]:
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
        others = [o for o in opts[1:]]
        others = [others[j] for j in rng.permutation(len(others))]
        new = others[:p] + [opts[0]] + others[p:]
        q["options"] = {**dict(zip(LETTERS, new)), "d": K.NONE_OPTION}
        q["answer"] = LETTERS[p]
    for i, p in zip(order, perms):
        q = out[i]
        chrono = list(q["options"])          # time order
        perm = PERMS[p]                       # option letter j shows chrono[perm[j]]
        shown = [chrono[perm[j]] for j in range(3)]
        q["options"] = {**dict(zip(LETTERS, shown)), "d": K.NONE_OPTION}
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
    for dim in K.DIMENSIONS:
        for fmt in K.FORMATS:
            if fmt == "ordering" and dim not in K.ORDERING_DIMENSIONS:
                continue
            for d in K.DIRECTIONS:
                if d == "agnostic" and fmt != "ordering":
                    continue
                cells.add((dim, fmt, d))
    return cells
