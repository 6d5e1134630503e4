"""``fireval report``, ``fireval compare`` and ``fireval budget``: the trust analysis verbs."""

from pathlib import Path
from typing import Annotated, Any

import typer

from fireval.cli.check import NoChecksOpt, input_checks
from fireval.cli.common import (
    COLLECTION_HELP,
    MinGradeOpt,
    check_measures_option,
    check_output_path,
    check_precedence_option,
    check_seed,
    default_collection_hint,
    guard_outputs,
    note_collection,
    progress_bar,
    seed_option,
    sets_with_grade,
    split_csv,
)

RunsArg = Annotated[
    list[Path], typer.Argument(help="Score matrices (.npy/.npz, caption x video) or TREC run files.")
]
CollectionOpt = Annotated[str | None, typer.Option("--collection", "-c", help=COLLECTION_HELP)]
LabelsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--labels",
        "-l",
        help="Extra labels: FIRE JSON, TREC qrels, .npz or store URL (repeatable; NAME=PATH: a set of its own).",
    ),
]
SplitOpt = Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")]
MeasuresOpt = Annotated[
    str,
    typer.Option(
        "--measures",
        "-m",
        callback=check_measures_option,
        help="Comma-separated measures (see `fireval measures`).",
    ),
]
DirectionOpt = Annotated[str, typer.Option("--direction", "-d", help="t2v or v2t.")]
ResamplesOpt = Annotated[int, typer.Option(help="Bootstrap / randomisation resamples.")]
SeedOpt = Annotated[int, typer.Option(callback=seed_option(), help="Random seed (same seed, same numbers).")]
NamesOpt = Annotated[
    str,
    typer.Option(
        "--names",
        help="Measure names in every output: tvr (C@K printed as R@K, as TVR papers) or ir (fireval's C@K). "
        "-m accepts R@K as C@K either way; Recall@K is IR recall.",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
PrecedenceOpt = Annotated[
    str | None,
    typer.Option(
        callback=check_precedence_option,
        help="Merge policy: source kinds, first wins (default: FIRE's, instance positives kept).",
    ),
]


def check_names(names: str) -> None:
    """``--names`` must be ``tvr`` or ``ir``."""
    from fireval.core.errors import FirevalError

    if names not in ("tvr", "ir"):
        raise FirevalError(f"--names: expected tvr or ir, got {names!r}")


def _measures(measures: str, names: str) -> list[str]:
    """``-m`` as canonical names: ``R@5`` is ``C@5`` whatever ``--names`` (which only names outputs)."""
    from fireval.metrics.measures import parse_measure

    del names
    return list(dict.fromkeys(str(parse_measure(m, "tvr")) for m in split_csv(measures)))


#: the option of ``fireval report`` behind each setting of :func:`fireval.analysis.trust.analyse`
REPORT_OPTIONS = {
    "k": "--k",
    "rbo_p": "--rbo-p",
    "level": "--level",
    "alpha": "--alpha",
    "test": "--test",
    "pool_depth": "--pool-depth",
    "n_resamples": "--resamples",
}

#: ``fireval report``'s HTML when no output option is given
DEFAULT_HTML = "fireval-report.html"


def _default_html(out: Path | None, *others: Path | None) -> Path | None:
    """The HTML path of ``fireval report``: ``-o`` if given; else none when another output is asked
    for; else ``./fireval-report.html``, refused (exit 2) if that file exists, since the user did
    not name it (pass ``-o`` to overwrite on purpose)."""
    if out is not None or any(o is not None for o in others):
        return out
    default = Path(DEFAULT_HTML)
    if default.exists():
        from fireval.core.errors import FirevalError

        raise FirevalError(
            f"{DEFAULT_HTML} already exists here and no -o was given: pass -o {DEFAULT_HTML} to "
            "overwrite it, or -o another file"
        )
    return default


def _is_latex_dir(path: Path) -> bool:
    """``report --latex PATH``: a directory (one file per table) when PATH is an existing directory,
    ends with a path separator or has no suffix (``tables``, ``tex/``); else one file with every table
    (``table.tex``, as before)."""
    import os

    text = str(path)
    return path.is_dir() or text.endswith((os.sep, "/")) or not path.suffix


def _without_medians(measures: list[str], verb: str, names: str) -> list[str]:
    """``measures`` without the medians over queries (``MdR``), which ``verb`` cannot handle.

    ``compare`` tests and ``budget`` resamples per-query *means*; a median has neither (the mean
    of MdR's per-query ranks is MnR). Each measure says how it aggregates
    (:attr:`fireval.metrics.measures.Measure.aggregate`). Given among others (the paper set
    R@1,R@5,R@10,MdR,MnR), the medians are dropped with one note on stderr; given alone, a
    one-line error (exit 2).
    """
    from fireval.core.errors import FirevalError
    from fireval.metrics.measures import display_name, parse_measure

    medians = [parse_measure(m) for m in measures if parse_measure(m).aggregate == "median"]
    if not medians:
        return measures
    kept = [m for m in measures if parse_measure(m) not in medians]
    dropped = ", ".join(display_name(m, names) for m in medians)
    why = (
        f"{dropped} {'is a median' if len(medians) == 1 else 'are medians'} over queries and {verb} works "
        f"on per-query means ({'; '.join(m.median_note for m in medians)})"
    )
    if not kept:
        means = ", ".join(str(m.mean_counterpart) for m in medians)
        raise FirevalError(f"-m: nothing left to {verb}: {why}; use {means} or another measure")
    typer.echo(
        f"note: -m: {dropped} left out: {why}; going on with {', '.join(display_name(m, names) for m in kept)}",
        err=True,
    )
    return kept


def _directions(direction: str) -> list[str]:
    """``t2v``, ``v2t``, ``both`` or ``t2v,v2t`` as a list (the first is the report's main direction)."""
    from fireval.core.errors import FirevalError

    ds = ["t2v", "v2t"] if direction.strip() == "both" else split_csv(direction)
    if not ds or any(d not in ("t2v", "v2t") for d in ds):
        raise FirevalError(f"--direction: expected t2v, v2t or both, got {direction!r}")
    return list(dict.fromkeys(ds))


def _one_direction(direction: str) -> str:
    """``-d`` of ``compare`` and ``budget``: ``t2v`` or ``v2t`` (checked before any file is read)."""
    from fireval.core.errors import FirevalError

    if direction.strip() not in ("t2v", "v2t"):
        raise FirevalError(f"--direction: expected t2v or v2t, got {direction!r}")
    return direction.strip()


def _load(
    collection: str | None,
    split: Path | None,
    runs: list[Path],
    labels: list[str] | None,
    precedence: str | None,
    checks_out: list | None = None,
) -> tuple[Any, dict, dict]:
    """Collection, runs and label sets; with ``checks_out`` the input checks run and their report is appended."""
    from fireval import api

    coll = api.load_collection(collection, split=split)
    note_collection(collection, coll)
    with default_collection_hint(collection):
        run_objs = api.load_runs(runs, coll)
    if checks_out is not None:
        checks_out.append(input_checks(coll, run_objs))
    prec = split_csv(precedence) if precedence is not None else None
    sets = api.label_sets(coll, labels or [], precedence=prec)
    for w in api.label_warnings(sets, explicit=precedence is not None):
        typer.echo(f"warning: {w}", err=True)
    return coll, run_objs, sets


def _values_fn(coll: Any, min_grade: float | None) -> Any:
    """The report's per-query values: unjudged irrelevant, relevant = grade >= ``min_grade``."""
    from fireval.analysis.trust import metrics_values

    return metrics_values(collection=coll, min_grade=min_grade)


def _per_query_values(
    collection: str | None,
    split: Path | None,
    runs: list[Path],
    labels: list[str] | None,
    precedence: str | None,
    measures: list[str],
    direction: str,
    checks_out: list | None = None,
    *,
    min_grade: float | None = None,
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The last (most augmented) label set's name and each run's per-query values by measure."""
    from fireval.analysis.trust import metrics_values
    from fireval.core.direction import Direction

    coll, run_objs, sets = _load(collection, split, runs, labels, precedence, checks_out)
    sets = sets_with_grade(sets, min_grade)
    label_name = list(sets)[-1]
    fn = metrics_values(collection=coll, min_grade=min_grade)
    d = Direction.parse(direction)
    return label_name, {name: dict(fn(run, sets[label_name], d, measures)) for name, run in run_objs.items()}


def _check_fire_options(
    tfidf_fit: str,
    fig8_similarity: str,
    fig8_k: int,
    examples_by: str,
    per_group: int,
    agreement: float | None,
) -> None:
    """The FIRE-variant options of ``report`` in range, each named, before any file is read."""
    from fireval.core.errors import FirevalError

    for opt, value, allowed in (
        ("--tfidf-fit", tfidf_fit, ("all", "train")),
        ("--fig8-similarity", fig8_similarity, ("mean10", "max")),
        ("--examples-by", examples_by, ("words", "chars")),
    ):
        if value not in allowed:
            raise FirevalError(f"{opt} must be one of {', '.join(allowed)}, got {value!r}")
    for opt, n in (("--fig8-k", fig8_k), ("--examples-per-group", per_group)):
        if n < 1:
            raise FirevalError(f"{opt} must be an integer >= 1, got {n}")
    if agreement is not None and not 0.5 < agreement <= 1:
        raise FirevalError(
            f"--label-agreement must be in (0.5, 1] (at or below 0.5: chance), got {agreement:g}"
        )


def _labels_agreement(labels: list[str] | None) -> float | None:
    """Pairwise agreement of the votes in the FIRE JSON label files among ``labels`` (``None``: no votes)."""
    import numpy as np

    from fireval.core.errors import FirevalError
    from fireval.judging.agreement import items_from_fire_json, percent_agreement

    ns, rs = [], []
    for spec in labels or []:
        path = Path(spec.split("=", 1)[1]) if "=" in spec and not Path(spec).exists() else Path(spec)
        if not path.is_file() or not path.name.lower().endswith((".json", ".json.gz")):
            continue
        try:
            items = items_from_fire_json(path)
        except (FirevalError, ValueError, OSError, KeyError, TypeError):  # not FIRE JSON: no votes here
            continue
        ns.append(items.n)
        rs.append(items.r)
    if not ns:
        return None
    pair = percent_agreement(np.concatenate(ns), np.concatenate(rs))["pairwise"]
    return float(pair) if pair is not None and pair > 0.5 else None


def register(app: typer.Typer) -> None:
    @app.command()
    def report(
        runs: RunsArg,
        collection: CollectionOpt = None,
        split: SplitOpt = None,
        labels: LabelsOpt = None,
        precedence: PrecedenceOpt = None,
        out: Annotated[
            Path | None,
            typer.Option(
                "--out",
                "-o",
                help=f"HTML report (self-contained). Without -o: ./{DEFAULT_HTML} when no other output "
                "(--markdown, --latex, --figures) is asked for, never over an existing file; with another "
                "output, no HTML. An explicit -o overwrites.",
                show_default=False,
            ),
        ] = None,
        markdown: Annotated[
            Path | None, typer.Option("--markdown", help="Also write the tables as Markdown.")
        ] = None,
        latex: Annotated[
            Path | None,
            typer.Option(
                "--latex",
                help="Also write the tables as LaTeX (booktabs, paper layout): a file name with a suffix "
                "(table.tex) gets every table; a directory (an existing one, DIR/, or a name without suffix) "
                "one .tex file per table (<table>.tex, and tables.tex that inputs them).",
            ),
        ] = None,
        tables: Annotated[
            str | None,
            typer.Option(
                "--tables",
                help="Tables of --latex and --markdown, comma-separated: label_sources, paper, intervals, "
                "significance, overlap, judged, pool_bias, correctness, train_overlap, train_similarity, "
                "caption_examples, budget (default: all; the HTML report has all).",
            ),
        ] = None,
        columns: Annotated[
            str | None,
            typer.Option(
                "--columns",
                help="Columns of the paper table: measures (of -m) and groups (original, augmented, delta), "
                "comma-separated, e.g. R@1,R@5,augmented,delta (default: all).",
            ),
        ] = None,
        figures: Annotated[
            Path | None,
            typer.Option(
                "--figures",
                help="Also write every figure as PDF and SVG, 3.3 in and 6.9 in wide, into this directory.",
            ),
        ] = None,
        names: NamesOpt = "ir",
        measures: MeasuresOpt = "C@1,C@5,C@10,nDCG@10",
        direction: Annotated[
            str,
            typer.Option(
                "--direction",
                "-d",
                help="t2v, v2t, or both (both: the paper table shows both; the rest of the report the first).",
            ),
        ] = "t2v",
        alpha: Annotated[
            float, typer.Option(help="Significance level of the paper table's markers (Holm-corrected).")
        ] = 0.05,
        test: Annotated[
            str, typer.Option(help="Paired test behind the markers: randomisation or bootstrap.")
        ] = "randomisation",
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
        no_checks: NoChecksOpt = False,
        quiet: QuietOpt = False,
        tfidf_fit: Annotated[
            str,
            typer.Option(
                help="TF-IDF of the train-test overlap fitted on 'all' captions (FIRE) or 'train' only (earlier)."
            ),
        ] = "all",
        fig8_similarity: Annotated[
            str,
            typer.Option(
                help="Fig. 8 axis: 'mean10' (mean of the top-10 train cosines, FIRE) or 'max' (earlier)."
            ),
        ] = "mean10",
        fig8_k: Annotated[int, typer.Option(help="Fig. 8's C@K (FIRE: 5).")] = 5,
        examples_by: Annotated[
            str, typer.Option(help="Tables 5/6 ranked by 'words' (FIRE) or 'chars' (earlier).")
        ] = "words",
        examples_per_group: Annotated[
            int, typer.Option(help="Tables 5/6 captions per group (FIRE: 10).")
        ] = 10,
        pool_subsets: Annotated[
            int,
            typer.Option(
                help="Pool bias vs number of pooled runs: pools scored per size (every one up to this many, "
                "else a seeded sample); 0 skips it."
            ),
        ] = 20,
        label_agreement: Annotated[
            float | None,
            typer.Option(
                help="Annotators' pairwise agreement for the saturation table (default: from the FIRE JSON "
                "labels' votes; none there: label noise not counted)."
            ),
        ] = None,
        min_grade: MinGradeOpt = None,
        plans: Annotated[
            list[Path] | None,
            typer.Option("--plan", help="Judging plans (`fireval plan`): adds 'Estimated corrected scores'."),
        ] = None,
    ) -> None:
        """Write the trust report: CIs, significance, overlap/RBO, pool bias, breakdowns, budget.

        One self-contained HTML file (figures embedded, works offline), plus the same tables as
        Markdown and LaTeX on request. Without -o the HTML goes to ./fireval-report.html only when
        nothing else is asked for, and never over an existing file.
        """
        from fireval.analysis.trust import analyse, check_settings
        from fireval.report.build import write_report
        from fireval.report.inputs import read_train_captions

        check_settings(  # every option's range before any file is read, each named as given
            k=k,
            rbo_p=rbo_p,
            level=level,
            alpha=alpha,
            test=test,
            pool_depth=pool_depth,
            n_resamples=resamples,
            names=REPORT_OPTIONS,
        )
        _check_fire_options(
            tfidf_fit, fig8_similarity, fig8_k, examples_by, examples_per_group, label_agreement
        )
        if pool_subsets < 0:
            from fireval.core.errors import FirevalError

            raise FirevalError(f"--pool-subsets must be an integer >= 0 (0 skips), got {pool_subsets}")
        check_seed(seed)
        check_names(names)
        dirs = _directions(direction)
        out = _default_html(out, markdown, latex, figures)
        from fireval.report.build import check_tables

        keep = check_tables(tables) if tables is not None else None
        if (tables is not None or columns is not None) and latex is None and markdown is None:
            from fireval.core.errors import FirevalError

            raise FirevalError(
                "--tables and --columns choose what --latex and --markdown write; give one of them"
            )
        latex_dir = latex if latex is not None and _is_latex_dir(latex) else None
        if latex_dir is not None:
            check_output_path(latex_dir, directory=True)
            latex = None
        guard_outputs(
            {"--out": out, "--markdown": markdown, "--latex": latex},
            runs=runs,
            collection=collection,
            split=split,
            labels=labels,
            others={"--train-captions": train_captions, "--train-split": train_split},
        )
        if figures is not None:
            check_output_path(figures, directory=True)
        if plans:  # the plans are inputs too: never an output
            guard_outputs({"--out": out, "--markdown": markdown}, others={f"--plan {p}": p for p in plans})
        if train_split is not None and train_captions is None:
            from fireval.core.errors import FirevalError

            raise FirevalError("--train-split selects videos of --train-captions; give --train-captions too")
        train = read_train_captions(train_captions, train_split) if train_captions is not None else None
        checks: list = [] if not no_checks else None  # type: ignore[assignment]
        coll, run_objs, sets = _load(collection, split, runs, labels, precedence, checks)
        sets = sets_with_grade(sets, min_grade)
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
        rep = checks[0] if checks else None
        cols = None
        if columns is not None:  # checked before the analysis: a typo costs no minutes
            from fireval.report.paper import parse_columns

            cols = parse_columns(columns, _measures(measures, names), list(sets))
        with progress_bar("analysing", disable=quiet) as progress:
            analysis = analyse(
                coll,
                run_objs,
                sets,
                unaligned=rep.unaligned_runs() if rep is not None else (),
                measures=_measures(measures, names),
                direction=dirs[0],
                paper_directions=dirs[1:],
                alpha=alpha,
                test=test,
                progress=progress,
                k=k,
                rbo_p=rbo_p,
                n_resamples=resamples,
                seed=seed,
                level=level,
                pool_depth=pool_depth,
                train_captions=train,
                run_models=run_models,
                tfidf_fit=tfidf_fit,
                fig8_similarity=fig8_similarity,
                fig8_k=fig8_k,
                examples_by=examples_by,
                examples_per_group=examples_per_group,
                label_agreement=label_agreement if label_agreement is not None else _labels_agreement(labels),
                pool_max_subsets=pool_subsets,
                values_fn=_values_fn(coll, min_grade),
            )
        if min_grade is not None:  # shown in the report's settings
            analysis.settings["min_grade"] = min_grade
        with progress_bar("writing report and figures", disable=quiet):
            done = write_report(
                analysis,
                out,
                markdown=markdown,
                latex=latex,
                figures=figures,
                title=title,
                names=names,
                checks=rep,
                columns=cols,
                keep=keep,
                latex_dir=latex_dir,
            )
        if plans:  # "Estimated corrected scores" (fireval.estimation), added to the written documents
            from fireval.estimation.workflow import report_estimates
            from fireval.report.estimates_section import add_to_files

            recs, diffs = report_estimates(run_objs, sets, coll, measures, dirs, plans, names, min_grade)
            add_to_files(recs, diffs, html_path=out, markdown_path=markdown)
        for path in (out, markdown, latex):
            if path is not None:
                typer.echo(f"wrote {path}")
        if latex_dir is not None:
            typer.echo(
                f"wrote {len(done.latex_files)} LaTeX files to {latex_dir} (tables.tex inputs them all)"
            )
        if figures is not None:
            typer.echo(f"wrote {len(done.figure_files)} figure files to {figures}")

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
