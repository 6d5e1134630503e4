"""The two steps the verbs run: plan what to judge next, estimate from the labels and plans.

``make_plan`` and ``estimate`` take loaded runs, one merged :class:`Judgments` (every label
known so far) and the collection; the CLI verbs (``fireval plan``, ``fireval estimate``) only
parse options, load inputs as ``fireval evaluate`` does and print.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.core.judgments import Judgments
from fireval.core.run import Run
from fireval.metrics.measures import Measure


def merged_labels(
    coll: Collection,
    specs: Sequence[str],
    *,
    include_instance: bool = True,
    precedence: Sequence[str] | None = None,
    min_grade: float | None = None,
) -> Judgments:
    """Every label known: the instance labels merged with ``specs`` (as ``evaluate``'s augmented
    set), binarised at ``min_grade`` when given (grade >= G relevant)."""
    from fireval import api
    from fireval.metrics.threshold import check_min_grade

    # NAME=PATH (evaluate's label set of its own) merges too: a plan and an estimate use every label
    sets = api.label_sets(
        coll, list(specs), include_instance=include_instance, precedence=precedence, separate_named=False
    )
    judg = sets.get("augmented", sets.get("original"))
    if judg is None:  # only without instance labels and without specs (label_sets refuses that)
        raise FirevalError("no labels: give --labels or keep the instance labels")
    grade = check_min_grade(min_grade)
    if grade is not None:
        judg = judg.binarised(grade)
    return judg


def direction_notes(runs: Mapping[str, Run], directions: Sequence[Direction]) -> list[str]:
    """One note per (run, direction) left out because the run does not rank that direction (a
    TREC run holds one), worded as ``fireval evaluate``'s: ``-d both`` must not drop one silently."""
    return [
        f"{name}: no {d.value} results; {run.source or name} holds ranked lists for one direction only "
        "(TREC run: see --run-direction; a score matrix gives both)"
        for name, run in runs.items()
        for d in directions
        if not run.supports(d)
    ]


def make_plan(
    runs: Mapping[str, Run],
    judg: Judgments,
    coll: Collection,
    measures: tuple[Measure, ...],
    directions: Sequence[Direction],
    *,
    mode: str,
    seed: int,
    budget: int | None = None,
    target: float | None = None,
    one_shot: bool = False,
    paired: bool = False,
    previous: str | Path | None = None,
    stuck: list[str] | None = None,
    min_grade: float | None = None,
    pass_unjudged: bool = False,
) -> tuple[Any, list[dict[str, Any]]]:
    """``(design, items)``: the design (:class:`fireval.estimation.plan.Design`) and the pool items.

    ``budget`` plans round 1 of the walk (:mod:`fireval.estimation.walk`) unless ``one_shot``
    (every candidate of each sampled query, one sample per measure); ``previous`` (a walk plan
    file) plans its next round, with the plan's measures and directions. ``stuck`` (a list) gets
    one line per (run, direction) with undecided queries that have no candidate pair."""
    import numpy as np

    from fireval.estimation.plan import build_design, plan_items, read_design, run_digest
    from fireval.estimation.status import parse_estimable, query_status
    from fireval.estimation.walk import build_walk, continue_walk

    prev = None
    if previous is not None:
        prev = read_design(previous)
        if prev is None:
            raise FirevalError(
                f"{previous}: empty plan (its walk had nothing left to judge): nothing to continue"
            )
        measures = parse_estimable(prev.measures)
        extra = [name for name in runs if name not in {p.run for p in prev.parts}]
        if extra:  # the next round walks the plan's runs only: never drop a run silently
            made = ", ".join(dict.fromkeys(p.run for p in prev.parts))
            raise FirevalError(
                f"{previous}: the walk samples run(s) {made}, not {', '.join(extra)}; give its runs "
                "(plan another run with --budget)"
            )
        _check_min_grade(prev, min_grade, str(previous))
        directions = list(dict.fromkeys(p.direction for p in prev.parts))

    statuses, digests = [], []
    for run in runs.values():
        for d in directions:
            if not run.supports(d):
                continue
            st = query_status(run, judg, d, measures, collection=coll)
            statuses.append(st)
            if stuck is not None:  # undecided queries without a candidate (e.g. an unranked tail)
                und = np.zeros(st.n_queries, bool)
                for u in st.undecided.values():
                    und |= u
                und[st.union().q] = False
                if und.any():
                    stuck.append(
                        f"{st.run}/{d.value}: {int(und.sum())} undecided queries have no candidate pair: "
                        "their unjudged docs are not ranked by the run, and a plan never proposes those; "
                        "they enter estimates with their bounds"
                    )
            digests.append(run_digest(run, d))
    if not statuses:
        wanted = ", ".join(d.value for d in directions)
        raise FirevalError(
            f"no run ranks {wanted} queries (a TREC run holds one direction: see --run-direction, -d)"
        )
    if prev is not None:
        design = continue_walk(prev, statuses, digests, coll, str(previous), pass_unjudged=pass_unjudged)
    elif mode == "budget" and not one_shot:
        assert budget is not None
        design = build_walk(statuses, digests, coll, seed=seed, budget=budget, joint=paired)
    else:
        design = build_design(statuses, digests, coll, mode=mode, seed=seed, budget=budget, target=target)
    design.min_grade = min_grade
    return design, plan_items(design, coll)


def _check_min_grade(design: Any, min_grade: float | None, path: str) -> None:
    """A plan's strata, candidates and population depend on what is relevant: refuse another
    ``--min-grade`` than the plan's (one line, naming the file)."""
    if design.min_grade != min_grade:
        made = "no --min-grade" if design.min_grade is None else f"--min-grade {design.min_grade:g}"
        given = "none" if min_grade is None else f"{min_grade:g}"
        raise FirevalError(f"{path}: plan was made with {made}; give the same (got {given})")


def estimate(
    runs: Mapping[str, Run],
    judg: Judgments,
    coll: Collection,
    measures: tuple[Measure, ...],
    directions: Sequence[Direction],
    plans: Sequence[str | Path] = (),
    min_grade: float | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """``(records, differences, notes)``; every plan is checked against the runs and collection."""
    from fireval.estimation.estimate import estimate_runs
    from fireval.estimation.plan import check_design, read_design, run_digest

    designs: list[Any] = []
    notes: list[str] = direction_notes(runs, directions)
    digests: dict[tuple[str, Direction], str] = {}
    for path in plans:
        design = read_design(path)
        if design is None:
            notes.append(f"{path}: empty plan (nothing was left to judge when it was made)")
            designs.append(None)
            continue
        if not any(part.run in runs for part in design.parts):
            made = ", ".join(dict.fromkeys(p.run for p in design.parts))
            raise FirevalError(f"{path}: plan was made for run(s) {made}, none of which is given")
        for part in design.parts:
            if part.run not in runs:  # its pairs still count as labels another sample brought
                continue
            key = (part.run, part.direction)
            if key not in digests:
                digests[key] = run_digest(runs[part.run], part.direction)
        check_design(design, coll, digests, str(path))
        _check_min_grade(design, min_grade, str(path))
        _check_round_order(design, designs, str(path))
        designs.append(design)
    records, diffs = estimate_runs(runs, judg, coll, measures, directions, designs)
    unjudged: dict[tuple[str, str, int, int], list[str]] = {}
    for rec in records:
        if rec["plan_mode"] not in (None, "exact") and rec["judged"] < rec["sampled"]:
            rkey = (rec["run"], rec["direction"], rec["sampled"], rec["judged"])
            unjudged.setdefault(rkey, []).append(str(rec["measure"]))
    for (run, d, n_s, n_j), ms in unjudged.items():
        notes.append(
            f"{run} {d} {','.join(ms)}: {n_s - n_j} of the {n_s} pairs its plan drew have no label; "
            "their queries enter with their bounds (give the labels that answer the plan with -l)"
        )
    if not records:
        wanted = ", ".join(d.value for d in directions)
        raise FirevalError(
            f"no run ranks {wanted} queries (a TREC run holds one direction: see --run-direction, -d)"
        )
    return records, diffs, notes


def _check_round_order(design: Any, earlier: Sequence[Any], path: str) -> None:
    """Refuse the rounds of one walk given out of order: the estimate uses the *last* plan given,
    and an earlier round's sample with a later round's labels is biased (its ``x`` would depend on
    the sample). One line, naming the file."""
    for part in design.parts:
        if part.mode != "walk":
            continue
        for prev in earlier:
            for q in prev.parts if prev is not None else []:
                # the same walk: its rounds share the first-phase sample (a new walk of the same run,
                # e.g. with the same seed after more labels, draws other strata and samples)
                same = (q.mode, q.run, q.direction, prev.seed) == (
                    "walk",
                    part.run,
                    part.direction,
                    design.seed,
                )
                same = same and (q.strata_queries, q.sampled) == (part.strata_queries, part.sampled)
                if same and q.walk_round > part.walk_round:
                    raise FirevalError(
                        f"{path}: walk round {part.walk_round} of {part.key} is given after its round "
                        f"{q.walk_round}; give the plans in the order they were made (the last round last)"
                    )


def report_estimates(
    runs: Mapping[str, Run],
    sets: Mapping[str, Judgments],
    coll: Collection,
    measures: str,
    directions: Sequence[str],
    plans: Sequence[str | Path],
    names: str = "ir",
    min_grade: float | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What ``fireval report --plan`` shows: :func:`estimate` under the most augmented label set,
    binarised at ``min_grade`` as ``fireval estimate --min-grade`` does, for the report's measures
    that a plan can estimate (C@1/5/10 when none can)."""
    from fireval.estimation.status import parse_estimable
    from fireval.metrics.measures import display_name
    from fireval.metrics.threshold import check_min_grade

    wanted = []
    for text in (t.strip() for t in measures.split(",") if t.strip()):
        try:
            wanted.append(str(parse_estimable([text])[0]))
        except FirevalError:  # a measure no plan can estimate (AP, nDCG, ...): not in this section
            continue
    ms = parse_estimable(wanted or ["C@1", "C@5", "C@10"])
    judg = list(sets.values())[-1]
    grade = check_min_grade(min_grade)
    if grade is not None:
        judg = judg.binarised(grade)
    dirs = [Direction.parse(d) for d in directions]
    records, diffs, _ = estimate(runs, judg, coll, ms, dirs, plans, min_grade)
    if names == "tvr":
        for rec in [*records, *diffs]:
            rec["measure"] = display_name(str(rec["measure"]), "tvr")
    return records, diffs
