"""``fireval collection stats``: videos, captions, captions per video, caption lengths and
repeated captions of a collection (Wray et al. 2021 Table 1, FIRE §2.1). Formatting only: the
numbers are :func:`fireval.analysis.collection_stats.collection_stats`."""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.common import COLLECTION_HELP, HelpGroup


def register(app: typer.Typer) -> None:
    group = typer.Typer(cls=HelpGroup, help="Describe a collection.", no_args_is_help=True)

    @group.command("stats")
    def stats(
        collection: Annotated[str, typer.Option("--collection", "-c", help=COLLECTION_HELP)] = "example",
        split: Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")] = None,
        json_out: Annotated[Path | None, typer.Option("--json", help="Write the statistics as JSON.")] = None,
    ) -> None:
        """Videos, captions, captions per video, caption length (words, characters), repeated captions."""
        from fireval import api
        from fireval.analysis.collection_stats import collection_stats
        from fireval.cli.common import guard_outputs

        guard_outputs({"--json": json_out}, collection=collection, split=split)
        st = collection_stats(api.load_collection(collection, split=split))
        if json_out is not None:
            api.write_json(st, json_out)

        def row(name: str, d: dict) -> str:
            return f"  {name:<20} min {d['min']:g}  mean {d['mean']:.2f}  median {d['median']:g}  max {d['max']:g}"

        typer.echo(f"{st['collection']}: {st['videos']} videos, {st['captions']} captions")
        typer.echo(row("captions per video", st["captions_per_video"]))
        if st["videos_without_captions"]:
            typer.echo(f"  videos without captions: {st['videos_without_captions']}")
        typer.echo(row("words per caption", st["caption_words"]))
        typer.echo(row("characters/caption", st["caption_characters"]))
        typer.echo(f"  vocabulary: {st['vocabulary']} distinct words (normalised text)")
        for kind, r in st["repeated"].items():
            typer.echo(
                f"  repeated ({kind}): {r['repeated_captions']} captions share {r['repeated_texts']} texts "
                f"({r['distinct']} distinct); {r['across_videos']} texts on 2+ videos "
                f"({r['captions_across_videos']} captions)"
            )

    app.add_typer(group, name="collection")
