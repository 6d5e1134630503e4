"""``run_checks``: every input check on a set of runs over one collection, as one typed result.

For each run and each direction it can rank (a score matrix serves both; ranked lists their
own), one :func:`fireval.checks.scan.scan` pass gives what the alignment, truncation and
agreement checks need. A check's status over directions is the worst one (``fail`` >
``warn`` > ``inconclusive`` > ``pass``), with each direction's figures kept under
``directions``. Pairs are checked in every direction both runs rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from fireval.checks.agreement import DEPTH as AGREEMENT_DEPTH
from fireval.checks.agreement import agreement
from fireval.checks.alignment import alignment, inverted
from fireval.checks.base import CheckResult, Status
from fireval.checks.orientation import orientation
from fireval.checks.scan import Scan, scan
from fireval.checks.text import text_model
from fireval.checks.truncation import constant_scores, truncated_measures, truncation
from fireval.core import Collection, Direction, Run

#: the name of the label set of instance positives only (:func:`fireval.api.label_sets`), the one
#: label set whose values do not depend on a run's alignment with the collection's text
INSTANCE_LABELS = "original"

_SEVERITY = {Status.PASS: 0, Status.INCONCLUSIVE: 1, Status.WARN: 2, Status.FAIL: 3}


@dataclass
class PairResult:
    """The agreement check of runs ``a`` and ``b``."""

    a: str
    b: str
    result: CheckResult

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, **self.result.to_dict()}


@dataclass
class ChecksReport:
    """Every check's result: ``runs[name][check]`` and the pairs."""

    runs: dict[str, dict[str, CheckResult]] = field(default_factory=dict)
    pairs: list[PairResult] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """True when any check failed (``fireval check`` exits 1)."""
        return any(r.failed for res in self.runs.values() for r in res.values()) or any(
            p.result.failed for p in self.pairs
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": {name: {c: r.to_dict() for c, r in res.items()} for name, res in self.runs.items()},
            "pairs": [p.to_dict() for p in self.pairs],
        }

    def warnings(self, *, include_warn: bool = True) -> list[str]:
        """One line per failed (and, with ``include_warn``, warned) check, for stderr."""
        keep = {Status.FAIL, Status.WARN} if include_warn else {Status.FAIL}
        out = [
            f"{name}: {r.check} check {r.status.value}: {r.message}"
            for name, res in self.runs.items()
            for r in res.values()
            if r.status in keep
        ]
        out += [
            f"{p.a} vs {p.b}: agreement check fail: {p.result.message}" for p in self.pairs if p.result.failed
        ]
        return out

    def misaligned_pairs(self) -> dict[tuple[str, str], str]:
        """``{(a, b): why}`` for every pair whose per-query comparison is meaningless.

        A pair is marked when the two runs agree only at chance beyond the instance positives, or
        when exactly one of them fails the alignment check. Two runs that both fail alignment but
        agree with each other (GRAM and VAST share one order) are not marked: comparing them with
        each other holds, though neither matches the collection's text (their own warnings say so).
        """
        out: dict[tuple[str, str], str] = {}
        bad = self.unaligned_runs()
        agree = {(p.a, p.b): p.result for p in self.pairs}
        for a, b in combinations(list(self.runs), 2):
            res = agree.get((a, b))
            if res is not None and res.failed:
                out[(a, b)] = res.message
            elif (a in bad) != (b in bad) and (res is None or res.status is not Status.PASS):
                out[(a, b)] = f"{a if a in bad else b} is not aligned with the collection"
        return out

    def unaligned_runs(self) -> frozenset[str]:
        """The runs that fail the alignment check: a run's query ``i`` is probably not the
        collection's caption ``i`` (or video ``i``), so anything read from the collection's text
        per query (breakdowns by caption length or train similarity, examples, pools) is
        meaningless for it, whatever other runs it agrees with."""
        return frozenset(n for n, res in self.runs.items() if "alignment" in res and res["alignment"].failed)

    def status(self, run: str) -> str | None:
        """The worst status of ``run``'s own checks (``pass``/``inconclusive``/``warn``/``fail``), None if unchecked."""
        res = self.runs.get(run)
        if not res:
            return None
        return max(res.values(), key=lambda r: _SEVERITY[r.status]).status.value

    def not_comparable(self, run: str, labels: str = "augmented") -> str | None:
        """Why ``run``'s values under label set ``labels`` are not comparable, or None when they are.

        The one place that says which values the input checks invalidate (every table, figure and
        JSON asks here): a run that fails the alignment check ranks its query ``i`` for another
        caption than the collection's ``i``, so every label beyond the instance positives lands on
        the wrong pairs. Its values under such labels are not comparable: ``labels`` is a label set
        name or ``"Δ"`` (their difference); only :data:`INSTANCE_LABELS` (the instance positives,
        which follow the run's own diagonal) stays comparable. Per-query pairings of two runs are
        :meth:`misaligned_pairs`.
        """
        if run not in self.unaligned_runs() or labels == INSTANCE_LABELS:
            return None
        return (
            f"{run} fails the alignment check: its labels beyond the instance positives land on the wrong "
            "caption-video pairs"
        )

    def truncated(self, run: str, direction: Direction | str | None = None) -> tuple[int, float] | None:
        """``(k, share of queries with their relevant doc in the cut)`` of a truncated run, else None.

        ``direction`` (``t2v``/``v2t``): that direction's own cut (a top-50-per-row matrix is cut
        differently along its columns), None when that direction is not truncated or was not
        scanned; ``None``: the first truncated direction.
        """
        r = self.runs.get(run, {}).get("truncation")
        if r is None or r.status is not Status.WARN:
            return None
        per_dir = r.figures["directions"]
        if direction is None:
            fig = next((d for d in per_dir.values() if d.get("truncated")), None)
            if fig is None:  # warned for another reason (queries that rank nothing, constant scores)
                return None
        else:
            fig = per_dir.get(Direction.parse(direction).value)
            if fig is None or not fig.get("truncated"):
                return None
        return int(fig["k"]), float(fig["share_relevant_in_cut"])

    def marked_measures(self, run: str, measures: Sequence[str], direction: str | None = None) -> list[str]:
        """Names among ``measures`` whose value for ``run`` depends on a truncated tail.

        ``direction``: ``t2v`` or ``v2t`` (each by its own cut), ``both`` (a measure over both
        directions, such as meanR: marked when either direction marks it), or ``None`` (the first
        truncated direction, for tables that do not split by direction).
        """
        if direction is not None and str(direction) == "both":
            hit = {m for d in (Direction.T2V, Direction.V2T) for m in self.marked_measures(run, measures, d)}
            return [m for m in measures if m in hit]
        t = self.truncated(run, direction)
        return [] if t is None else truncated_measures(measures, t[0], t[1])


def _combine(check: str, per_direction: dict[str, CheckResult]) -> CheckResult:
    worst = max(per_direction.values(), key=lambda r: _SEVERITY[r.status])
    figures = {"directions": {d: {"status": r.status.value, **r.figures} for d, r in per_direction.items()}}
    return CheckResult(check, worst.status, worst.message, figures)


def run_checks(
    collection: Collection,
    runs: Mapping[str, Run],
    *,
    k: int = 10,
    pairs: bool = True,
    directions: Sequence[Direction | str] = (Direction.T2V, Direction.V2T),
    seed: int = 0,
) -> ChecksReport:
    """Check every run against ``collection`` (and every pair of runs, with ``pairs``)."""
    model = text_model(collection)
    dirs = [Direction.parse(d) for d in directions]
    report = ChecksReport()
    scans: dict[str, dict[Direction, Scan]] = {}
    for name, run in runs.items():
        if run.shape != collection.shape:
            raise ValueError(f"run {name!r} has shape {run.shape}, collection {collection.shape}")
        depth = max(k, AGREEMENT_DEPTH) if pairs and len(runs) > 1 else k
        scans[name] = {d: scan(run, collection, d, k=depth, seed=seed) for d in dirs if run.supports(d)}
        align = {
            d.value: inverted(
                alignment(s, collection, model, k=k, seed=seed), run, collection, model, k=k, seed=seed
            )
            for d, s in scans[name].items()
        }
        trunc = {d.value: constant_scores(run, d, truncation(s)) for d, s in scans[name].items()}
        res: dict[str, CheckResult] = {}
        if align:
            res["alignment"] = _combine("alignment", align)
            res["truncation"] = _combine("truncation", trunc)
        res["orientation"] = orientation(run, collection, model, align.get("t2v"), k=k)
        report.runs[name] = res
    if pairs:
        for a, b in combinations(list(runs), 2):
            common = [d for d in dirs if d in scans[a] and d in scans[b]]
            if common:
                per = {d.value: agreement(scans[a][d], scans[b][d]) for d in common}
                report.pairs.append(PairResult(a, b, _combine("agreement", per)))
    return report
