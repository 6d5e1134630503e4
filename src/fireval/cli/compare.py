"""``fireval compare``: paired significance between every pair of runs (bootstrap and
randomisation tests, Holm-corrected), with the input checks' ``!`` and ``†`` marks, as a
terminal table or ``--json``.

Registered by :func:`fireval.cli.report.register` with the other trust verbs (the command
``compare`` builds from that module); options and input steps are shared with them
(:mod:`fireval.cli.trust_common`).
"""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.check import NoChecksOpt
from fireval.cli.common import MinGradeOpt, check_seed, guard_outputs
from fireval.cli.trust_common import (
    CollectionOpt,
    DirectionOpt,
    LabelsOpt,
    MeasuresOpt,
    NamesOpt,
    PrecedenceOpt,
    QuietOpt,
    ResamplesOpt,
    RunsArg,
    SeedOpt,
    SplitOpt,
    _measures,
    _one_direction,
    _per_query_values,
    _without_medians,
    check_names,
)


def register(app: typer.Typer) -> None:
    @app.command()
    def compare(
        runs: RunsArg,
        collection: CollectionOpt = None,
        split: SplitOpt = None,
        labels: LabelsOpt = None,
        precedence: PrecedenceOpt = None,
        measures: MeasuresOpt = "C@1,C@5,C@10",
        direction: DirectionOpt = "t2v",
        resamples: ResamplesOpt = 10_000,
        seed: SeedOpt = 20230718,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write the comparisons as JSON.")
        ] = None,
        no_checks: NoChecksOpt = False,
        names: NamesOpt = "ir",
        quiet: QuietOpt = False,
        min_grade: MinGradeOpt = None,
    ) -> None:
        """Paired significance between every pair of runs (bootstrap + randomisation, Holm).

        Pairs the input checks find meaningless (a run not aligned with the collection, or two runs
        that agree only at chance) are marked ``!`` and explained below the table. The tests are of
        per-query means: MdR (a median) is left out with a note, or refused when it is the only
        measure."""
        from fireval import api
        from fireval.analysis.significance import compare_runs, comparisons_as_dicts
        from fireval.cli.common import progress_bar  # looked up per call (tests patch it)
        from fireval.core.errors import FirevalError
        from fireval.core.units import fixed
        from fireval.metrics.measures import display_name, parse_measure
        from fireval.report.tables import fmt

        if len(runs) < 2:
            raise FirevalError("compare needs at least two runs")
        from fireval.analysis.bootstrap import check_resamples

        check_resamples(resamples, "--resamples")
        check_seed(seed)
        check_names(names)
        direction = _one_direction(direction)
        ms = _without_medians(_measures(measures, names), "compare", names)
        guard_outputs({"--json": json_out}, runs=runs, collection=collection, split=split, labels=labels)
        checks: list = [] if not no_checks else None  # type: ignore[assignment]
        label_name, values = _per_query_values(
            collection, split, runs, labels, precedence, ms, direction, checks, min_grade=min_grade
        )
        rep = checks[0] if checks and checks[0] is not None else None
        bad = rep.misaligned_pairs() if rep is not None else {}
        with progress_bar("paired tests", disable=quiet):
            comps = compare_runs(values, n_resamples=resamples, seed=seed)
        # run -> measures whose values depend on a truncated tail (the ``†`` of evaluate), once
        tested = sorted({c.measure for c in comps})
        marked = {r: set(rep.marked_measures(r, tested, direction)) for r in values} if rep else {}
        from rich.console import Console

        from fireval.report.terminal import fit_tsv, wrap

        width = Console().width
        typer.echo(f"direction: {direction}, labels: {label_name}, {resamples} resamples, seed {seed}")
        typer.echo(
            wrap(
                "A-B in percentage points (MnR: ranks) with its 95% paired bootstrap CI (same resamples); "
                "effect size Cohen's d_z = mean/sd of the per-query differences; p-values Holm-corrected "
                "over the run pairs",
                width,
            )
        )
        lines = ["measure\tA\tB\tA-B\t95% CI\td_z\tP(A>B)\tp_boot(Holm)\tp_rand(Holm)"]
        # values under labels beyond the instance positives of a run failing the alignment check
        off = {r: rep.not_comparable(r, label_name) for r in values} if rep is not None else {}

        def cut(measure: str, a: str, b: str) -> list[str]:
            """The runs of the pair whose ``measure`` depends on a truncated tail."""
            return [r for r in (a, b) if measure in marked.get(r, ())]

        for c in comps:
            kind = "rankdiff" if parse_measure(c.measure).lower_is_better else "diff"
            dagger = "†" if cut(c.measure, c.a, c.b) else ""
            ci = f"[{fmt(c.ci_low, kind)}, {fmt(c.ci_high, kind)}]"
            lines.append(
                f"{display_name(c.measure, names)}\t{c.a}\t{c.b}\t{fmt(c.mean_difference, kind)}{dagger}\t{ci}\t"
                f"{fixed(c.cohens_dz, 3)}\t{fixed(c.prob_superiority, 3)}\t"
                f"{fmt(c.p_bootstrap_holm, 'p')}\t{fmt(c.p_randomisation_holm, 'p')}"
                + ("\t!" if (c.a, c.b) in bad or (c.b, c.a) in bad or off.get(c.a) or off.get(c.b) else "")
            )
        for line in fit_tsv(lines, width, keep=3):
            typer.echo(line)
        for (a, b), why in bad.items():
            typer.echo(wrap(f"! {a} vs {b}: not comparable per query: {why}", width))
        for r, why in off.items():
            if why:
                typer.echo(wrap(f"! {r}: not comparable under {label_name} labels: {why}", width))
        if any(cut(c.measure, c.a, c.b) for c in comps):
            typer.echo(
                wrap(
                    "† depends on a truncated run's tail below its top k (an expectation over its undefined "
                    "order, or a lower bound where it is unretrieved); see `fireval check`",
                    width,
                )
            )
        if json_out is not None:
            rows = comparisons_as_dicts(comps)
            for row in rows:
                why = bad.get((row.get("a"), row.get("b"))) or bad.get((row.get("b"), row.get("a")))
                row["misaligned"] = why
                row["not_comparable"] = off.get(str(row.get("a"))) or off.get(str(row.get("b")))
                row["checks"] = (
                    {r: rep.status(r) for r in (str(row.get("a")), str(row.get("b")))} if rep else None
                )
                row["direction"] = direction
                row["truncated"] = cut(str(row["measure"]), str(row["a"]), str(row["b"]))
                lower = parse_measure(str(row["measure"])).lower_is_better
                row["measure"] = display_name(str(row["measure"]), names)
                # values as computed: fractions in [0, 1] (x100 for %), ranks for MdR/MnR
                row["unit"] = "rank" if lower else "fraction"
                # ci_low/ci_high: the paired bootstrap interval of mean_difference (level, seed and
                # n_resamples beside it), in the same unit
                row["units"] = (
                    "values, differences and CI in ranks (lower is better)"
                    if lower
                    else "values, differences and CI as fractions in [0, 1] (printed x100: percentage points)"
                )
            from fireval.core.units import UNITS_JSON

            # one object: the settings once at the top, the comparisons (each still carrying its
            # own seed, n_resamples, level and units) below (docs/formats.md#compare-json)
            doc = {
                "units": UNITS_JSON,
                "direction": direction,
                "labels": label_name,
                "seed": seed,
                "n_resamples": resamples,
                "level": comps[0].level if comps else 0.95,
                "test": "paired bootstrap and randomisation (sign flip), Holm-corrected over run pairs",
                "comparisons": rows,
            }
            api.write_json(doc, json_out)
