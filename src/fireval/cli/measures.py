"""``fireval measures``: list the measures ``-m`` accepts, with their definitions and sources.

Formatting only: the values are :data:`fireval.metrics.definitions.MEASURE_INFO` and the lookup
is :func:`fireval.metrics.measures.find_measure_info`.
"""

from typing import Annotated, Any

import typer

_LEGEND = (
    "K: a positive integer; R: the query's number of relevant docs; [..]: optional. "
    "Definitions: docs/metrics.md."
)


def _wrap(text: str, indent: str) -> str:
    """Wrap at the terminal width (at least 80 columns), continuation lines under ``indent``."""
    import shutil
    import textwrap

    width = max(80, shutil.get_terminal_size((100, 24)).columns)
    return textwrap.fill(text, width=width, subsequent_indent=indent, break_on_hyphens=False)


def _better(higher: bool) -> str:
    return "higher" if higher else "lower"


def _entry_lines(info: Any, measure: Any) -> list[str]:
    """One measure in full: ``fireval measures NAME``."""
    monotone = measure.monotone_in_relevance if measure is not None else info.monotone_in_relevance
    title = str(measure) if measure is not None else info.form
    lines = [f"{title}: {info.description}"]
    if measure is not None and measure.note:
        lines.append(f"  note: {measure.note}")
    rows = [
        ("name", info.name),
        ("forms", ", ".join(info.forms)),
        ("aliases", ", ".join(info.aliases) or "-"),
        ("better", _better(info.higher_is_better)),
        ("aggregate", info.aggregate),
        (
            "bounded by unjudged=lower/upper",
            "yes" if monotone else "no (a new relevant doc can lower it; marked ‡)",
        ),
        ("trec_eval", info.trec_eval or "-"),
        ("source", info.citation),
        ("docs", info.docs),
    ]
    lines.extend(_wrap(f"  {key}: {value}", "    ") for key, value in rows)
    return lines


def register(app: typer.Typer) -> None:
    @app.command()
    def measures(
        name: Annotated[
            str | None,
            typer.Argument(
                help="One measure to show, e.g. AP_hits@10, mrr, C (aliases resolve).", show_default=False
            ),
        ] = None,
        json_out: Annotated[
            bool, typer.Option("--json", help="Print the entries as JSON on stdout.")
        ] = False,
    ) -> None:
        """List every measure -m accepts: name, cutoff form, which way is better, definition and source.

        With NAME, show that one measure in full. Definitions: docs/metrics.md.
        """
        import json

        from fireval.metrics.definitions import MEASURE_INFO
        from fireval.metrics.measures import find_measure_info

        if name is not None:
            info, measure = find_measure_info(name)
            if json_out:
                doc = measure.describe() if measure is not None else {"measure": None, **info.to_dict()}
                typer.echo(json.dumps(doc, ensure_ascii=False, indent=2))
            else:
                typer.echo("\n".join(_entry_lines(info, measure)))
            return
        if json_out:
            typer.echo(json.dumps([i.to_dict() for i in MEASURE_INFO], ensure_ascii=False, indent=2))
            return
        width = max(len(i.form) for i in MEASURE_INFO) + 2
        indent = " " * (width + 8)
        typer.echo(f"{'measure':<{width}}{'better':<8}definition")
        for i in MEASURE_INFO:
            head = f"{i.form:<{width}}{_better(i.higher_is_better):<8}"
            typer.echo(_wrap(head + i.description, indent))
            typer.echo(_wrap(f"{indent}source: {i.citation}", indent))
        typer.echo(_wrap(_LEGEND, ""))
