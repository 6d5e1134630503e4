"""``fireval explore``: browse runs query by query in the browser, with no store and no login."""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.check import NoChecksOpt, input_checks
from fireval.cli.common import (
    COLLECTION_HELP,
    PortOpt,
    VideoDirOpt,
    VideoExtOpt,
    VideoUrlTemplateOpt,
    default_collection_hint,
    int_at_least,
    note_collection,
)


def register(app: typer.Typer) -> None:
    @app.command()
    def explore(
        runs: Annotated[
            list[Path],
            typer.Argument(
                help="Score matrices (.npy/.npz, caption x video) or TREC run files.", show_default=False
            ),
        ],
        collection: Annotated[str | None, typer.Option("--collection", "-c", help=COLLECTION_HELP)] = None,
        labels: Annotated[
            list[str] | None,
            typer.Option(
                "--labels",
                "-l",
                help="Labels besides the instance labels: FIRE JSON, TREC qrels, .npz, or a store (repeatable).",
            ),
        ] = None,
        split: Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")] = None,
        host: Annotated[
            str, typer.Option(help="Loopback address to bind (no login: this machine only).")
        ] = "127.0.0.1",
        port: PortOpt = 8000,
        video_dir: VideoDirOpt = None,
        video_url_template: VideoUrlTemplateOpt = None,
        video_ext: VideoExtOpt = ".mp4",
        explore_k: Annotated[
            int,
            typer.Option(
                "--explore-k", "-k", callback=int_at_least("--explore-k", 1), help="Depth shown per run."
            ),
        ] = 10,
        no_checks: NoChecksOpt = False,
    ) -> None:
        """Browse runs query by query (top K side by side, labels, unjudged pairs) at
        http://127.0.0.1:PORT/explore: no store, no login, this machine only."""
        from fireval.cli.serve import _check_bindable
        from fireval.core import InputError
        from fireval.web.local import check_local_host

        host = check_local_host(host)
        # --port, --explore-k, --video-url-template and --video-ext are checked when parsed
        if video_url_template is not None and video_dir is not None:
            raise InputError("give --video-dir or --video-url-template, not both")
        if video_dir is not None and not video_dir.is_dir():
            raise InputError("video directory not found", source=str(video_dir))
        _check_bindable(host, port)
        from fireval import api
        from fireval.web.app import WebConfig
        from fireval.web.local import create_local_app

        coll = api.load_collection(collection, split=split)
        note_collection(collection, coll)
        with default_collection_hint(collection):
            loaded = api.load_runs(runs, coll)
        checks = input_checks(coll, loaded, enabled=not no_checks)
        cfg = WebConfig(
            db_url="",
            video_dir=video_dir,
            video_url_template=video_url_template,
            video_ext=video_ext,
            collection=coll,
            runs=loaded,
            judgments=list(api.label_sets(coll, labels or []).values())[-1],
            explore_store_labels=False,
        )
        cfg.extra["check_warnings"] = checks.warnings() if checks else []
        cfg.extra["explore_k"] = explore_k
        app = create_local_app(cfg)
        import uvicorn

        shown = f"[{host}]" if ":" in host else host
        typer.echo(
            f"fireval explore: http://{shown}:{port}/explore (this machine only; Ctrl-C stops)", err=True
        )
        uvicorn.run(app, host=host, port=port, log_level="warning")
