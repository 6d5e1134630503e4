"""``fireval evaluate``: score runs against the original and augmented labels."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.common import check_output_path, progress_bar, split_csv


def register(app: typer.Typer) -> None:
    @app.command()
    def evaluate(
        runs: Annotated[
            list[Path], typer.Argument(help="Score matrices (.npy/.npz, caption x video) or TREC run files.")
        ],
        collection: Annotated[
            str,
            typer.Option(
                "--collection",
                "-c",
                help="JSFusion 1k-A CSV, MSR-VTT official JSON, MSVD JSON, or 'example'.",
            ),
        ] = "example",
        split: Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")] = None,
        labels: Annotated[
            list[str] | None,
            typer.Option(
                "--labels",
                "-l",
                help="Extra labels: FIRE JSON, TREC qrels, .npz, or a store URL (repeatable).",
            ),
        ] = None,
        no_instance: Annotated[
            bool, typer.Option("--no-instance", help="Do not include the instance labels.")
        ] = False,
        precedence: Annotated[
            str, typer.Option(help="Merge policy: source kinds, first wins.")
        ] = "human,instance,auto,proxy",
        measures: Annotated[
            str | None, typer.Option("--measures", "-m", help="Comma-separated, e.g. C@1,C@5,nDCG@10.")
        ] = None,
        direction: Annotated[str, typer.Option("--direction", "-d", help="t2v, v2t or both.")] = "both",
        ties: Annotated[
            str, typer.Option(help="tie-aware | optimistic | pessimistic | docid.")
        ] = "tie-aware",
        unjudged: Annotated[str, typer.Option(help="Comma-separated: lower, upper, condensed.")] = "lower",
        preset: Annotated[str | None, typer.Option(help="fire2023 | clip4clip | wray2021.")] = None,
        run_direction: Annotated[str, typer.Option(help="Orientation of TREC runs / v2t matrices.")] = "t2v",
        json_out: Annotated[Path | None, typer.Option("--json", help="Write all results as JSON.")] = None,
        per_query: Annotated[
            Path | None, typer.Option(help="Write per-query values (.tsv/.csv/.parquet/.jsonl).")
        ] = None,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No tables, no progress.")] = False,
    ) -> None:
        """Evaluate runs with every standard and FIRE-style measure, in both directions.

        Prints one table per direction in the layout of FIRE's Table 1 (original, augmented,
        delta). C@K is what TVR papers call R@K; Recall@K keeps its IR meaning.
        """
        from fireval import api
        from fireval.core.errors import FirevalError
        from fireval.report.terminal import bounds_table, comparison_tables, print_tables

        if (
            direction != "both"
            and not set(split_csv(direction)) <= {"t2v", "v2t"}
            or not split_csv(direction)
        ):
            raise FirevalError(f"--direction: unknown value {direction!r}; expected t2v, v2t or both")
        if per_query is not None:
            api.check_table_path(per_query)  # fail before any work, so nothing is half-written
        check_output_path(per_query)
        check_output_path(json_out)
        coll = api.load_collection(collection, split=split)
        run_objs = api.load_runs(runs, coll, direction=run_direction)
        sets = api.label_sets(
            coll, labels or [], include_instance=not no_instance, precedence=split_csv(precedence)
        )
        options: dict = {
            "directions": ("t2v", "v2t") if direction == "both" else tuple(split_csv(direction)),
            "ties": ties,
            "unjudged": tuple(split_csv(unjudged)),
            "preset": preset,
            "per_query": per_query is not None,
        }
        if measures:
            options["measures"] = split_csv(measures)
        with progress_bar(disable=quiet) as progress:
            result = api.evaluate_runs(run_objs, sets, collection=coll, progress=progress, **options)
        for name, run in run_objs.items():  # say so when a direction was silently left out
            got = set(result.table.loc[result.table["run"] == name, "direction"])
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
        if json_out is not None:
            api.write_json(result.to_dict(), json_out)
        if per_query is not None and result.per_query is not None:
            api.write_table(result.per_query, per_query)
        if not quiet:
            modes = split_csv(unjudged)
            print_tables(comparison_tables(result.table, baseline=next(iter(sets)), unjudged=modes[0]))
            if len(modes) > 1:
                print_tables([bounds_table(result.table)])
            for key, rep in result.tie_reports.items():
                for d, info in rep.items():
                    n = info.get("queries_with_relevant_in_tie", 0) if isinstance(info, dict) else 0
                    if n:
                        strad = info.get("straddling", {}) or {}
                        where = ", ".join(f"@{k}: {v}" for k, v in strad.items()) or "none"
                        typer.echo(
                            f"ties: {key} {d}: {n} queries have a relevant doc inside a tie group; "
                            f"groups straddling a cutoff {where}"
                        )
