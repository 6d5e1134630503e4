"""``fireval demo``: the main job on the bundled example (no network, no external data)."""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.common import check_output_path, progress_bar


def register(app: typer.Typer) -> None:
    @app.command()
    def version() -> None:
        """Print the fireval version."""
        from fireval import __version__

        typer.echo(__version__)

    @app.command()
    def demo(
        out: Annotated[
            Path, typer.Option("--out", "-o", help="Directory for results.json, per_query.tsv, scores.")
        ] = Path("fireval-demo"),
        quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    ) -> None:
        """Evaluate a TF-IDF caption-oracle baseline on the bundled MSR-VTT 1k-A example.

        Shows the original (instance) labels' scores, how much of each top 10 is unjudged,
        and the lower / condensed / upper bounds that unjudged pairs allow.
        """
        from rich.console import Console

        from fireval.demo import run_demo
        from fireval.report.terminal import bounds_tables, comparison_tables, print_tables

        check_output_path(out, directory=True)
        console = Console()
        with progress_bar("demo", disable=quiet) as progress:
            res = run_demo(out, progress=progress)
        if quiet:
            return
        from fireval.core.units import percent  # printed in %, never "-0.0"

        t = res.evaluation.table
        console.print(
            f"[bold]fireval demo[/]: {res.collection.name}: {res.collection.n_captions} queries x "
            f"{res.collection.n_videos} videos; run = TF-IDF caption oracle (other captions of each video)"
        )
        print_tables(comparison_tables(t, unjudged="lower", width=console.width), console)
        judged = t[(t["measure"] == "judged@10") & (t["unjudged"] == "lower")]
        why = {
            "t2v": "the instance labels judge one video per caption",
            "v2t": "the instance labels judge only the captions written for each video",
        }
        for _, row in judged.iterrows():
            console.print(
                f"{row['direction']}: {percent(1 - row['value'])}% of the top 10 is unjudged "
                f"({why.get(str(row['direction']), 'the instance labels judge few pairs')})"
            )
        print_tables(
            bounds_tables(t, measures=("C@1", "C@5", "C@10", "nDCG@10"), width=console.width), console
        )
        prox = res.proxy.table
        prox = prox[(prox["unjudged"] == "lower") & prox["direction"].isin(["t2v", "v2t"])]
        parts = ", ".join(f"{r['direction']} {percent(r['value'])}" for _, r in prox.iterrows())
        mean = percent(prox["value"].mean())
        console.print(f"Proxy view (Wray et al. 2021, BoW relevance, nDCG, in %): {parts}; mean {mean}")
        console.print("Wrote " + ", ".join(str(p) for p in res.outputs.values()))
