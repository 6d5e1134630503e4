"""``fireval report``, ``fireval compare`` and ``fireval budget``: the trust analysis verbs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fireval.cli.common import check_output_path, split_csv

RunsArg = Annotated[
    list[Path], typer.Argument(help="Score matrices (.npy/.npz, caption x video) or TREC run files.")
]
CollectionOpt = Annotated[
    str,
    typer.Option(
        "--collection", "-c", help="JSFusion 1k-A CSV, MSR-VTT official JSON, MSVD JSON, or 'example'."
    ),
]
LabelsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--labels", "-l", help="Extra labels: FIRE JSON, TREC qrels, .npz or store URL (repeatable)."
    ),
]
SplitOpt = Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")]
MeasuresOpt = Annotated[str, typer.Option("--measures", "-m", help="Comma-separated measures.")]
DirectionOpt = Annotated[str, typer.Option("--direction", "-d", help="t2v or v2t.")]
ResamplesOpt = Annotated[int, typer.Option(help="Bootstrap / randomisation resamples.")]
SeedOpt = Annotated[int, typer.Option(help="Random seed (same seed, same numbers).")]
PrecedenceOpt = Annotated[str, typer.Option(help="Merge policy: source kinds, first wins.")]


def _load(
    collection: str, split: Path | None, runs: list[Path], labels: list[str] | None, precedence: str
) -> tuple[Any, dict, dict]:
    from fireval import api

    coll = api.load_collection(collection, split=split)
    run_objs = api.load_runs(runs, coll)
    sets = api.label_sets(coll, labels or [], precedence=split_csv(precedence))
    return coll, run_objs, sets


def _per_query_values(
    collection: str,
    split: Path | None,
    runs: list[Path],
    labels: list[str] | None,
    precedence: str,
    measures: list[str],
    direction: str,
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The last (most augmented) label set's name and each run's per-query values by measure."""
    from fireval.analysis.trust import metrics_values
    from fireval.core.direction import Direction

    coll, run_objs, sets = _load(collection, split, runs, labels, precedence)
    label_name = list(sets)[-1]
    fn = metrics_values(collection=coll)
    d = Direction.parse(direction)
    return label_name, {name: dict(fn(run, sets[label_name], d, measures)) for name, run in run_objs.items()}


def register(app: typer.Typer) -> None:
    @app.command()
    def report(
        runs: RunsArg,
        collection: CollectionOpt = "example",
        split: SplitOpt = None,
        labels: LabelsOpt = None,
        precedence: PrecedenceOpt = "human,instance,auto,proxy",
        out: Annotated[Path | None, typer.Option("--out", "-o", help="HTML report (self-contained).")] = Path(
            "fireval-report.html"
        ),
        markdown: Annotated[
            Path | None, typer.Option("--markdown", help="Also write the tables as Markdown.")
        ] = None,
        latex: Annotated[Path | None, typer.Option("--latex", help="Also write the tables as LaTeX.")] = None,
        measures: MeasuresOpt = "C@1,C@5,C@10,nDCG@10",
        direction: DirectionOpt = "t2v",
        k: Annotated[int, typer.Option("--k", help="Depth of the top-K overlap, RBO and judged@K.")] = 10,
        rbo_p: Annotated[float, typer.Option(help="RBO persistence p.")] = 0.9,
        resamples: ResamplesOpt = 10_000,
        seed: SeedOpt = 20230718,
        level: Annotated[float, typer.Option(help="Confidence level of the intervals.")] = 0.95,
        pool_depth: Annotated[
            int, typer.Option(help="Pool depth assumed for the leave-one-run-out test.")
        ] = 10,
        train_captions: Annotated[
            Path | None, typer.Option(help="Training captions (.txt/.csv/.json) for the train-test overlap.")
        ] = None,
        train_split: Annotated[
            Path | None, typer.Option(help="Video ids whose captions are training captions.")
        ] = None,
        pool_models: Annotated[
            str | None,
            typer.Option(
                help="RUN=MODEL,... : pool provenance from the labels' 'models' (FIRE JSON) instead of the runs' top-k."
            ),
        ] = None,
        title: Annotated[str, typer.Option(help="Report title.")] = "fireval report",
    ) -> None:
        """Write the trust report: CIs, significance, overlap/RBO, pool bias, breakdowns, budget.

        One self-contained HTML file (figures embedded, works offline), plus the same tables as
        Markdown and LaTeX on request.
        """
        from fireval.analysis.bootstrap import check_resamples
        from fireval.analysis.trust import analyse
        from fireval.report.build import write_report
        from fireval.report.inputs import read_train_captions

        check_resamples(resamples)
        for path in (out, markdown, latex):
            check_output_path(path)
        coll, run_objs, sets = _load(collection, split, runs, labels, precedence)
        train = read_train_captions(train_captions, train_split) if train_captions is not None else None
        run_models = None
        if pool_models:
            from fireval.core.errors import FirevalError

            run_models = {}
            for item in split_csv(pool_models):
                run, sep, model = item.partition("=")
                if not sep or run.strip() not in run_objs:
                    raise FirevalError(
                        f"--pool-models: expected RUN=MODEL with RUN one of {list(run_objs)}, got {item!r}"
                    )
                run_models[run.strip()] = model.strip()
        analysis = analyse(
            coll,
            run_objs,
            sets,
            measures=split_csv(measures),
            direction=direction,
            k=k,
            rbo_p=rbo_p,
            n_resamples=resamples,
            seed=seed,
            level=level,
            pool_depth=pool_depth,
            train_captions=train,
            run_models=run_models,
        )
        write_report(analysis, out, markdown=markdown, latex=latex, title=title)
        for path in (out, markdown, latex):
            if path is not None:
                typer.echo(f"wrote {path}")

    @app.command()
    def compare(
        runs: RunsArg,
        collection: CollectionOpt = "example",
        split: SplitOpt = None,
        labels: LabelsOpt = None,
        precedence: PrecedenceOpt = "human,instance,auto,proxy",
        measures: MeasuresOpt = "C@1,C@5,C@10",
        direction: DirectionOpt = "t2v",
        resamples: ResamplesOpt = 10_000,
        seed: SeedOpt = 20230718,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write the comparisons as JSON.")
        ] = None,
    ) -> None:
        """Paired significance between every pair of runs (bootstrap + randomisation, Holm)."""
        from fireval import api
        from fireval.analysis.significance import compare_runs, comparisons_as_dicts
        from fireval.core.errors import FirevalError
        from fireval.report.tables import fmt

        if len(runs) < 2:
            raise FirevalError("compare needs at least two runs")
        from fireval.analysis.bootstrap import check_resamples

        check_resamples(resamples)
        check_output_path(json_out)
        label_name, values = _per_query_values(
            collection, split, runs, labels, precedence, split_csv(measures), direction
        )
        comps = compare_runs(values, n_resamples=resamples, seed=seed)
        typer.echo(f"labels: {label_name}, {resamples} resamples, seed {seed}")
        typer.echo("measure\tA\tB\tA-B\td_z\tP(A>B)\tp_boot(Holm)\tp_rand(Holm)")
        for c in comps:
            typer.echo(
                f"{c.measure}\t{c.a}\t{c.b}\t{fmt(c.mean_difference, 'diff')}\t{c.cohens_dz:.3f}\t{c.prob_superiority:.3f}\t"
                f"{fmt(c.p_bootstrap_holm, 'p')}\t{fmt(c.p_randomisation_holm, 'p')}"
            )
        if json_out is not None:
            api.write_json(comparisons_as_dicts(comps), json_out)

    @app.command()
    def budget(
        runs: RunsArg,
        collection: CollectionOpt = "example",
        split: SplitOpt = None,
        labels: LabelsOpt = None,
        precedence: PrecedenceOpt = "human,instance,auto,proxy",
        measures: MeasuresOpt = "C@1,C@5,C@10",
        direction: DirectionOpt = "t2v",
        delta: Annotated[
            float, typer.Option(help="Target detectable difference (fraction, e.g. 0.02).")
        ] = 0.02,
        resamples: Annotated[int, typer.Option(help="Resamples per sample size.")] = 1000,
        seed: SeedOpt = 20230718,
    ) -> None:
        """Annotation budget: 95th-percentile error vs number of queries, and the n needed for a delta."""
        from fireval.analysis.bootstrap import check_resamples
        from fireval.analysis.budget import error_curve, recommend_n
        from fireval.core.errors import FirevalError

        check_resamples(resamples)
        if not delta > 0:
            raise FirevalError(f"--delta must be > 0 (a fraction, e.g. 0.02), got {delta}")
        ms = split_csv(measures)
        _, values = _per_query_values(collection, split, runs, labels, precedence, ms, direction)
        typer.echo("run\tmeasure\tn\tp95 |error| (points)")
        for name, vals in values.items():
            for m in ms:
                curve = error_curve(vals[m], n_resamples=resamples, seed=seed)
                for row in curve:
                    typer.echo(f"{name}\t{m}\t{int(row['n'])}\t{100 * row['error']:.2f}")
                rec = recommend_n(curve, delta)
                typer.echo(
                    f"{name}\t{m}\trecommended n for delta={delta:g}: {rec if rec is not None else 'more than all queries'}"
                )
