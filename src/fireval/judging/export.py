"""Export the annotation store as FIRE JSON that follows the authors' data model.

The records come from :meth:`fireval.judging.store.Store.fire_records` (majority items as
annotations, ties as disagreements, each with every annotator id, label, response id, queue id
and model; adjudications decide a tie but are not listed as votes). This module fills the rest
of the authors' data model and checks the whole file before writing it
(:func:`fireval.formats.fire_json.schema_problems`):

- ``models``: run names become the schema's model names (``CLIP4CLIP``, ``SSB``, ``CE``) through
  ``model_names`` (``--model-name clip4clip=CLIP4CLIP``); a run name equal to a model name up to
  case maps to it without an option.
- ``dataset``/``datasets``: ``MSRVTT`` or ``MSVD``, from ``dataset`` or the items' dataset
  (``msrvtt-1k-A`` → ``MSRVTT``).
- ``source_data_md5``: md5 of the pool file(s) the store was loaded from (``pool_files``, in the
  order given), else md5 of the store's items (dataset, caption, video per line, sorted).
- ``source_annotator_map_md5``: md5 of the store's annotator map (``id<TAB>name`` per line,
  sorted by id); the names themselves are not exported.
- ``source_ds``: the date the first item was loaded; ``created_ds``: today (UTC), both
  ``YYYY-MM-DD``; ``creator``, ``email``, ``website``, ``license``: given, else defaults
  (:data:`DEFAULT_META`).

Strict mode (the default) refuses to write a file that does not follow the data model and names
the first offending field and value. ``extended`` writes other run names and datasets as they
are: such a file is read by fireval but is *not* valid for the authors' tools.

Provenance (flags, skips with reasons, adjudications, gold items and answers with every gold
answer event, the audit trail of label changes; :mod:`fireval.judging.provenance`): the data model has no field for it, so the
strict file never carries it. ``provenance=PATH`` writes it as a JSON sidecar that names the
FIRE file and its sha256; with ``extended`` each record also carries its item's part under the
extra key ``fireval`` (``record_provenance``). Both are read from one state of the store (the
export retries when a label or flag changed while it read, :data:`SNAPSHOT_ATTEMPTS` times at
most).

Writing the pair. POSIX has no rename of two files at once, so the pair is made checkable and
the renames are ordered:

1. both files are written to temporaries beside their targets (``.NAME.HOST-PID-….export.tmp``;
   the FIRE file validated first), each fsynced; the sidecar records the FIRE temporary's
   sha256. A failure here leaves both targets untouched and removes the temporaries.
2. the sidecar is renamed into place and its directory fsynced, *then* the FIRE file is renamed
   and its directory fsynced. The FIRE file is the commit: it is the file most tools read, and
   whenever a new FIRE file is visible (even after a power loss) its sidecar is too. A crash
   between the two renames leaves the new sidecar beside the old FIRE file (or beside none);
   :func:`fireval.judging.provenance.read_sidecar`, the one reader of sidecars, compares the
   sha256 and refuses such a pair with a one-line error; the FIRE file alone stays the old,
   complete one. (Renaming the FIRE file first would instead leave a new FIRE file beside an
   old sidecar: as detectable, but the file most tools read would have lost its provenance.)
3. temporaries a killed export left behind are hidden files no reader opens; the next export
   to the same path removes those of processes of this machine that no longer run
   (:func:`remove_stale_temporaries`).

The CLI's no-overwrite guard (the outputs are neither the store, a pool file nor each other)
is checked before any of this.

The web app's download is the same export (:func:`export_archive`): the pair, written as above
into a private temporary directory, sent as one zip (a browser saves one file per download).
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fireval.core.errors import InputError
from fireval.judging.errors import StoreError
from fireval.judging.provenance import default_provenance_path as default_provenance_path
from fireval.judging.store import Store

DEFAULT_META: dict[str, str] = {
    "creator": "fireval",
    "email": "",
    "website": "",
    "license": "unspecified",
}
"""Defaults for the free-text meta fields (the data model requires strings, not null)."""


def parse_model_names(specs: Sequence[str]) -> dict[str, str]:
    """``["clip4clip=CLIP4CLIP", ...]`` → ``{"clip4clip": "CLIP4CLIP"}`` (one-line error on a bad spec)."""
    out: dict[str, str] = {}
    for spec in specs:
        run, sep, model = str(spec).partition("=")
        if not sep or not run.strip() or not model.strip():
            raise InputError(f"--model-name: expected RUN=MODEL (e.g. clip4clip=CLIP4CLIP), found {spec!r}")
        out[run.strip()] = model.strip()
    return out


def _model_map(runs: set[str], given: Mapping[str, str]) -> dict[str, str]:
    from fireval.formats.fire_json import MODELS

    upper = {m.upper(): m for m in MODELS}
    out = {r: upper[r.upper()] for r in runs if r.upper() in upper}
    out.update(given)
    return out


def _dataset_name(name: str | None) -> str | None:
    from fireval.formats.fire_json import DATASETS

    if name is None:
        return None
    key = "".join(ch for ch in name.upper() if ch.isalnum())
    return next((d for d in DATASETS if key.startswith(d)), name)


def md5_of_files(paths: Sequence[str | Path]) -> str:
    """md5 over the bytes of ``paths`` in order (one-line error naming a missing file)."""
    h = hashlib.md5(usedforsecurity=False)
    for p in paths:
        try:
            with open(p, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError as exc:
            raise InputError(f"cannot read the pool file: {exc.strerror}", source=str(p)) from None
    return h.hexdigest()


def _md5_lines(lines: Sequence[str]) -> str:
    return hashlib.md5("\n".join(lines).encode("utf-8"), usedforsecurity=False).hexdigest()


def export_meta(
    dataset: str | None,
    creator: str = "fireval",
    *,
    source_data_md5: str = "",
    source_annotator_map_md5: str = "",
    source_ds: str = "",
    email: str = "",
    website: str = "",
    license: str = "unspecified",
) -> dict[str, Any]:
    """Top-level FIRE JSON fields other than annotations/disagreements (all strings)."""
    return {
        "source_ds": source_ds,
        "source_data_md5": source_data_md5,
        "source_annotator_map_md5": source_annotator_map_md5,
        "created_ds": datetime.now(UTC).strftime("%Y-%m-%d"),
        "email": email,
        "creator": creator,
        "website": website,
        "license": license,
        "datasets": [dataset] if dataset else [],
    }


def _outcome(st: Store) -> dict[int, dict[str, Any]]:
    """Item id → how the export decided it (see :func:`fireval.judging.provenance.collect`)."""
    from fireval.judging.aggregate import DISAGREEMENT, RELEVANT, UNLABELLED

    ids, counts = st.vote_counts()
    dec, adj = counts.decisions(), counts.adjudicated()
    out: dict[int, dict[str, Any]] = {}
    for iid, d, a in zip(ids.tolist(), dec.tolist(), adj.tolist(), strict=True):
        if d == UNLABELLED:
            out[iid] = {"decided_by": "none", "label": None, "section": None}
        elif d == DISAGREEMENT:
            out[iid] = {"decided_by": "tie", "label": None, "section": "disagreements"}
        else:
            out[iid] = {
                "decided_by": "adjudication" if a else "majority",
                "label": "relevant" if d == RELEVANT else "irrelevant",
                "section": "annotations",
            }
    return out


def _record_items(records: list[dict[str, Any]], doc: dict[str, Any]) -> list[int]:
    """The store item of each FIRE record: by its first response id, else (an item decided by an
    adjudication alone, no vote) by its query and video among such items."""
    item_of_label = {lab["label_id"]: lab["item_id"] for lab in doc["labels"]}
    lone: dict[tuple[str, str], list[int]] = {}
    for it in doc["items"]:
        if it["section"] == "annotations" and not it["response_ids"]:
            lone.setdefault((it["query"], it["video_id"]), []).append(it["item_id"])
    out = []
    for rec in records:
        if rec["response_ids"]:
            out.append(item_of_label[rec["response_ids"][0]])
        else:
            out.append(lone[(rec["query"], rec["video_id"])].pop(0))
    return out


#: how often the export re-reads a store that changed while it was read
SNAPSHOT_ATTEMPTS = 5


def export_fire_json(
    store: Store | str,
    path: str | Path,
    dataset: str | None = None,
    *,
    model_names: Mapping[str, str] | None = None,
    extended: bool = False,
    pool_files: Sequence[str | Path] = (),
    meta: Mapping[str, str] | None = None,
    provenance: str | Path | None = None,
    record_provenance: bool | None = None,
) -> dict[str, int]:
    """Write the store's aggregated labels to ``path`` (atomically); return the counts.

    Majority items go to ``annotations`` (with ``label``), ties to ``disagreements``. See the
    module docstring for ``model_names``, ``extended``, ``pool_files`` and ``meta`` (``creator``,
    ``email``, ``website``, ``license``). ``provenance``: also write the provenance sidecar
    there (:mod:`fireval.judging.provenance`). ``record_provenance`` (default: ``extended``;
    needs ``extended``): each record carries its item's provenance under the extra key
    ``fireval``. Raises :class:`InputError` (nothing written) when the file would not follow
    the authors' data model and ``extended`` is not set.
    """
    from fireval.formats import write_fire_json
    from fireval.judging import provenance as P

    extra = sorted(set(meta or {}) - set(DEFAULT_META))
    if extra:
        raise InputError(f"unknown export meta field(s) {extra}; allowed: {', '.join(DEFAULT_META)}")
    in_records = extended if record_provenance is None else record_provenance
    if in_records and not extended:
        raise InputError(
            "provenance inside the records needs --extended (the FIRE data model has no field for it)"
        )
    need = in_records or provenance is not None
    own = isinstance(store, str)
    st = Store(store, create=False) if isinstance(store, str) else store
    doc: dict[str, Any] | None = None
    try:
        for _ in range(SNAPSHOT_ATTEMPTS):
            with st.db.reading() as conn:
                before = P.fingerprint(conn) if need else None
            ann, dis = st.fire_records(dataset)
            items = st.items_table()
            annotators = sorted((a.id, a.name) for a in st.annotators())
            if not need:
                break
            doc = P.collect(st.db, _outcome(st))
            if tuple(doc["snapshot"][k] for k in P.FINGERPRINT_KEYS) == before:
                break
        else:
            raise StoreError(
                f"the store changed during each of {SNAPSHOT_ATTEMPTS} attempts to read it; "
                "export again when fewer annotators are answering"
            )
        backend, revision = ("postgresql" if st.is_postgres else "sqlite"), st.revision
    finally:
        if own:
            st.close()
    ann_items = _record_items(ann, doc) if doc is not None and in_records else []
    dis_items = _record_items(dis, doc) if doc is not None and in_records else []
    mapping = _model_map({m for rec in ann + dis for m in rec["models"]}, model_names or {})
    for rec in ann + dis:
        rec["models"] = list(dict.fromkeys(mapping.get(m, m) for m in rec["models"]))
        rec["dataset"] = _dataset_name(rec["dataset"])
    ds = _dataset_name(dataset) or (ann[0]["dataset"] if ann else dis[0]["dataset"] if dis else None)
    data_md5 = (
        md5_of_files(pool_files)
        if pool_files
        else _md5_lines(sorted(f"{it['dataset']}\t{it['caption']}\t{it['video_id']}" for it in items))
    )
    first = min((it["created_at"] for it in items if it.get("created_at") is not None), default=None)
    fields = {**DEFAULT_META, **(meta or {})}
    doc_meta = export_meta(
        ds,
        fields["creator"],
        source_data_md5=data_md5,
        source_annotator_map_md5=_md5_lines([f"{i}\t{n}" for i, n in annotators]),
        source_ds=first.strftime("%Y-%m-%d") if first is not None else "",
        email=fields["email"],
        website=fields["website"],
        license=fields["license"],
    )
    doc_meta["datasets"] = (
        sorted({r["dataset"] for r in ann + dis if r.get("dataset")}) or doc_meta["datasets"]
    )
    if doc is not None and in_records:
        per_item = P.by_item(doc)
        for rec, iid in zip(ann + dis, ann_items + dis_items, strict=True):
            rec[P.RECORD_KEY] = per_item[iid]
    counts = {"annotations": len(ann), "disagreements": len(dis)}
    if provenance is None or doc is None:
        write_fire_json(path, ann, dis, doc_meta, strict=True, extended=extended)
        return counts
    _write_pair(path, Path(provenance), ann, dis, doc_meta, extended, doc, backend, revision, counts)
    return counts


#: the FIRE file's name inside :func:`export_archive`'s zip (the sidecar: its stem + ``.provenance.json``)
ARCHIVE_MEMBER = "fire_labels.json"


def export_archive(
    store: Store | str,
    dataset: str | None = None,
    *,
    model_names: Mapping[str, str] | None = None,
    extended: bool = False,
    pool_files: Sequence[str | Path] = (),
    meta: Mapping[str, str] | None = None,
    name: str = ARCHIVE_MEMBER,
) -> tuple[bytes, dict[str, int]]:
    """The CLI's export as one zip: ``(zip bytes, counts)``.

    The web app's "Download FIRE JSON" (a browser saves one file per download, and the export is
    a pair): :func:`export_fire_json` with the same arguments and the same strict check writes
    the FIRE file ``name`` and its provenance sidecar (:func:`default_provenance_path`) into a
    private temporary directory, and both go into the zip side by side, so the unpacked pair is
    what ``fireval judgments export`` writes and ``fireval judgments verify-export`` accepts.
    A refusal is the CLI's :class:`InputError` (its message names the file as ``name``).
    """
    import io
    import os
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory(prefix="fireval-export-") as tmp:
        fire = Path(tmp) / name
        sidecar = default_provenance_path(fire)
        try:
            counts = export_fire_json(
                store,
                fire,
                dataset,
                model_names=model_names,
                extended=extended,
                pool_files=pool_files,
                meta=meta,
                provenance=sidecar,
            )
        except InputError as exc:  # the server's temporary directory is nobody's business
            raise InputError(str(exc).replace(tmp + os.sep, "")) from None
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.write(fire, fire.name)
            zf.write(sidecar, sidecar.name)
    return buf.getvalue(), counts


def _write_pair(
    path: str | Path,
    sidecar: Path,
    ann: list[dict[str, Any]],
    dis: list[dict[str, Any]],
    doc_meta: dict[str, Any],
    extended: bool,
    doc: dict[str, Any],
    backend: str,
    revision: str | None,
    counts: dict[str, int],
) -> None:
    """The FIRE file and its sidecar as one pair (see the module docstring, "Provenance"): both
    written to temporaries (validated, fsynced), the sidecar renamed into place first, its
    directory fsynced, then the FIRE file renamed and its directory fsynced."""
    import json
    import os

    from fireval.atomic import atomic_write
    from fireval.formats import write_fire_json
    from fireval.judging import provenance as P
    from fireval.paths import refuse_store_file

    target = Path(path)
    refuse_store_file(target)  # never a store's database, WAL or journal
    refuse_store_file(sidecar, "provenance sidecar")
    if os.path.abspath(target) == os.path.abspath(sidecar):
        raise InputError("the provenance sidecar cannot be the FIRE file itself", source=str(target))
    for p in (target, sidecar):
        p.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(p)
    fire_tmp, side_tmp = _temporary(target), _temporary(sidecar)
    try:
        try:
            write_fire_json(fire_tmp, ann, dis, doc_meta, strict=True, extended=extended)
        except InputError as exc:  # name the output, not the temporary
            raise InputError(str(exc).replace(str(fire_tmp), str(target))) from None
        try:
            rel = os.path.relpath(os.path.abspath(target), os.path.abspath(sidecar.parent))
        except ValueError:  # another drive (Windows): the reader is told the FIRE file
            rel = target.name
        head = {
            "format": P.FORMAT,
            "version": P.VERSION,
            "created_at": datetime.now(UTC).isoformat(),
            "fire_json": {
                "file": target.name,
                "path": Path(rel).as_posix(),
                "sha256": P.sha256_of(fire_tmp),
                "extended": extended,
                **counts,
            },
            "source_data_md5": doc_meta["source_data_md5"],
            "source_annotator_map_md5": doc_meta["source_annotator_map_md5"],
            "store": {"backend": backend, "schema_revision": revision},
        }
        text = json.dumps({**head, **doc}, ensure_ascii=False)  # one line: the C encoder (jq pretty-prints)
        with atomic_write(side_tmp, "w", encoding="utf-8") as fh:  # fsynced
            fh.write(text)
        # the commit: the sidecar first, the FIRE file last (see the module docstring)
        os.replace(side_tmp, sidecar)
        _fsync_dir(sidecar.parent)
        try:
            os.replace(fire_tmp, target)
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"{exc.strerror}; the sidecar {sidecar} was already replaced and does not describe "
                "this file (readers refuse the pair): export again",
                str(target),
            ) from exc
        _fsync_dir(target.parent)
    except BaseException as exc:
        for tmp in (fire_tmp, side_tmp):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        # a full disk (or any OS error) at a temporary is the output's error: name the user's file
        named = {str(fire_tmp): target, str(side_tmp): sidecar}
        if isinstance(exc, OSError) and exc.errno is not None and str(exc.filename) in named:
            raise OSError(exc.errno, exc.strerror or str(exc), str(named[str(exc.filename)])) from exc
        raise


#: a short tag of this machine in the names of an export's temporaries
_HOST = hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def _temporary(path: Path) -> Path:
    """A new empty temporary beside ``path``: ``.NAME.HOST-PID-RANDOM.export.tmp``."""
    import os
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{path.name}.{_HOST}-{os.getpid()}-", suffix=".export.tmp", dir=path.parent
        )
    except OSError as exc:  # name the output, not the temporary
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    os.close(fd)
    return Path(tmp)


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True  # another user's process, or no way to tell: keep its files
    return True


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporaries an earlier export of ``path`` left behind when it died (a crash, a
    kill): files ``.NAME.HOST-PID-….tmp`` beside ``path`` (and the ``atomic_write`` temporaries
    inside them) made on this machine by a process that no longer runs. A live export's files,
    another machine's and anything else are left alone. Returns the paths removed."""
    import os
    import re

    target = Path(path)
    pattern = re.compile(r"\.+" + re.escape(target.name) + r"\.([0-9a-f]{8})-(\d+)-.*\.tmp")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if m is None or m.group(1) != _HOST:
            continue
        pid = int(m.group(2))
        if pid == os.getpid() or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def _fsync_dir(directory: Path) -> None:
    """fsync a directory, so a rename in it survives a power loss (POSIX; skipped where refused)."""
    import os

    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
