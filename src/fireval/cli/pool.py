"""``fireval pool``: depth-k pooling of several runs into a judging pool file."""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.check import NoChecksOpt, input_checks
from fireval.cli.common import (
    COLLECTION_HELP,
    DIRECTIONS,
    RunDirectionOpt,
    choice,
    int_at_least,
    number_in,
    seed_option,
)


def register(app: typer.Typer) -> None:
    @app.command()
    def pool(
        runs: Annotated[
            list[str],
            typer.Argument(help="Runs as NAME=PATH or PATH (.npy/.npz score matrices or TREC runs)."),
        ],
        output: Annotated[Path, typer.Option("--output", "-o", help="Pool file to write (JSONL).")],
        collection: Annotated[str | None, typer.Option("--collection", "-c", help=COLLECTION_HELP)] = None,
        split: Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")] = None,
        depth: Annotated[
            int,
            typer.Option(
                "--depth", "-k", callback=int_at_least("--depth", 1), help="Pool depth per run and query."
            ),
        ] = 10,
        direction: Annotated[
            str,
            typer.Option(
                "--direction",
                "-d",
                callback=choice("--direction", DIRECTIONS, casefold=True),
                help="t2v or v2t.",
            ),
        ] = "t2v",
        labels: Annotated[
            list[str] | None,
            typer.Option(
                "--labels", "-l", help="Already judged labels to skip (FIRE JSON, qrels, store URL)."
            ),
        ] = None,
        include_instance: Annotated[
            bool, typer.Option(help="Also pool each caption's own video (skipped by default).")
        ] = False,
        double_fraction: Annotated[
            float,
            typer.Option(
                callback=number_in("--double-fraction", 0.0, 1.0),
                help="Share of items for a second annotator.",
            ),
        ] = 0.1,
        seed: Annotated[
            int,
            typer.Option(callback=seed_option(), help="Seed of the double-annotation and budget samples."),
        ] = 0,
        budget: Annotated[
            int | None,
            typer.Option(
                callback=int_at_least("--budget", 1, " (queries)"),
                help="Sample this many queries stratified by caption length.",
            ),
        ] = None,
        max_queries: Annotated[
            int | None,
            typer.Option(callback=int_at_least("--max-queries", 1), help="Only the first N queries."),
        ] = None,
        dataset: Annotated[str | None, typer.Option(help="Dataset name stored with the items.")] = None,
        run_direction: RunDirectionOpt = "t2v",
        no_checks: NoChecksOpt = False,
        allow_misaligned: Annotated[
            bool,
            typer.Option(
                "--allow-misaligned",
                help="Pool runs that fail the alignment check anyway (their items pair captions with "
                "the wrong videos); without it such runs are refused (exit 2).",
            ),
        ] = False,
    ) -> None:
        """Pool the top-k of every run, skip judged pairs, and mark a sample for double annotation.

        Runs that fail the alignment check are refused (exit 2) unless --allow-misaligned is given."""
        from fireval import api
        from fireval.cli.common import default_collection_hint, guard_outputs, note_collection
        from fireval.core import Direction, InputError
        from fireval.judging.pool import build_pool, write_pool

        # --seed, --depth, --double-fraction, --budget, --max-queries and the directions are
        # checked when parsed (their callbacks)
        guard_outputs({"--output": output}, runs=runs, collection=collection, split=split, labels=labels)

        coll = api.load_collection(collection, split=split)
        note_collection(collection, coll)
        run_objs = []
        for spec in runs:
            name, path = api.split_run_spec(spec)  # PATH or NAME=PATH, as every verb reads runs
            p = Path(path)
            with default_collection_hint(collection):
                run_objs.append(api.load_run(p, coll, name=name or p.stem, direction=run_direction))
        checks = input_checks(coll, {r.name: r for r in run_objs}, enabled=not no_checks)
        off = sorted(checks.unaligned_runs()) if checks is not None else []
        if off and not allow_misaligned:  # judging their items would pay annotators for wrong pairs
            raise InputError(
                f"{', '.join(off)} {'fails' if len(off) == 1 else 'fail'} the alignment check (rows or columns "
                "probably in another order than the collection), so their pooled items would pair captions "
                "with the wrong videos; reorder the runs, or pass --allow-misaligned to pool them anyway"
            )
        judged = [api.load_labels(s, coll) for s in (labels or [])]
        if not include_instance:
            judged.append(coll.instance_judgments())
        queries = None
        if max_queries is not None:
            n_q = coll.n_captions if Direction.parse(direction) is Direction.T2V else coll.n_videos
            queries = list(range(min(max_queries, n_q)))
        from fireval.cli.common import progress_bar

        with progress_bar("pooling"):  # elapsed time on a terminal
            res = build_pool(
                coll,
                run_objs,
                depth=depth,
                direction=direction,
                judged=judged,
                double_fraction=double_fraction,
                seed=seed,
                budget=budget,
                queries=queries,
                dataset=dataset,
            )
        write_pool(output, res)
        s = res.summary()
        typer.echo(
            f"pool: {s['items']} items ({s['double']} for double annotation) from {s['queries']} "
            f"{s['direction']} queries at depth {s['depth']}; {s['skipped_judged']} judged pairs skipped; "
            f"{s['tie_extra']} extra pairs from ties at the cutoff"
        )
        typer.echo(f"{'run':<20} {'proposed':>9} {'contributed':>12} {'unique':>8} {'overlap':>8}")
        for r in s["per_run"]:
            typer.echo(
                f"{r['run']:<20} {r['proposed']:>9} {r['contributed']:>12} {r['unique']:>8} {r['overlap']:>8}"
            )
        names = [r["run"] for r in s["per_run"]]
        if len(names) > 1:  # pairs that both runs contributed (also in the pool file's header)
            width = max(8, *(len(n) for n in names))
            typer.echo("shared pairs " + " ".join(f"{n:>{width}}" for n in names))
            for a in names:
                row = s["pairwise_overlap"].get(a, {})
                typer.echo(f"{a:<12} " + " ".join(f"{row.get(b, 0):>{width}}" for b in names))
        if checks is not None:  # say which runs and pairs make items that mean nothing
            for name, res in checks.runs.items():
                if "alignment" in res and res["alignment"].failed:
                    typer.echo(
                        f"! {name}: its items pair captions with the wrong videos: {res['alignment'].message}"
                    )
            for (a, b), why in checks.misaligned_pairs().items():
                typer.echo(f"! {a} vs {b}: shared pairs and overlap are meaningless: {why}")
        typer.echo(f"wrote {output}")
