"""``fireval labels auto``: automatic positives from caption matching (source ``auto:<matcher>``)."""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.common import MATCHERS, HelpGroup, choice, number_in
from fireval.cli.proxies import QueriesOpt, SplitOpt, VideoCaptionsOpt, _collections
from fireval.core.errors import FirevalError


def register(app: typer.Typer) -> None:
    labels = typer.Typer(
        cls=HelpGroup, help="Derived labels: automatic positives from caption matching.", no_args_is_help=True
    )

    @labels.command("auto")
    def auto(
        output: Annotated[Path, typer.Option("--output", "-o", help="Output graded-label .npz.")],
        matcher: Annotated[
            str,
            typer.Option(
                "--matcher",
                "-m",
                callback=choice("--matcher", MATCHERS, casefold=True),
                help="char | word | edit.",
            ),
        ] = "char",
        threshold: Annotated[
            float | None,
            typer.Option(
                callback=number_in("--threshold", 0.0, 1.0), help="Absolute score threshold in [0, 1]."
            ),
        ] = None,
        percentile: Annotated[
            float | None,
            typer.Option(
                callback=number_in("--percentile", 0.0, 100.0),
                help="Percentile of all pair scores (e.g. 99.9).",
            ),
        ] = None,
        collection: QueriesOpt = "example",
        split: SplitOpt = None,
        video_captions: VideoCaptionsOpt = None,
        exclude_self: Annotated[
            bool, typer.Option(help="Ignore video captions identical to the query.")
        ] = True,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    ) -> None:
        """Label (caption, video) pairs whose best caption match passes the threshold as relevant."""
        from fireval.formats.labels import write_graded_labels
        from fireval.proxies.matchers import auto_labels

        if threshold is None and percentile is None:
            raise FirevalError("give --threshold (absolute) or --percentile")
        from fireval.cli.common import guard_outputs

        guard_outputs(
            {"--output": output},
            collection=collection,
            split=split,
            others={"--video-captions": video_captions},
        )
        from fireval.cli.common import progress_bar

        # on stderr, only on a terminal and without -q: reading, matching (15-20 s on 1k-A), writing
        with progress_bar(f"auto labels ({matcher.lower()})", disable=quiet) as progress:
            coll, vc = _collections(collection, split, video_captions)
            if progress is not None:
                progress(1, 3)
            j = auto_labels(
                coll,
                matcher.lower(),
                vc,
                threshold=threshold,
                percentile=percentile,
                exclude_self=exclude_self,
            )
            if progress is not None:
                progress(2, 3)
            write_graded_labels(output, j, coll)
        inst = coll.caption_video
        on_instance = int((j.cols == inst[j.rows]).sum())
        typer.echo(
            f"auto:{matcher}: {len(j)} positive pairs ({on_instance} on the instance video); wrote {output}"
        )

    app.add_typer(labels, name="labels")
