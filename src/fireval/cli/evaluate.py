"""``fireval evaluate``: score runs against the original and augmented labels."""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.check import NoChecksOpt, input_checks
from fireval.cli.common import (
    COLLECTION_HELP,
    EMBEDDING_POOLS,
    EMBEDDING_SIMS,
    PRESETS,
    TIE_POLICIES,
    UNJUDGED_MODES,
    MinGradeOpt,
    RunDirectionOpt,
    check_measures_option,
    check_precedence_option,
    choice,
    default_collection_hint,
    guard_outputs,
    int_at_least,
    note_collection,
    progress_bar,
    sets_with_grade,
    split_csv,
)


def register(app: typer.Typer) -> None:
    @app.command()
    def evaluate(
        runs: Annotated[
            list[Path] | None,
            typer.Argument(
                help="Score matrices (.npy/.npz, caption x video) or TREC run files "
                "(none with --text-emb/--video-emb).",
                show_default=False,
            ),
        ] = None,
        collection: Annotated[str | None, typer.Option("--collection", "-c", help=COLLECTION_HELP)] = None,
        split: Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")] = None,
        labels: Annotated[
            list[str] | None,
            typer.Option(
                "--labels",
                "-l",
                help="Extra labels: FIRE JSON, TREC qrels, .npz, or a store URL (repeatable); merged into one "
                "augmented set, or NAME=PATH: a label set of its own (one group per proxy, Wray Table 3).",
            ),
        ] = None,
        no_instance: Annotated[
            bool, typer.Option("--no-instance", help="Do not include the instance labels.")
        ] = False,
        precedence: Annotated[
            str | None,
            typer.Option(
                callback=check_precedence_option,
                help="Merge policy: source kinds, first wins. Default: FIRE's, instance,human,auto,proxy "
                "(gold positives are kept; a human 'irrelevant' on one is a counted conflict).",
            ),
        ] = None,
        measures: Annotated[
            str | None,
            typer.Option(
                "--measures",
                "-m",
                callback=check_measures_option,
                help="Comma-separated, e.g. C@1,C@5,nDCG@10; see `fireval measures` for every name.",
            ),
        ] = None,
        direction: Annotated[str, typer.Option("--direction", "-d", help="t2v, v2t or both.")] = "both",
        ties: Annotated[
            str,
            typer.Option(
                callback=choice("--ties", TIE_POLICIES), help="tie-aware | optimistic | pessimistic | docid."
            ),
        ] = "tie-aware",
        unjudged: Annotated[
            str,
            typer.Option(
                callback=choice("--unjudged", UNJUDGED_MODES, csv=True),
                help="Comma-separated: lower, upper, condensed; worst, best (exact bounds over every "
                "labelling of the unjudged pairs).",
            ),
        ] = "lower",
        preset: Annotated[
            str | None,
            typer.Option(callback=choice("--preset", PRESETS), help="fire2023 | clip4clip | wray2021."),
        ] = None,
        min_grade: MinGradeOpt = None,
        zero_relevant: Annotated[
            str | None,
            typer.Option(
                "--zero-relevant",
                callback=choice("--zero-relevant", ("zero", "drop", "nan"), casefold=True),
                help="A query with no relevant item: zero (scores 0 and stays in the mean, as Falcon et "
                "al.'s ranp; the wray2021 preset's default), drop (left out; the default otherwise) or nan "
                "(the mean is NaN, as JPoSE's nDCG.py).",
                show_default=False,
            ),
        ] = None,
        run_direction: RunDirectionOpt = "t2v",
        json_out: Annotated[Path | None, typer.Option("--json", help="Write all results as JSON.")] = None,
        per_query: Annotated[
            Path | None, typer.Option(help="Write per-query values (.tsv/.csv/.parquet/.jsonl).")
        ] = None,
        latex: Annotated[
            Path | None,
            typer.Option(
                "--latex",
                help="Write the results as a paper table (LaTeX, booktabs): runs as rows, label sets and Δ "
                "as row groups, best bold; see --columns.",
            ),
        ] = None,
        markdown: Annotated[
            Path | None, typer.Option("--markdown", help="Write the same paper table as Markdown.")
        ] = None,
        columns: Annotated[
            str | None,
            typer.Option(
                "--columns",
                help="Columns of --latex/--markdown: measures and groups (original, augmented, delta), "
                "comma-separated (default: R@1,R@5,R@10,MdR,MnR where computed, every group).",
            ),
        ] = None,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No tables, no progress.")] = False,
        names: Annotated[
            str,
            typer.Option("--names", help="Measure names in tables and JSON: tvr (C@K as R@K) or ir (C@K)."),
        ] = "ir",
        no_checks: NoChecksOpt = False,
        text_emb: Annotated[
            list[str] | None,
            typer.Option(
                "--text-emb",
                help="Caption embeddings instead of a score matrix: .npy (repeat, or a glob, for shards "
                "in order) or a .zarr array; rows x dim, or captions x k x dim. See docs/scale.md.",
            ),
        ] = None,
        video_emb: Annotated[
            list[str] | None,
            typer.Option(
                "--video-emb", help="Video embeddings (as --text-emb; videos x frames x dim for frames)."
            ),
        ] = None,
        sim: Annotated[
            str,
            typer.Option(
                "--sim", callback=choice("--sim", EMBEDDING_SIMS), help="Embedding similarity: dot | cosine."
            ),
        ] = "cosine",
        pool: Annotated[
            str,
            typer.Option(
                "--pool",
                callback=choice("--pool", EMBEDDING_POOLS),
                help="Several embeddings per item: mean (of embeddings) | max (of scores).",
            ),
        ] = "mean",
        text_ids: Annotated[
            Path | None, typer.Option("--text-ids", help="Caption id of each --text-emb row, one per line.")
        ] = None,
        video_ids: Annotated[
            Path | None, typer.Option("--video-ids", help="Video id of each --video-emb row, one per line.")
        ] = None,
        block_size: Annotated[
            int | None,
            typer.Option(
                "--block-size",
                callback=int_at_least("--block-size", 1),
                help="Query rows per score block (memory: rows x docs scores).",
            ),
        ] = None,
        scheduler: Annotated[
            str | None,
            typer.Option("--scheduler", help="Run the blocks on Dask: a scheduler address, or 'local'."),
        ] = None,
    ) -> None:
        """Evaluate runs with every standard and FIRE-style measure, in both directions.

        Prints one table per direction in the layout of FIRE's Table 1 (original, augmented,
        delta). C@K is what TVR papers call R@K; Recall@K keeps its IR meaning.
        """
        from fireval import api
        from fireval.core.errors import FirevalError

        if (
            direction != "both"
            and not set(split_csv(direction)) <= {"t2v", "v2t"}
            or not split_csv(direction)
        ):
            raise FirevalError(f"--direction: unknown value {direction!r}; expected t2v, v2t or both")
        if names not in ("tvr", "ir"):
            raise FirevalError(f"--names: expected tvr or ir, got {names!r}")
        if not split_csv(unjudged):
            raise FirevalError(
                f"--unjudged: no mode given in {unjudged!r}; expected lower, upper, condensed, worst and/or best"
            )
        if measures is not None and not split_csv(measures):
            raise FirevalError(f"-m/--measures: no measure given in {measures!r}")
        if columns is not None and latex is None and markdown is None:
            raise FirevalError("--columns chooses the columns of --latex and --markdown; give one of them")
        if per_query is not None:
            api.check_table_path(per_query)  # fail before any work, so nothing is half-written
        if (text_emb is None) != (video_emb is None):
            raise FirevalError("--text-emb and --video-emb go together")
        if not runs and text_emb is None:
            raise FirevalError("nothing to evaluate: give score files, or --text-emb and --video-emb")
        emb_inputs = [*(text_emb or []), *(video_emb or []), text_ids, video_ids]
        guard_outputs(
            {"--per-query": per_query, "--json": json_out, "--latex": latex, "--markdown": markdown},
            runs=[*(runs or []), *(p for p in emb_inputs if p is not None)],
            collection=collection,
            split=split,
            labels=labels,
        )
        coll = api.load_collection(collection, split=split)
        note_collection(collection, coll)
        with default_collection_hint(collection):
            run_objs = api.load_runs(runs or [], coll, direction=run_direction)
        checks = input_checks(coll, run_objs, enabled=not no_checks, pairs=False)
        if text_emb is not None and video_emb is not None:  # blocks computed on demand (fireval.scale)
            from fireval.scale.embeddings import embedding_run

            emb = embedding_run(
                text_emb if len(text_emb) > 1 else text_emb[0],
                video_emb if len(video_emb) > 1 else video_emb[0],
                sim=sim,
                pool=pool,
                text_ids=text_ids,
                video_ids=video_ids,
                collection=coll,
            )
            run_objs = {**run_objs, emb.name: emb}
        sets = api.label_sets(
            coll,
            labels or [],
            include_instance=not no_instance,
            precedence=split_csv(precedence) if precedence is not None else None,
        )
        for w in api.label_warnings(sets, preset=preset, explicit=precedence is not None):
            typer.echo(f"warning: {w}", err=True)
        sets = sets_with_grade(sets, min_grade)
        options: dict = {
            "directions": ("t2v", "v2t") if direction == "both" else tuple(split_csv(direction)),
            "ties": ties,
            "unjudged": tuple(split_csv(unjudged)),
            "preset": preset,
            "per_query": per_query is not None,
            "min_grade": min_grade,
            "zero_relevant": zero_relevant,
        }
        if measures:  # R@K means C@K, as in TVR papers (Recall@K is IR recall)
            from fireval.metrics.measures import parse_measure

            options["measures"] = [str(parse_measure(m, "tvr")) for m in split_csv(measures)]
        if block_size is not None:
            if block_size < 1:
                raise FirevalError(
                    f"--block-size: expected a positive number of query rows, got {block_size}"
                )
            options["chunk_rows"] = block_size
        from contextlib import AbstractContextManager, nullcontext

        blas: AbstractContextManager = nullcontext()
        dask: AbstractContextManager = nullcontext()
        if text_emb is not None:  # fireval.scale only when it is used
            from fireval.scale.embeddings import single_thread_blas

            blas = single_thread_blas()
        if scheduler is not None:
            from fireval.scale.distributed import scheduler_context

            dask = scheduler_context(scheduler)
        with progress_bar(disable=quiet) as progress, dask, blas:
            result = api.evaluate_runs(run_objs, sets, collection=coll, progress=progress, **options)
        for name, run in run_objs.items():  # say so when a direction was silently left out
            got = {r["direction"] for r in result.records if r["run"] == name}  # no pandas needed
            for d in options["directions"]:
                if d not in got:
                    typer.echo(
                        f"note: {name}: no {d} results; {run.source or name} holds ranked lists for one "
                        "direction only (TREC run: see --run-direction; a score matrix gives both)",
                        err=True,
                    )
        for key, rep in result.tie_reports.items():  # e.g. the clip4clip preset's tie handling
            for w in dict.fromkeys(w for info in rep.values() for w in info.get("warnings", [])):
                typer.echo(f"warning: {key}: {w}", err=True)
        wray = preset is not None and preset.strip().lower() == "wray2021"  # the paper's Eq. 3
        if latex is not None or markdown is not None:
            from fireval.report.results import write_results_tables

            write_results_tables(
                result.records,
                latex=latex,
                markdown=markdown,
                columns=columns,
                unjudged=split_csv(unjudged)[0],
                names=names,
                checks=checks,
            )
        if json_out is not None:
            doc = {**result.to_dict(), "checks": checks.to_dict() if checks else None}
            if checks:  # each run's check status next to its values, and whether a value is comparable
                for rec in doc.get("results", []):
                    rname, ls = str(rec.get("run")), str(rec.get("labels"))
                    rec["checks"] = checks.status(rname)
                    rec["not_comparable"] = checks.not_comparable(rname, ls)
            if wray:
                from fireval.proxies.ndcg import eq3_records

                doc["wray_eq3"] = eq3_records(result.table)
            doc["units"] = {
                "value": "fraction in [0, 1] (x100 for the percentages printed); MdR and MnR: rank (1 = best)",
                "names": names,
            }
            if names == "tvr":
                from fireval.report.terminal import _name

                for rec in doc.get("results", []):
                    rec["measure"] = _name(str(rec.get("measure")), names)
            api.write_json(doc, json_out)
        if per_query is not None and result.per_query is not None:
            pq = result.per_query
            if names == "tvr" and "measure" in pq.columns:  # --names applies to every output
                from fireval.report.terminal import _name

                pq = pq.assign(
                    measure=pq["measure"].map({m: _name(str(m), names) for m in pq["measure"].unique()})
                )
            api.write_table(pq, per_query)
        if wray and quiet:  # printed with -q too: the figure the paper reports
            from fireval.proxies.ndcg import eq3_lines, eq3_table_lines

            for line in eq3_lines(result.table) + eq3_table_lines(result.table):
                typer.echo(line)
        if not quiet:
            from fireval.report.terminal import bounds_tables, comparison_tables, print_tables  # rich

            modes = split_csv(unjudged)
            marks = None
            if checks:  # each direction's values by that direction's own cut
                measure_names = list(dict.fromkeys(r["measure"] for r in result.records))
                table_dirs = list(dict.fromkeys(str(r["direction"]) for r in result.records))
                marks = {
                    n: {d: checks.marked_measures(n, measure_names, d) for d in table_dirs} for n in run_objs
                }
            import textwrap

            from rich.console import Console

            print_tables(
                comparison_tables(
                    result.records,
                    baseline=next(iter(sets)),
                    unjudged=modes[0],
                    marks=marks,
                    names=names,
                    not_comparable=checks.not_comparable if checks else None,
                    width=Console().width,
                )
            )
            if wray:  # the paper's Eq. 3, in the table's unit (+ Table 3's layout for several sets)
                from fireval.proxies.ndcg import eq3_lines, eq3_table_lines

                for line in eq3_lines(result.table) + eq3_table_lines(result.table):
                    typer.echo(line)
            if len(modes) > 1:
                print_tables(
                    bounds_tables(
                        result.table,
                        names=names,
                        width=Console().width,
                        not_comparable=checks.not_comparable if checks else None,
                    )
                )
            for key, rep in result.tie_reports.items():
                for d, info in rep.items():
                    n = info.get("queries_with_relevant_in_tie", 0) if isinstance(info, dict) else 0
                    if n:
                        strad = info.get("straddling", {}) or {}
                        where = ", ".join(f"@{k}: {v}" for k, v in strad.items()) or "none"
                        line = (
                            f"ties: {key} {d}: {n} queries have a relevant doc inside a tie group; "
                            f"groups straddling a cutoff {where}"
                        )
                        typer.echo(textwrap.fill(line, max(40, Console().width), subsequent_indent="  "))
