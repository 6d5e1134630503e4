"""``fireval serve``: run the web app (annotation, adjudication, explorer) with uvicorn."""

import os
from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.check import NoChecksOpt, input_checks
from fireval.cli.common import (
    LOG_LEVELS,
    PortOpt,
    VideoDirOpt,
    VideoExtOpt,
    VideoUrlTemplateOpt,
    check_forwarded_ips,
    choice,
    collection_help,
    int_at_least,
    number_in,
)

#: -c of serve: the run explorer's collection (no explorer without it)
SERVE_COLLECTION_HELP = collection_help("none (no run explorer); -c example: the bundled MSR-VTT 1k-A")

MIN_SECRET_CHARS = 32
#: --port of serve and explore (0: any free port)


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        db: Annotated[
            str, typer.Option("--db", help="Annotation store (SQLite path/URL or PostgreSQL URL).")
        ],
        host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
        port: PortOpt = 8000,
        video_dir: VideoDirOpt = None,
        video_url_template: VideoUrlTemplateOpt = None,
        video_ext: VideoExtOpt = ".mp4",
        dataset: Annotated[
            str | None, typer.Option(help="Dataset name used in exports (MSRVTT, MSVD).")
        ] = None,
        secret_key_file: Annotated[
            Path | None,
            typer.Option(help="File holding the session secret (else $FIREVAL_SECRET_KEY, else random)."),
        ] = None,
        secure_cookies: Annotated[bool, typer.Option(help="Mark cookies Secure (use behind HTTPS).")] = False,
        max_body_bytes: Annotated[
            int,
            typer.Option(callback=int_at_least("--max-body-bytes", 1), help="Largest accepted request body."),
        ] = 64 * 1024,
        log_level: Annotated[
            str,
            typer.Option(
                callback=choice("--log-level", LOG_LEVELS, casefold=True), help="uvicorn log level."
            ),
        ] = "warning",
        collection: Annotated[
            str | None,
            typer.Option("--collection", "-c", help=SERVE_COLLECTION_HELP),
        ] = None,
        run: Annotated[list[Path] | None, typer.Option("--run", help="Runs to explore (repeatable).")] = None,
        labels: Annotated[
            list[str] | None,
            typer.Option(
                "--labels", "-l", help="Labels for the explorer besides the store's own (always shown)."
            ),
        ] = None,
        explore_k: Annotated[
            int,
            typer.Option(
                callback=int_at_least("--explore-k", 1), help="Depth shown per run in the explorer."
            ),
        ] = 10,
        split: Annotated[
            Path | None, typer.Option(help="Split list for the explorer's collection (MSVD: test_list.txt).")
        ] = None,
        no_checks: NoChecksOpt = False,
        model_name: Annotated[
            list[str] | None,
            typer.Option(
                "--model-name",
                help="RUN=MODEL for the admin's FIRE JSON download, as in `judgments export`; repeatable.",
            ),
        ] = None,
        guidelines: Annotated[
            Path | None,
            typer.Option(help="Campaign guideline (Markdown, HTML escaped; ```example blocks become cards)."),
        ] = None,
        open_explore: Annotated[
            bool, typer.Option(help="Let annotators open the explorer (runs, scores: no longer blind).")
        ] = False,
        gold_rate: Annotated[
            float,
            typer.Option(
                callback=number_in("--gold-rate", 0.0, 1.0, hi_open=True),
                help="Share of gold items (judgments load --gold) in each queue; 0: off.",
            ),
        ] = 0.1,
        workers: Annotated[
            int | None,
            typer.Option(
                callback=int_at_least("--workers", 1),
                help="Server processes sharing the port and the store (default 1: on a 2-core machine "
                "a second process was slower on SQLite and no faster on PostgreSQL; see docs/annotation.md).",
            ),
        ] = None,
        no_prefetch: Annotated[
            bool,
            typer.Option("--no-prefetch", help="The annotation page does not preload the next item's video."),
        ] = False,
        forwarded_allow_ips: Annotated[
            str | None,
            typer.Option(
                "--forwarded-allow-ips",
                callback=check_forwarded_ips,
                help="Reverse proxies (comma-separated addresses or networks) whose X-Forwarded-For "
                "names the client; default none: the client is the connection's peer (login "
                "throttling keys on it). See docs/annotation.md.",
            ),
        ] = None,
    ) -> None:
        """Serve the web app: annotation, adjudication, and (with --collection/--run) the run explorer."""
        from fireval.core import InputError
        from fireval.web.app import WebConfig
        from fireval.web.workers import default_workers
        from fireval.web.workers import serve as run_server

        # --workers, --port, --max-body-bytes, --log-level, --gold-rate, --explore-k, --video-ext and
        # --video-url-template are checked when parsed (their callbacks)
        workers = default_workers() if workers is None else workers
        if run and collection is None:
            raise InputError("--run needs --collection (the collection the runs score)")
        if labels and collection is None:
            raise InputError("--labels needs --collection (the explorer's labels are over its collection)")
        if video_url_template is not None and video_dir is not None:
            raise InputError("give --video-dir or --video-url-template, not both")
        from fireval.judging.export import parse_model_names

        model_names = parse_model_names(model_name or [])
        _check_bindable(host, port)
        from fireval.judging.engine import check_pg_connections

        note = check_pg_connections(db, workers)  # PostgreSQL: the workers' connections must fit
        if note:
            typer.echo(note, err=True)
        secret, origin = None, "$FIREVAL_SECRET_KEY"
        if secret_key_file is not None:  # missing, empty, binary: one line naming the file
            from fireval.formats.textio import read_text

            secret, origin = read_text(secret_key_file).strip(), str(secret_key_file)
        secret = secret or os.environ.get("FIREVAL_SECRET_KEY")
        if secret and len(secret) < MIN_SECRET_CHARS:  # whoever guesses it can sign an admin's session
            raise InputError(
                f"the session secret must have at least {MIN_SECRET_CHARS} characters, got {len(secret)}; "
                "make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'",
                source=origin,
            )
        if video_dir is not None and not video_dir.is_dir():
            raise InputError("video directory not found", source=str(video_dir))
        # every input is read (and refused) before the server says it is serving
        from fireval.cli.judgments import require_existing_store
        from fireval.judging.store import Store
        from fireval.web import guidelines as guidelines_mod

        guidelines_mod.load(guidelines)
        require_existing_store(db)  # a typo must not serve a new, empty store
        st = Store(db, create=False)  # not a store, or a server that refuses: before "serving"
        try:  # can gold runs look like the pool's?
            warning = st.gold.fit_warning() if gold_rate > 0 else None
        finally:
            st.close()
        if warning:
            typer.echo(warning, err=True)
        cfg = WebConfig(
            db_url=db,
            dataset=dataset,
            video_dir=video_dir,
            video_url_template=video_url_template,
            video_ext=video_ext,
            secure_cookies=secure_cookies,
            max_body_bytes=max_body_bytes,
            guidelines=guidelines,
            open_explore=open_explore,
            gold_rate=gold_rate,
            prefetch=not no_prefetch,
            model_names=model_names,
            forwarded_allow_ips=forwarded_allow_ips,
        )
        if secret:
            cfg.secret_key = secret
        if collection is not None:
            from fireval import api

            coll = api.load_collection(collection, split=split)
            cfg.collection = coll
            cfg.runs = api.load_runs(run or [], coll)
            checks = input_checks(coll, cfg.runs, enabled=not no_checks)
            cfg.extra["check_warnings"] = checks.warnings() if checks else []
            cfg.judgments = list(api.label_sets(coll, labels or [], separate_named=False).values())[-1]
            cfg.extra["explore_k"] = explore_k
        if video_url_template is not None:  # blind video tokens cover only the app's own /videos route
            typer.echo(
                "warning: --video-url-template puts each video's dataset id in the annotators' video URLs, "
                "so annotators can see video ids; blind judging needs --video-dir",
                err=True,
            )
        typer.echo(
            f"fireval serving {_shown_url(cfg.db_url) if '://' in cfg.db_url else db} on http://{host}:{port} "
            f"({workers} worker process{'es' if workers > 1 else ''})",
            err=True,
        )
        run_server(cfg, host, port, workers, log_level.lower())


def _check_bindable(host: str, port: int) -> None:
    """Fail with one line (before loading any data) when ``host:port`` cannot be bound."""
    import socket

    from fireval.core import InputError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InputError(f"cannot resolve --host {host!r}: {exc}") from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _shown_url(url: str) -> str:
    """A store URL as it may be printed: its password replaced by ``***`` (the one masking rule,
    :func:`fireval.core.errors.mask_secrets`)."""
    from fireval.core.errors import mask_secrets

    return mask_secrets(url)
