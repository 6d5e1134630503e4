"""``fireval report``, ``fireval compare`` and ``fireval budget``: the trust analysis verbs.

This module holds ``report`` and registers all three; ``compare`` and ``budget`` live in
:mod:`fireval.cli.compare` and :mod:`fireval.cli.budget`, their shared options and input steps in
:mod:`fireval.cli.trust_common` (re-exported here).
"""

from pathlib import Path
from typing import Annotated, Any

import typer

from fireval.cli import budget as _budget
from fireval.cli import compare as _compare
from fireval.cli.check import NoChecksOpt
from fireval.cli.common import (
    MinGradeOpt,
    check_output_path,
    check_seed,
    guard_outputs,
    progress_bar,
    sets_with_grade,
    split_csv,
)
from fireval.cli.trust_common import CollectionOpt as CollectionOpt
from fireval.cli.trust_common import DirectionOpt as DirectionOpt
from fireval.cli.trust_common import LabelsOpt as LabelsOpt
from fireval.cli.trust_common import MeasuresOpt as MeasuresOpt
from fireval.cli.trust_common import NamesOpt as NamesOpt
from fireval.cli.trust_common import PrecedenceOpt as PrecedenceOpt
from fireval.cli.trust_common import QuietOpt as QuietOpt
from fireval.cli.trust_common import ResamplesOpt as ResamplesOpt
from fireval.cli.trust_common import RunsArg as RunsArg
from fireval.cli.trust_common import SeedOpt as SeedOpt
from fireval.cli.trust_common import SplitOpt as SplitOpt
from fireval.cli.trust_common import _load as _load
from fireval.cli.trust_common import _measures as _measures
from fireval.cli.trust_common import _one_direction as _one_direction
from fireval.cli.trust_common import _per_query_values as _per_query_values
from fireval.cli.trust_common import _without_medians as _without_medians
from fireval.cli.trust_common import check_names as check_names

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


def _directions(direction: str) -> list[str]:
    """``t2v``, ``v2t``, ``both`` or ``t2v,v2t`` as a list (the first is the report's main direction)."""
    from fireval.core.errors import FirevalError

    ds = ["t2v", "v2t"] if direction.strip() == "both" else split_csv(direction)
    if not ds or any(d not in ("t2v", "v2t") for d in ds):
        raise FirevalError(f"--direction: expected t2v, v2t or both, got {direction!r}")
    return list(dict.fromkeys(ds))


def _values_fn(coll: Any, min_grade: float | None) -> Any:
    """The report's per-query values: unjudged irrelevant, relevant = grade >= ``min_grade``."""
    from fireval.analysis.trust import metrics_values

    return metrics_values(collection=coll, min_grade=min_grade)


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
            from fireval.estimation.workflow import merged_labels, report_estimates
            from fireval.report.estimates_section import add_to_files

            # every label given, named sets too, as `fireval estimate` merges them
            every = {"all": merged_labels(coll, [str(x) for x in labels or []], precedence=precedence)}
            recs, diffs = report_estimates(run_objs, every, coll, measures, dirs, plans, names, min_grade)
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

    _compare.register(app)
    _budget.register(app)
