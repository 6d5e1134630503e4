"""Judging plans: which pairs to judge next, and the design they were drawn under.

A plan has one *part* per (run, direction, measure) (``exact``: per (run, direction)). Modes:

* ``budget`` (by default the walk of :mod:`fireval.estimation.walk`; this module's design with
  ``--one-shot``) / ``target`` (a sample): the queries that a part's measure leaves undecided and that
  have candidate pairs for it (:mod:`fireval.estimation.status`: for C@1 the top doc, for C@10
  the unjudged docs above the first known positive inside the top 10, ...) are stratified by the rank of their first candidate
  (``g`` = 0, 1-4, 5+) and by their number of candidate pairs (1, 2, 3-4, 5-7, 8-10, 11-16, 17+);
  strata with fewer than :data:`MIN_STRATUM` queries merge into the next one of the same rank
  band (the last into the previous). Sample sizes come from one joint allocation over every
  part's strata (:func:`fireval.estimation.stratified.allocate`), with per stratum
  ``S_h^2 = mean ((upper - lower) / 2)^2`` summed over the measures (the largest variance a
  query's value can have: a conservative stand-in before any label is seen; MnR scaled by the
  number of docs) and the cost of a query = the largest number of candidate pairs in its stratum,
  so the plan never exceeds the budget. ``budget N``: at most N pairs; ``target H``: the largest
  allocation threshold whose predicted 95% half-width is at most H points for every part and
  measure. In each stratum a simple random sample without replacement is drawn with a generator
  seeded by (seed, run, direction, measure), independently per part, and every candidate pair
  (for that measure) of a sampled query goes into the plan. Separate parts per measure let C@1
  buy one pair per query while C@10 needs several.
* ``exact``: one round of the sequential walk: for every undecided query, its first unjudged
  candidate in rank order. Rounds repeat (each planned from every label known so far) until the
  labels decide every query.

Shared pairs: a (caption text, video) pair proposed by several parts is one item (judged once).
Its ``inclusion`` is ``1 - prod (1 - pi)`` over the samples that could draw it (independent
samples; the walk's parts of one direction share one sample by default, ``sample_group``, and count
once); each part's estimator uses only its own sample and its own ``pi`` (``pi_h = n_h / N_h``), so
a label that another sample brings in never changes which queries a part's estimator uses: the
estimators stay unbiased. Independent samples give independent estimates (a difference's variance
is the sum); a shared sample gives a paired difference (:mod:`fireval.estimation.estimate`).

The plan file is a pool file (:mod:`fireval.judging.pool`): the header line carries
``format="fireval-pool"`` and the design under ``"design"``; each item has ``caption``,
``caption_ids``, ``video_id``, ``runs`` (run -> best 1-based rank), ``stratum`` and
``inclusion``. When nothing is left to judge the file is empty (0 bytes).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError, InputError
from fireval.core.run import Run
from fireval.estimation.status import Candidates, QueryStatus
from fireval.estimation.stratified import Z95, allocate, allocation_at, predicted_variance, srswor

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

DESIGN_FORMAT = "fireval-plan"
DESIGN_VERSION = 1
MIN_STRATUM = 16
RANK_BANDS = np.array([0, 1, 5], np.int64)
COST_BANDS = np.array([1, 2, 3, 5, 8, 11, 17], np.int64)


def collection_digest(coll: Collection) -> str:
    h = hashlib.sha1()
    for ids in (coll.caption_ids, coll.video_ids):
        h.update("\x1f".join(ids).encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()


def run_digest(run: Run, direction: Direction) -> str:
    """SHA-1 of the run's scores in ``direction`` (float64, in blocks)."""
    h = hashlib.sha1()
    n = run.n_queries(direction)
    step = max(1, (1 << 20) // max(1, run.shape[1] if direction is Direction.T2V else run.shape[0]))
    for a in range(0, n, step):
        h.update(np.ascontiguousarray(run.block(direction, a, min(n, a + step)), np.float64).tobytes())
    return h.hexdigest()


def part_seed(seed: int, run: str, direction: Direction, measure: str | None = None) -> list[int]:
    text = f"{run}\x1f{direction.value}\x1f{measure or ''}"
    key = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return [int(seed), int.from_bytes(key, "little")]


@dataclass
class Part:
    """The design of one (run, direction)."""

    run: str
    direction: Direction
    measure: str | None  # None: every measure of the plan (exact mode)
    mode: str
    run_digest: str
    n_queries: int
    excluded: list[int]  # queries without a known relevant doc at plan time (not in the mean)
    strata_queries: list[list[int]] = field(default_factory=list)
    strata_labels: list[str] = field(default_factory=list)
    strata_cost: list[int] = field(default_factory=list)
    sampled: list[list[int]] = field(default_factory=list)
    pairs: list[tuple[int, int, int]] = field(default_factory=list)  # (query, doc, g) planned
    walk_round: int = 0  # walk mode: the round these pairs belong to (1, 2, ...)
    walked: list[tuple[int, int, int]] = field(default_factory=list)  # walk: earlier rounds' pairs
    # walk, second phase (Hansen & Hurwitz 1946; :mod:`fireval.estimation.walk`): the round it was
    # drawn in (0: none), per stratum the sampled queries still undecided then, and the subsample
    second_round: int = 0
    second_undecided: list[list[int]] = field(default_factory=list)
    second_sampled: list[list[int]] = field(default_factory=list)
    # walk: the parts of one direction that share this sample (a joint sample of several runs, so
    # that a difference between them is paired); "" = this part's own sample
    group: str = ""

    def strata_arrays(self, n_queries: int) -> tuple[I64, npt.NDArray[np.bool_]]:
        """Per query: its stratum (-1: in none) and whether it is sampled."""
        stratum = np.full(n_queries, -1, np.int64)
        sampled = np.zeros(n_queries, bool)
        for h, (qs, s) in enumerate(zip(self.strata_queries, self.sampled, strict=True)):
            stratum[np.asarray(qs, np.int64)] = h
            sampled[np.asarray(s, np.int64)] = True
        return stratum, sampled

    @property
    def second_dropped(self) -> list[int]:
        """Sampled queries the second phase left out (undecided then, not subsampled): never walked on."""
        out: list[int] = []
        for u, s in zip(self.second_undecided, self.second_sampled, strict=True):
            keep = set(s)
            out.extend(q for q in u if q not in keep)
        return out

    @property
    def all_pairs(self) -> list[tuple[int, int, int]]:
        """Every pair this part's sample drew: earlier walk rounds' and this round's."""
        return self.walked + self.pairs

    @property
    def key(self) -> str:
        tail = f"/{self.measure}" if self.measure is not None else ""
        return f"{self.run}/{self.direction.value}{tail}"

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "direction": self.direction.value,
            "measure": self.measure,
            "mode": self.mode,
            "run_digest": self.run_digest,
            "n_queries": self.n_queries,
            "excluded": self.excluded,
            "strata": [
                {
                    "label": lab,
                    "queries": qs,
                    "population": len(qs),
                    "sampled": s,
                    "n": len(s),
                    "inclusion": (len(s) / len(qs)) if qs else 0.0,
                    "cost": c,
                    **self._second_json(h),
                }
                for h, (lab, qs, s, c) in enumerate(
                    zip(self.strata_labels, self.strata_queries, self.sampled, self.strata_cost, strict=True)
                )
            ],
            "second_phase_round": self.second_round,
            "pairs": [list(p) for p in self.pairs],
            "walk_round": self.walk_round,
            "walked": [list(p) for p in self.walked],
            "sample_group": self.group,
        }

    def _second_json(self, h: int) -> dict[str, Any]:
        if not self.second_round:
            return {}
        u, s = self.second_undecided[h], self.second_sampled[h]
        return {
            "second_phase_undecided": u,
            "second_phase_sampled": s,
            "second_phase_rate": (len(s) / len(u)) if u else 1.0,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Part:
        strata = d.get("strata", [])
        second = int(d.get("second_phase_round", 0))
        return cls(
            run=str(d["run"]),
            direction=Direction.parse(d["direction"]),
            measure=None if d.get("measure") is None else str(d["measure"]),
            mode=str(d["mode"]),
            run_digest=str(d["run_digest"]),
            n_queries=int(d["n_queries"]),
            excluded=[int(x) for x in d.get("excluded", [])],
            strata_queries=[[int(q) for q in s["queries"]] for s in strata],
            strata_labels=[str(s["label"]) for s in strata],
            strata_cost=[int(s["cost"]) for s in strata],
            sampled=[[int(q) for q in s["sampled"]] for s in strata],
            pairs=[(int(a), int(b), int(g)) for a, b, g in d.get("pairs", [])],
            walk_round=int(d.get("walk_round", 0)),
            walked=[(int(a), int(b), int(g)) for a, b, g in d.get("walked", [])],
            second_round=second,
            second_undecided=[[int(q) for q in s["second_phase_undecided"]] for s in strata]
            if second
            else [],
            second_sampled=[[int(q) for q in s["second_phase_sampled"]] for s in strata] if second else [],
            group=str(d.get("sample_group", "")),
        )


@dataclass
class Design:
    """Everything an estimate needs to know about how a plan was drawn."""

    mode: str
    seed: int
    measures: list[str]
    collection: str
    collection_digest: str
    budget: int | None
    target: float | None
    parts: list[Part]
    predicted_half_width: dict[str, float] = field(default_factory=dict)
    spent: int = 0  # walk: pairs planned by the earlier rounds (the budget caps spent + this round)
    second_phase_rate: float | None = None  # walk: the rate f of the second phase, once drawn
    min_grade: float | None = None  # --min-grade the plan was made with (None: grade > 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": DESIGN_FORMAT,
            "version": DESIGN_VERSION,
            "mode": self.mode,
            "seed": self.seed,
            "measures": self.measures,
            "collection": self.collection,
            "collection_digest": self.collection_digest,
            "budget": self.budget,
            "target": self.target,
            "predicted_half_width": self.predicted_half_width,
            "spent": self.spent,
            "second_phase_rate": self.second_phase_rate,
            "min_grade": self.min_grade,
            "parts": [p.to_json() for p in self.parts],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], source: str) -> Design:
        if not isinstance(d, dict) or d.get("format") != DESIGN_FORMAT:
            raise InputError(
                "not a fireval plan (no design in its header; write one with `fireval plan`)", source=source
            )
        if d.get("version") != DESIGN_VERSION:
            raise InputError(f"plan design version {d.get('version')!r} is not supported", source=source)
        try:
            return cls(
                mode=str(d["mode"]),
                seed=int(d["seed"]),
                measures=[str(m) for m in d["measures"]],
                collection=str(d.get("collection", "")),
                collection_digest=str(d["collection_digest"]),
                budget=d.get("budget"),
                target=d.get("target"),
                parts=[Part.from_json(p) for p in d["parts"]],
                predicted_half_width=dict(d.get("predicted_half_width", {})),
                spent=int(d.get("spent", 0)),
                second_phase_rate=None
                if d.get("second_phase_rate") is None
                else float(d["second_phase_rate"]),
                min_grade=None if d.get("min_grade") is None else float(d["min_grade"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed plan design: {exc}", source=source, line=1) from None


def _strata(st: QueryStatus, measure: str) -> tuple[I64, I64, list[str]]:
    """Stratum of each sampleable query (-1: none), the stratum costs and labels."""
    return stratify(st.candidates[measure], st.undecided[measure], st.n_queries)


def stratify(
    cand: Candidates,
    undecided: npt.NDArray[np.bool_],
    n_queries: int,
    *,
    pattern: I64 | None = None,
    pattern_names: list[str] | None = None,
) -> tuple[I64, I64, list[str]]:
    """Strata of the undecided queries with candidates ``cand`` (-1: in none), by the rank of the
    first candidate and the number of candidates; the strata's largest costs and their labels.
    ``pattern`` (a joint sample of several runs, :mod:`fireval.estimation.walk`): a key per query
    that goes first (which runs leave it undecided); small strata merge only within a pattern and
    rank band, and ``pattern_names[key]`` starts the label."""
    cost = cand.cost(n_queries)
    first = cand.first_rank(n_queries)
    ok = undecided & (cost > 0)
    band_r = np.searchsorted(RANK_BANDS, np.maximum(first, 0), side="right") - 1
    band_c = np.searchsorted(COST_BANDS, np.maximum(cost, 1), side="right") - 1
    pat = np.zeros(n_queries, np.int64) if pattern is None else np.asarray(pattern, np.int64)
    outer_of = (pat * RANK_BANDS.size + band_r).astype(np.int64)
    raw = np.where(ok, outer_of * COST_BANDS.size + band_c, -1)
    keys, counts = np.unique(raw[ok], return_counts=True)
    # merge small strata into the next of the same (pattern and) rank band (the last into the previous)
    groups: list[list[int]] = []
    for outer in np.unique(keys // COST_BANDS.size).tolist():
        ks = [(int(k), int(c)) for k, c in zip(keys, counts, strict=True) if k // COST_BANDS.size == outer]
        cur: list[int] = []
        size = 0
        out: list[list[int]] = []
        for k, c in ks:
            cur.append(k)
            size += c
            if size >= MIN_STRATUM:
                out.append(cur)
                cur, size = [], 0
        if cur:
            if out:
                out[-1].extend(cur)
            else:
                out.append(cur)
        groups.extend(out)
    stratum = np.full(n_queries, -1, np.int64)
    labels: list[str] = []
    costs: list[int] = []
    for h, ks_ in enumerate(groups):
        member = np.isin(raw, ks_) & ok
        stratum[member] = h
        costs.append(int(cost[member].max()))
        outer = ks_[0] // COST_BANDS.size
        band = outer % RANK_BANDS.size
        lo_r = int(RANK_BANDS[band]) + 1
        hi_r = f"{int(RANK_BANDS[band + 1])}" if band + 1 < RANK_BANDS.size else "+"
        c_lo, c_hi = int(cost[member].min()), int(cost[member].max())
        ranks = f"{lo_r}+" if hi_r == "+" else (f"{lo_r}" if hi_r == str(lo_r) else f"{lo_r}-{hi_r}")
        pairs = f"{c_lo}" if c_lo == c_hi else f"{c_lo}-{c_hi}"
        head = f"{pattern_names[outer // RANK_BANDS.size]}: " if pattern_names else ""
        labels.append(f"{head}first candidate at rank {ranks}, {pairs} pair{'' if pairs == '1' else 's'}")
    return stratum, np.asarray(costs, np.int64), labels


def _scale(measure: str, n_docs: int) -> float:
    return 1.0 / float(n_docs) ** 2 if measure.startswith("MnR") else 1.0


def build_design(
    statuses: list[QueryStatus],
    digests: list[str],
    coll: Collection,
    *,
    mode: str,
    seed: int,
    budget: int | None = None,
    target: float | None = None,
) -> Design:
    """Stratify, allocate and draw the sample of every part (see the module docstring)."""
    measures = [str(m) for m in statuses[0].measures] if statuses else []
    design = Design(mode, seed, measures, coll.name, collection_digest(coll), budget, target, [])
    if mode == "exact":
        for st, dg in zip(statuses, digests, strict=True):
            part = Part(
                st.run, st.direction, None, mode, dg, st.n_queries, np.flatnonzero(~st.population).tolist()
            )
            u = st.union()
            first = np.ones(u.q.size, bool)
            first[1:] = u.q[1:] != u.q[:-1]
            part.pairs = list(
                zip(u.q[first].tolist(), u.doc[first].tolist(), u.g[first].tolist(), strict=True)
            )
            design.parts.append(part)
        return design
    per_part: list[tuple[QueryStatus, str, I64, I64]] = []
    sizes, s2s, costs_all = [], [], []
    for st, dg in zip(statuses, digests, strict=True):
        n_docs = coll.n_videos if st.direction is Direction.T2V else coll.n_captions
        for m in measures:
            excluded = np.flatnonzero(~st.population).tolist()
            part = Part(st.run, st.direction, m, mode, dg, st.n_queries, excluded)
            stratum, costs, labels = _strata(st, m)
            part.strata_labels, part.strata_cost = labels, costs.tolist()
            design.parts.append(part)
            per_part.append((st, m, stratum, costs))
            k = costs.size
            inside = stratum >= 0
            big_n = np.bincount(stratum[inside], minlength=k).astype(np.int64)
            half2 = (np.nan_to_num(st.upper[m] - st.lower[m]) / 2.0) ** 2 * _scale(m, n_docs)
            s2 = np.bincount(stratum[inside], weights=half2[inside], minlength=k) / np.maximum(big_n, 1)
            sizes.append(big_n)
            s2s.append(s2)
            costs_all.append(costs)
    k_all = [c.size for c in costs_all]
    own = np.repeat(np.arange(len(per_part)), k_all).astype(np.int64)
    big_n = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    s2 = np.concatenate(s2s)[:, None] if s2s else np.zeros((0, 1))
    cost = np.concatenate(costs_all) if costs_all else np.zeros(0, np.int64)
    n_tot = np.asarray([max(int(per_part[o][0].population.sum()), 1) for o in own], np.float64)
    weight = big_n.astype(np.float64) ** 2 * s2[:, 0] / np.maximum(n_tot, 1.0) ** 2
    if mode == "budget":
        assert budget is not None
        n_h = allocate(big_n, weight, cost, float(budget))
    else:
        assert target is not None
        n_h = _target_allocation(big_n, s2, weight, cost, own, n_tot, target / 100.0, len(per_part))
    pv = predicted_variance(big_n, s2, n_h, n_tot)[:, 0]
    for pi, (part, (st, m, stratum, _costs)) in enumerate(zip(design.parts, per_part, strict=True)):
        sel = own == pi
        nh = n_h[sel]
        rng = np.random.default_rng(part_seed(seed, st.run, st.direction, m))
        members = np.flatnonzero(stratum >= 0)
        chosen = srswor(rng, stratum[members], nh)
        part.strata_queries = [members[stratum[members] == h].tolist() for h in range(nh.size)]
        part.sampled = [sorted(members[chosen & (stratum[members] == h)].tolist()) for h in range(nh.size)]
        cand = st.candidates[m]
        take = np.isin(cand.q, members[chosen])
        part.pairs = list(
            zip(cand.q[take].tolist(), cand.doc[take].tolist(), cand.g[take].tolist(), strict=True)
        )
        n_docs = coll.n_videos if st.direction is Direction.T2V else coll.n_captions
        v = float(pv[sel].sum()) / _scale(m, n_docs)
        # predicted 95% half-width in points (MnR: ranks), with the conservative S_h
        design.predicted_half_width[part.key] = float(
            Z95 * np.sqrt(v) * (1.0 if m.startswith("MnR") else 100.0)
        )
    return design


def _target_allocation(
    big_n: I64, s2: F64, weight: F64, cost: I64, own: I64, n_tot: F64, half: float, n_parts: int
) -> I64:
    """Per part, the cheapest threshold allocation whose predicted 95% half-width is ``<= half``
    (a bisection on the part's threshold; parts are independent under a target)."""
    c = np.maximum(cost.astype(np.float64), 1.0)
    a = weight / c
    out = np.zeros(a.size, np.int64)
    for p in range(n_parts):
        sel = own == p
        ap, np_, s2p, ntp = a[sel], big_n[sel], s2[sel], n_tot[sel]
        if not (ap > 0).any():
            continue

        def ok(n_h: I64, s2p: F64 = s2p, np_: I64 = np_, ntp: F64 = ntp) -> bool:
            v = predicted_variance(np_, s2p, n_h, ntp).sum(axis=0)
            return bool((Z95 * np.sqrt(v) <= half + 1e-12).all())

        top = float(np.log2(ap[ap > 0].max()))
        lo, hi = top - 80.0, top + 2.0  # at 2**lo every stratum is whole (zero variance)
        if not ok(allocation_at(2.0**lo, ap, np_)):
            out[sel] = np.where(ap > 0, np_, 0)
            continue
        for _ in range(80):
            m = (lo + hi) / 2.0
            if ok(allocation_at(2.0**m, ap, np_)):
                lo = m
            else:
                hi = m
        out[sel] = allocation_at(2.0**lo, ap, np_)
    return out


# ---------------------------------------------------------------------------------- plan file
def plan_items(design: Design, coll: Collection) -> list[dict[str, Any]]:
    """Pool items of a design: one per distinct (normalised caption text, video) pair."""
    from fireval.core import normalise

    pi_of: dict[tuple[str, int], list[float]] = {}
    items: dict[tuple[str, int], dict[str, Any]] = {}
    seen_in: dict[tuple[str, str], set[tuple[str, int]]] = {}  # per sample: the parts of a joint one share it
    for part in design.parts:
        q_pi: dict[int, float] = {}
        q_lab: dict[int, str] = {}
        for lab, qs, s in zip(part.strata_labels, part.strata_queries, part.sampled, strict=True):
            for q in qs:
                q_pi[q] = len(s) / len(qs)
                q_lab[q] = lab
        seen = seen_in.setdefault((part.group or part.key, part.direction.value), set())
        for q, doc, g in part.pairs:
            cap, vid = (q, doc) if part.direction is Direction.T2V else (doc, q)
            key = (normalise(coll.captions[cap]), vid)
            inc = 1.0 if part.mode == "exact" else q_pi.get(q, 1.0)
            it = items.get(key)
            if it is None:
                it = items[key] = {
                    "caption": coll.captions[cap],
                    "caption_ids": [],
                    "video_id": coll.video_ids[vid],
                    "runs": {},
                    "double": False,  # a plan asks one label per pair (agreement: `fireval pool`'s sample)
                    "stratum": f"{part.key}/{'exact' if part.mode == 'exact' else q_lab.get(q, '?')}",
                }
            if coll.caption_ids[cap] not in it["caption_ids"]:
                it["caption_ids"].append(coll.caption_ids[cap])
            if key not in seen:  # one probability per sample (captions sharing a text share the item)
                seen.add(key)
                pi_of.setdefault(key, []).append(inc)
            it["runs"][part.run] = min(it["runs"].get(part.run, 10**9), 1 + g)
    out = []
    for key, it in items.items():
        it["inclusion"] = float(1.0 - np.prod([1.0 - p for p in pi_of[key]]))
        out.append(it)
    return out


def write_plan(path: str | Path, design: Design, items: list[dict[str, Any]], coll: Collection) -> None:
    """The plan as a pool file (header with the design, then the items); 0 bytes when empty."""
    from fireval.atomic import atomic_write
    from fireval.judging.pool import POOL_FORMAT, POOL_VERSION

    with atomic_write(path, "w", encoding="utf-8") as fh:
        if not items:
            return
        header = {
            "format": POOL_FORMAT,
            "version": POOL_VERSION,
            "dataset": coll.name,
            "direction": "both"
            if len({p.direction for p in design.parts}) > 1
            else design.parts[0].direction.value,
            "depth": None,
            "runs": list(dict.fromkeys(p.run for p in design.parts)),
            "seed": design.seed,
            "double_fraction": 0.0,
            "summary": {"items": len(items), "mode": design.mode},
            "design": design.to_json(),
        }
        fh.write(json.dumps(header, ensure_ascii=False) + "\n")
        for it in items:
            fh.write(json.dumps(it, ensure_ascii=False) + "\n")


def read_design(path: str | Path) -> Design | None:
    """The design in a plan file's header; ``None`` for an empty plan (nothing was left to judge)."""
    src = str(path)
    p = Path(path)
    if not p.exists():
        raise InputError("plan file not found", source=src)
    if p.is_dir():
        raise InputError("is a directory; expected a plan file from `fireval plan`", source=src)
    if p.stat().st_size == 0:
        return None
    with open(p, "rb") as fh:
        first = fh.readline()
    try:
        header = json.loads(first.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InputError(
            "not a fireval plan (the first line is not a JSON header)", source=src, line=1
        ) from None
    if not isinstance(header, dict):
        raise InputError("not a fireval plan (the first line is not a JSON object)", source=src, line=1)
    return Design.from_json(header.get("design"), src)  # type: ignore[arg-type]


def check_design(
    design: Design, coll: Collection, digests: dict[tuple[str, Direction], str], source: str
) -> None:
    """Refuse a plan drawn for another collection or other runs."""
    if design.collection_digest != collection_digest(coll):
        raise FirevalError(f"{source}: plan was made for another collection ({design.collection!r})")
    for part in design.parts:
        key = (part.run, part.direction)
        if key in digests and digests[key] != part.run_digest:
            raise FirevalError(
                f"{source}: run {part.run!r} ({part.direction.value}) differs from the run the plan was made for"
            )
