"""``fireval budget``: the annotation budget: the 95th-percentile error of a measure's mean
against the number of queries sampled, the n needed for a target difference, and with two or
more runs the power of their paired comparison.

Registered by :func:`fireval.cli.report.register` with the other trust verbs (the command
``budget`` builds from that module); options and input steps are shared with them
(:mod:`fireval.cli.trust_common`).
"""

from typing import Annotated

import typer

from fireval.cli.check import NoChecksOpt
from fireval.cli.common import MinGradeOpt, check_seed, split_csv
from fireval.cli.trust_common import (
    CollectionOpt,
    DirectionOpt,
    LabelsOpt,
    MeasuresOpt,
    NamesOpt,
    PrecedenceOpt,
    QuietOpt,
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
    def budget(
        runs: RunsArg,
        collection: CollectionOpt = None,
        split: SplitOpt = None,
        labels: LabelsOpt = None,
        precedence: PrecedenceOpt = None,
        measures: MeasuresOpt = "C@1,C@5,C@10",
        direction: DirectionOpt = "t2v",
        delta: Annotated[
            float,
            typer.Option(
                help="Target detectable difference as a fraction of 1 (0.02 = 2 percentage points)."
            ),
        ] = 0.02,
        n: Annotated[
            str | None,
            typer.Option(
                "--n",
                help="Explicit sample sizes to plan for, e.g. 500,1000,3000 (default: a geometric grid up to all queries).",
            ),
        ] = None,
        resamples: Annotated[int, typer.Option(help="Resamples per sample size.")] = 10_000,
        seed: SeedOpt = 20230718,
        names: NamesOpt = "ir",
        quiet: QuietOpt = False,
        power: Annotated[
            float, typer.Option(help="Power of the paired test between two runs (with 2+ runs).")
        ] = 0.8,
        alpha: Annotated[float, typer.Option(help="Two-sided level of that paired test.")] = 0.05,
        no_checks: NoChecksOpt = False,
        min_grade: MinGradeOpt = None,
    ) -> None:
        """Annotation budget: 95th-percentile error vs number of queries, and the n needed for a delta.

        For each n, 10,000 samples of n queries (with replacement) by default; the error is
        |sample mean - mean over all queries|, printed in percentage points (ranks for MnR; MdR,
        a median, is left out with a note, or refused when it is the only measure). n is at most
        the collection's number of queries. With two or more runs, also the power of the paired
        comparison of each pair: the minimum detectable difference at each n, and the n needed
        to detect --delta (normal approximation; assumptions in docs/analysis.md).
        """
        from fireval.analysis.bootstrap import check_resamples
        from fireval.analysis.budget import (
            check_delta,
            check_power,
            check_sizes,
            check_sizes_within,
            default_sizes,
            error_curve,
            power_table,
            recommend_n,
        )
        from fireval.cli.common import progress_bar  # looked up per call (tests patch it)
        from fireval.core.errors import FirevalError
        from fireval.metrics.measures import display_name, parse_measure

        check_resamples(resamples, "--resamples")
        check_seed(seed)
        check_names(names)
        check_delta(delta, "--delta")
        check_power(power, alpha, names=("--power", "--alpha"))
        direction = _one_direction(direction)
        sizes = None
        if n is not None:
            try:
                sizes = [int(x) for x in split_csv(n)]
            except ValueError:
                raise FirevalError(f"--n: expected comma-separated positive integers, got {n!r}") from None
            sizes = check_sizes(sizes, "--n")
        ms = _without_medians(_measures(measures, names), "budget", names)
        # the input checks say which run pairs cannot be compared per query (power needs pairs)
        checks: list | None = [] if len(runs) >= 2 and not no_checks else None
        _, values = _per_query_values(
            collection, split, runs, labels, precedence, ms, direction, checks, min_grade=min_grade
        )
        rep = checks[0] if checks else None
        bad = rep.misaligned_pairs() if rep is not None else {}
        n_queries = min(len(v[m]) for v in values.values() for m in ms)
        if sizes is not None:
            sizes = check_sizes_within(sizes, n_queries, "--n")
        total = len(values) * len(ms)
        with progress_bar("budget", disable=quiet) as progress:
            lines = []
            for i, (name, vals) in enumerate(values.items()):
                for j, m in enumerate(ms):
                    scale = 1.0 if parse_measure(m).lower_is_better else 100.0
                    curve = error_curve(vals[m], sizes, n_resamples=resamples, seed=seed)
                    mname = display_name(m, names)
                    for row in curve:
                        lines.append(f"{name}\t{mname}\t{int(row['n'])}\t{scale * row['error']:.2f}")
                    if scale == 100.0:  # --delta is a fraction of a score; ranks have no such target
                        rec = recommend_n(curve, delta, n_max=n_queries)
                        grid = "the given n" if sizes is not None else f"all {n_queries} queries"
                        lines.append(
                            f"{name}\t{mname}\trecommended n for delta={delta:g} ({100 * delta:g} points): "
                            f"{rec if rec is not None else 'more than ' + grid}"
                        )
                    if progress is not None:
                        progress(i * len(ms) + j + 1, total)
        # printed only once every curve is computed: an error leaves stdout empty
        typer.echo(
            f"direction: {direction}, {resamples} resamples per n, seed {seed}; error in percentage points (MnR: ranks)"
        )
        typer.echo("run\tmeasure\tn\tp95 |error|")
        for line in lines:
            typer.echo(line)
        pct = [m for m in ms if not parse_measure(m).lower_is_better]  # MnR's differences are ranks
        if len(values) >= 2 and pct:
            grid_n = sizes if sizes is not None else default_sizes(n_queries)
            prows = power_table(
                {r: {m: v[m] for m in pct} for r, v in values.items()},
                sizes=grid_n,
                delta=delta,
                n_queries=n_queries,
                alpha=alpha,
                power=power,
            )
            typer.echo(
                f"power: paired two-sided test at alpha={alpha:g}, power={power:g}; normal approximation "
                f"with the sd of the per-query differences; queries a simple random sample of the {n_queries}"
            )
            typer.echo("run A\trun B\tmeasure\tn\tmin detectable difference (points)")
            for r in prows:
                mname = display_name(str(r["measure"]), names)
                mark = "\t!" if (r["a"], r["b"]) in bad or (r["b"], r["a"]) in bad else ""
                for n_i, mdd in r["mdd"].items():  # type: ignore[attr-defined]
                    typer.echo(f"{r['a']}\t{r['b']}\t{mname}\t{n_i}\t{100 * mdd:.2f}{mark}")
                need = int(r["n_needed"])  # type: ignore[call-overload]
                where = (
                    str(need)
                    if r["reachable"]
                    else f"more than the collection's {n_queries} queries (about {need:,} by the approximation)"
                )
                typer.echo(
                    f"{r['a']}\t{r['b']}\t{mname}\tn needed to detect delta={delta:g} ({100 * delta:g} points): "
                    f"{where}; observed difference {100 * float(r['observed']):+.2f} points{mark}"  # type: ignore[arg-type]
                )
            for (a, b), why in bad.items():
                typer.echo(f"! {a} vs {b}: not comparable per query, so their power means nothing: {why}")
