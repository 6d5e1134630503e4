"""``fireval judgments``: create and fill the annotation store, show status, export FIRE JSON."""

import json
from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.common import ROLES, HelpGroup, choice, int_at_least, number_in, printable, seed_option

DB_HELP = "Store: SQLite file path or URL (sqlite:///f.db, postgresql+psycopg2://...)."


def _store_file(db: str) -> Path | None:
    """The file of an SQLite store given as a path or ``sqlite:///`` URL (None: a server database
    or an in-memory one)."""
    from fireval.judging.engine import sqlite_path

    path = db if "://" not in db else sqlite_path(db)
    return None if path in (None, "", ":memory:") else Path(path)


def require_existing_store(db: str) -> None:
    """Refuse an SQLite store file that does not exist (a typo would silently create an empty one).

    Verbs that only read or tidy a store (status, release, export) call this; ``init`` creates.
    """
    from fireval.core.errors import InputError

    path = _store_file(db)
    if path is not None and not path.exists():
        raise InputError(
            f"no annotation store here; create it with `fireval judgments init --db {db}`", source=db
        )
    refuse_empty_store(db)


def refuse_empty_store(db: str) -> None:
    """Refuse a 0-byte file as a store for every verb but ``init``: SQLite would take it for an
    empty database and the store would create its schema in it. (A file that is not an SQLite
    database is refused by the store itself, reading it only: ``judging.engine``.)"""
    from fireval.core.errors import InputError

    path = _store_file(db)
    if path is not None and path.is_file() and path.stat().st_size == 0:
        raise InputError(
            f"not an annotation store (empty file); run fireval judgments init --db {db}", source=str(path)
        )


def register(app: typer.Typer) -> None:
    sub = typer.Typer(
        cls=HelpGroup,
        help="Annotation store: init, load pools, annotators, status, export.",
        no_args_is_help=True,
    )
    app.add_typer(sub, name="judgments")

    @sub.command()
    def init(db: Annotated[str, typer.Option("--db", help=DB_HELP)]) -> None:
        """Create the store or upgrade its schema to the newest revision (the only verb that
        creates one: every other verb refuses a missing store)."""
        from fireval.core.errors import mask_secrets
        from fireval.judging.store import Store

        st = Store(db, create=True)
        typer.echo(f"store {mask_secrets(st.url)} at schema revision {st.revision}")
        st.close()

    @sub.command()
    def load(
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
        pool: Annotated[Path | None, typer.Argument(help="Pool file from `fireval pool`.")] = None,
        dataset: Annotated[str | None, typer.Option(help="Override the pool's dataset name.")] = None,
        gold: Annotated[
            Path | None,
            typer.Option(help="Gold pairs (JSON lines: caption, video_id, answer) mixed into the queues."),
        ] = None,
        replace: Annotated[
            bool,
            typer.Option(
                "--replace",
                help="Let --gold change the answer of a gold pair already in the store (each change is "
                "recorded in the store's audit, gold_item_events); without it a changed answer is refused.",
            ),
        ] = False,
    ) -> None:
        """Load a pool's items (and/or gold pairs) into the store (items already present are kept)."""
        from fireval.core.errors import InputError
        from fireval.judging.gold import read_gold
        from fireval.judging.pool import read_pool
        from fireval.judging.store import Store

        if pool is None and gold is None:
            raise InputError("nothing to load: give a pool file and/or --gold FILE")
        if replace and gold is None:
            raise InputError(
                "--replace applies to --gold: give the gold file whose answers replace the store's"
            )
        # bad files are refused before the store is touched
        if pool is not None and pool.is_file() and pool.stat().st_size == 0:
            # `fireval plan` writes an empty file when nothing is left to judge: the loop's last round
            typer.echo(f"{pool} is empty (a plan with nothing left to judge): no items loaded")
            pool = None
            if gold is None:
                Store(db, create=False).close()  # still refuse a missing store
                return
        items = read_pool(pool) if pool is not None else None
        pairs = read_gold(gold) if gold is not None else None
        st = Store(db, create=False)
        try:
            if items is not None:
                added, present = st.load_pool(items, dataset)
                typer.echo(f"loaded {added} items ({present} already present)")
            if pairs is not None:
                added, present = st.gold.load(pairs, replace=replace, source=str(gold))
                changed = (
                    f"; {st.gold.last_replaced} answers replaced (audited)" if st.gold.last_replaced else ""
                )
                typer.echo(f"loaded {added} gold pairs ({present} already present{changed})")
            if warning := st.gold.fit_warning():  # can gold runs look like the pool's?
                typer.echo(warning, err=True)
        finally:
            st.close()

    @sub.command("add-annotator")
    def add_annotator(
        name: Annotated[str, typer.Argument()],
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
        role: Annotated[
            str, typer.Option(callback=choice("--role", ROLES), help="annotator or admin.")
        ] = "annotator",
    ) -> None:
        """Create an annotator and print their login token (shown once; only its hash is stored)."""
        from fireval.judging.store import Store

        st = Store(db, create=False)
        try:
            ann, token = st.add_annotator(name, role)
        finally:
            st.close()
        typer.echo(f"{printable(ann.name)}\t{ann.role}\t{token}")

    @sub.command()
    def status(db: Annotated[str, typer.Option("--db", help=DB_HELP)]) -> None:
        """Queue status, throughput and agreement as JSON."""
        from fireval.judging.store import Store

        require_existing_store(db)
        st = Store(db, create=False)
        try:
            units = "counts: integers; shares, accuracy and agreement: fractions in [0, 1]; α in [-1, 1]"
            typer.echo(json.dumps({"units": units, **st.status()}, indent=2))
        finally:
            st.close()

    @sub.command()
    def release(
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
        older_than_minutes: Annotated[
            float, typer.Option(help="Release open assignments older than this.")
        ] = 60,
    ) -> None:
        """Put items that annotators claimed but never answered back into the queue."""
        import math
        from datetime import timedelta

        from fireval.core.errors import InputError
        from fireval.judging.store import Store

        if not math.isfinite(older_than_minutes) or older_than_minutes < 0:
            raise InputError(
                f"--older-than-minutes must be a number >= 0, got {older_than_minutes} "
                "(a negative age would release assignments annotators are working on)"
            )
        try:
            age = timedelta(minutes=older_than_minutes)
        except OverflowError:
            raise InputError(
                f"--older-than-minutes is too large, got {older_than_minutes:g} (at most "
                f"{timedelta.max.total_seconds() / 60:.0f} minutes)"
            ) from None
        require_existing_store(db)
        st = Store(db, create=False)
        try:
            n = st.release_stale(age)
        finally:
            st.close()
        typer.echo(f"released {n} stale assignments")

    @sub.command("annotators")
    def annotators(db: Annotated[str, typer.Option("--db", help=DB_HELP)]) -> None:
        """List annotators: name, role, enabled, labels given, live sessions (tab-separated)."""
        from fireval.judging.store import Store

        require_existing_store(db)
        st = Store(db, create=False)
        try:
            rows = st.annotator_info()
        finally:
            st.close()
        typer.echo("name\trole\tenabled\tlabels\tsessions")
        for a in rows:
            typer.echo(
                f"{printable(a.name)}\t{a.role}\t{'yes' if a.enabled else 'no'}\t{a.labels}\t{a.sessions}"
            )

    @sub.command("rotate-token")
    def rotate_token(
        name: Annotated[str, typer.Argument(help="Annotator name.")],
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
    ) -> None:
        """Give an annotator a new login token (printed once) and end all their sessions."""
        from fireval.judging.store import Store

        require_existing_store(db)
        st = Store(db, create=False)
        try:
            ann, token = st.rotate_token(name)
        finally:
            st.close()
        typer.echo(f"{printable(ann.name)}\t{ann.role}\t{token}")

    def _set_enabled(db: str, name: str, enabled: bool) -> None:
        from fireval.judging.store import Store

        require_existing_store(db)
        st = Store(db, create=False)
        try:
            ann = st.set_enabled(name, enabled)
        finally:
            st.close()
        typer.echo(f"{printable(ann.name)} {'enabled' if enabled else 'disabled; their sessions ended'}")

    @sub.command()
    def disable(
        name: Annotated[str, typer.Argument(help="Annotator name.")],
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
    ) -> None:
        """Disable an annotator: they cannot log in and their sessions end at once."""
        _set_enabled(db, name, False)

    @sub.command()
    def enable(
        name: Annotated[str, typer.Argument(help="Annotator name.")],
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
    ) -> None:
        """Enable a disabled annotator again (old sessions stay ended; they log in anew)."""
        _set_enabled(db, name, True)

    @sub.command()
    def export(
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
        output: Annotated[Path, typer.Option("--output", "-o", help="FIRE JSON file to write.")],
        dataset: Annotated[str | None, typer.Option(help="Dataset field, e.g. MSRVTT or MSVD.")] = None,
        model_name: Annotated[
            list[str] | None,
            typer.Option(
                "--model-name",
                help="RUN=MODEL: write run RUN as the schema's model (CLIP4CLIP, SSB, CE); repeatable.",
            ),
        ] = None,
        extended: Annotated[
            bool,
            typer.Option(
                "--extended",
                help="Allow other run names and datasets, and put each item's provenance in its record "
                "(fireval's extension: NOT valid for the authors' tools).",
            ),
        ] = False,
        pool: Annotated[
            list[Path] | None,
            typer.Option(
                "--pool", help="Pool file(s) the store was loaded from: their md5 is source_data_md5."
            ),
        ] = None,
        creator: Annotated[str, typer.Option(help="creator field.")] = "fireval",
        email: Annotated[str, typer.Option(help="email field (contact).")] = "",
        website: Annotated[str, typer.Option(help="website field.")] = "",
        license: Annotated[
            str, typer.Option("--license", help="license field of the labels.")
        ] = "unspecified",
        provenance: Annotated[
            Path | None,
            typer.Option(
                "--provenance",
                help="Provenance sidecar (flags, skips, adjudications, gold, audit trail) "
                "[default: OUTPUT's stem + .provenance.json].",
            ),
        ] = None,
        no_provenance: Annotated[
            bool, typer.Option("--no-provenance", help="Write no provenance sidecar.")
        ] = False,
    ) -> None:
        """Write the majority labels and disagreements as FIRE JSON (authors' data model).

        Strict by default: a file that would not validate (e.g. a run name outside CLIP4CLIP,
        SSB, CE) is not written and the error names the field; see docs/judging.md.
        """
        from fireval.cli.common import guard_outputs
        from fireval.core.errors import InputError
        from fireval.judging.export import default_provenance_path, export_fire_json, parse_model_names

        if no_provenance and provenance is not None:
            raise InputError("--provenance and --no-provenance exclude each other")
        sidecar = None if no_provenance else provenance or default_provenance_path(output)
        guard_outputs(
            {"--output": output, "--provenance": sidecar},
            store=db,
            others={f"pool {i}": p for i, p in enumerate(pool or [])},
        )
        require_existing_store(db)
        counts = export_fire_json(
            db,
            output,
            dataset,
            model_names=parse_model_names(model_name or []),
            extended=extended,
            pool_files=pool or [],
            meta={"creator": creator, "email": email, "website": website, "license": license},
            provenance=sidecar,
        )
        typer.echo(
            f"wrote {counts['annotations']} annotations and {counts['disagreements']} disagreements to {output}"
            + (f" (provenance: {sidecar})" if sidecar is not None else "")
        )

    @sub.command("verify-export")
    def verify_export(
        fire_json: Annotated[Path, typer.Argument(help="FIRE JSON file written by `judgments export`.")],
        provenance: Annotated[
            Path | None,
            typer.Option(
                "--provenance", help="Its provenance sidecar [default: FIRE_JSON's stem + .provenance.json]."
            ),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    ) -> None:
        """Check that a FIRE JSON file and its provenance sidecar are one export's pair.

        The sidecar's format and version, the FIRE file's sha256, data model and record counts;
        a mismatch is a one-line error and exit code 2 (with --json, also a JSON result).
        """
        from fireval.core.errors import InputError
        from fireval.judging.provenance import verify_pair

        try:
            res = verify_pair(fire_json, provenance)
        except InputError as exc:
            if as_json:
                typer.echo(json.dumps({"ok": False, "fire_json": str(fire_json), "error": str(exc)}))
            raise
        if as_json:
            typer.echo(json.dumps(res))
            return
        typer.echo(
            f"ok: {res['fire_json']} matches {res['sidecar']} ({res['annotations']} annotations, "
            f"{res['disagreements']} disagreements, sha256 {res['sha256']})"
        )

    @sub.command()
    def stats(
        fire_json: Annotated[
            Path | None, typer.Argument(help="FIRE JSON file (the authors' release or an export).")
        ] = None,
        db: Annotated[
            str | None, typer.Option("--db", help=DB_HELP + " Instead of a FIRE JSON file.")
        ] = None,
        json_out: Annotated[Path | None, typer.Option("--json", help="Write the statistics as JSON.")] = None,
        resamples: Annotated[
            int,
            typer.Option(
                callback=int_at_least("--resamples", 1), help="Bootstrap resamples of items for the CI of α."
            ),
        ] = 1000,
        seed: Annotated[
            int, typer.Option(callback=seed_option(), help="Bootstrap seed (same seed, same CI).")
        ] = 0,
        level: Annotated[
            float,
            typer.Option(
                callback=number_in("--level", 0.0, 1.0, lo_open=True, hi_open=True),
                help="Confidence level of the CI.",
            ),
        ] = 0.95,
    ) -> None:
        """Agreement: percent agreement, Krippendorff's α with a bootstrap CI, agreement by number
        of labels (FIRE Fig. 7) and the disagreements. Adjudications resolve items but are not votes."""
        from fireval.cli.common import guard_outputs
        from fireval.core.errors import InputError
        from fireval.judging import agreement
        from fireval.report.terminal import agreement_tables, print_tables

        if (fire_json is None) == (db is None):
            raise InputError("give either a FIRE JSON file or --db URL, not both and not neither")
        # --resamples, --level and --seed are checked when parsed (their callbacks)
        guard_outputs({"--json": json_out}, **({"labels": [str(fire_json)]} if fire_json else {"store": db}))
        if db is not None:
            require_existing_store(db)
            items = agreement.items_from_store(db)
        else:
            assert fire_json is not None
            if not fire_json.exists():
                raise InputError("FIRE JSON file not found", source=str(fire_json))
            from fireval.formats.textio import LABEL_FORMATS, content_head, label_format

            kind = label_format(fire_json)  # by content (qrels or a label .npz cannot give agreement)
            if kind != "fire" and content_head(fire_json)[1]:
                raise InputError(
                    f"the content is {LABEL_FORMATS[kind]}, not FIRE JSON; agreement needs every "
                    "annotator's label (a FIRE JSON file or --db)",
                    source=str(fire_json),
                )
            items = agreement.items_from_fire_json(fire_json)
        result = agreement.agreement_stats(items, n_resamples=resamples, seed=seed, level=level)
        for w in result["warnings"]:
            typer.echo(f"warning: {w}", err=True)
        if json_out is not None:
            from fireval import api

            units = (
                "unanimous, pairwise: fractions in [0, 1]; alpha (and its CI): Krippendorff's α in [-1, 1]; "
            )
            api.write_json({"units": units + "counts: integers", **result}, json_out)
        import shutil

        print_tables(agreement_tables(result, width=max(40, shutil.get_terminal_size().columns)))
