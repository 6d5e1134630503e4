"""Provenance of an export: what an auditor of the labelling campaign needs beside the FIRE JSON.

The FIRE JSON data model has no field for flags, skips, adjudications, gold items or the audit
trail, so the strict export cannot carry them. :func:`collect` reads them from the store into
one JSON document (the *provenance sidecar*, ``fireval judgments export --provenance PATH``);
with ``--extended`` each FIRE record also carries the part about its item under the extra key
:data:`RECORD_KEY` (:func:`record_provenance`).

The sidecar (``format`` = :data:`FORMAT`, ``version`` = :data:`VERSION`); times are ISO 8601 in
UTC; annotators are named by their store id (the FIRE file's ``annotator_ids``; names are not
exported, as in the FIRE file, whose ``source_annotator_map_md5`` the sidecar repeats):

- ``fire_json``: the exported file's name (``file``), its ``path`` relative to the sidecar's
  directory (version 2), ``sha256`` of its bytes and its record counts (filled by
  :mod:`fireval.judging.export`), so the pair can be checked: :func:`read_sidecar` (the one
  reader of sidecars in fireval) refuses a sidecar whose FIRE file is missing or has other
  bytes, e.g. after an export interrupted between its two renames; :func:`verify_pair`
  (``fireval judgments verify-export``) also checks the FIRE file's data model and counts;
- ``store``: backend and schema revision; ``snapshot``: the high-water marks the export was
  taken at (see below);
- ``annotators``: id, role, enabled;
- ``items``: every item: ``item_id``, dataset, ``query``, ``video_id``, where it went
  (``section``: ``annotations`` | ``disagreements`` | ``null`` when not exported), its
  ``label`` and how it was decided (``decided_by``: ``majority`` | ``adjudication`` | ``tie`` |
  ``none``), the ``response_ids`` of its votes;
- ``labels``: every current label row (``label_id`` = the FIRE ``response_ids``, item, annotator,
  label, ``kind`` ``vote`` | ``adjudication``, ``time_spent_ms``, time);
- ``adjudications``: the labels of kind ``adjudication`` with ``decided``: whether the
  adjudication gave the item its label (false where the votes had a majority of their own);
- ``flags``: every flag for review (item, annotator, reason, time, ``status``, ``resolution``,
  ``resolved_by``, ``resolved_at``);
- ``skips``: every current ``skip`` answer with the reason recorded for it (the latest skip
  reason of that annotator on that item; ``flagged`` when the skip came from a flag; ``null``
  when none was given);
- ``gold``: the gold items (with their answers); every annotator's gold answers, one row per
  (gold item, annotator): the *first* answer (``label``, ``correct``, ``time_spent_ms``,
  ``answered_at``: what gold accuracy scores, by design; ``correct`` ``null`` while pending or
  skipped) and the answer ``current`` now (``null``: pending or withdrawn); and (version 3)
  ``events``, the whole ``gold_events`` trail: ``shown``, ``answer``, ``change`` (with
  ``previous``), ``withdraw`` (with the withdrawn answer in ``previous``), each with its time
  and ``after_event``, the annotator's newest ``label_events`` id when it was written, which
  places it in one order with that annotator's ``label_events`` (after the event it names,
  before the next one). So a gold answer changed or undone after the first one is on record,
  though it never changes the score; and ``flags``, the flags for review raised on gold items
  (revision 0009: reason, status, resolution, times), whose answers gold accuracy leaves out;
  and (version 4) ``replacements``, the ``gold_item_events`` trail (revision 0010): each known
  answer replaced by ``judgments load --gold FILE --replace``, oldest first (``gold_id``,
  ``query``, ``video_id``, ``answer`` after, ``previous`` before, ``source``: the gold file's
  name, without its directory, as the store recorded it, and the time), so a gold item whose
  answer is not the one first loaded says so, and since when: annotators' gold answers are
  scored against the answer current at export;
- ``label_events``: the whole audit table (``answer`` / ``change`` with ``previous`` /
  ``withdraw``), so every label change and undo is accounted for; each event's ``kind``
  (``vote`` | ``adjudication``) is the one the audit table recorded when the event was written
  (revision 0007), not the current label's: a withdrawn label has no current row. ``null`` only
  for an event older than 0007 whose kind could not be inferred (see that migration);
- ``summary``: counts of all of the above (``gold_changes``, ``gold_withdrawals``: version 3;
  ``gold_replacements``: version 4).

Consistency: the FIRE records and the sidecar are read in separate transactions. The
:func:`fingerprint` of the store (last audit event id, number of flags, number of resolved
flags: every change of a label writes an audit event and flags are never reopened) is taken
before the records are read and again inside the sidecar's read transaction (``REPEATABLE
READ`` on PostgreSQL; SQLite reads one snapshot); the export retries when they differ, so the
two files always describe the same state of the store. Gold events are not in the
fingerprint (no FIRE record depends on them): they are read in the sidecar's one transaction
with the rest of it, and ``snapshot.last_gold_event_id`` records the newest one it includes
(``snapshot.last_gold_replacement_id`` likewise the newest ``gold_item_events`` row; version 4).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from fireval.core.errors import InputError
from fireval.judging import schema as S

FORMAT = "fireval-provenance"
VERSION = 4
#: sidecar versions :func:`read_sidecar` reads (2 added the events' recorded ``kind``; 3 the gold
#: answers' ``current`` answer and trail, ``gold.events``, and ``snapshot.last_gold_event_id``;
#: 4 the replaced known answers, ``gold.replacements``, ``summary.gold_replacements`` and
#: ``snapshot.last_gold_replacement_id``)
READABLE_VERSIONS = (1, 2, 3, 4)
#: the :func:`fingerprint` fields of a sidecar's ``snapshot`` (it may record more)
FINGERPRINT_KEYS = ("last_event_id", "flags", "resolved_flags")
#: the extra key of a FIRE record (``--extended`` only) holding its item's provenance
RECORD_KEY = "fireval"
#: the reason listed for a skip that a flag for review recorded
FLAGGED = "flagged"


def iso(t: Any) -> str | None:
    """A stored time as ISO 8601 UTC (SQLite gives naive UTC times, PostgreSQL aware ones)."""
    if t is None:
        return None
    if isinstance(t, str):  # a driver that hands back text
        t = datetime.fromisoformat(t)
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return str(t.astimezone(UTC).isoformat())


def fingerprint(conn: Connection) -> tuple[int, int, int]:
    """(last audit event id, flags, resolved flags): changes whenever a label or flag does."""
    E, F = S.label_events.c, S.flags.c
    last = conn.execute(sa.select(sa.func.coalesce(sa.func.max(E.id), 0))).scalar_one()
    n, resolved = conn.execute(
        sa.select(
            sa.func.count(F.id),
            sa.func.coalesce(sa.func.sum(sa.case((F.status == "resolved", 1), else_=0)), 0),
        )
    ).one()
    return int(last), int(n), int(resolved)


def _rows(conn: Connection, q: Any) -> list[dict[str, Any]]:
    return [dict(r._mapping) for r in conn.execute(q)]


def collect(db: Any, outcome: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """The sidecar's store part, read in one transaction of ``db`` (an engine ``Database``).

    ``outcome`` maps item id → ``{"decided_by": majority | adjudication | tie | none,
    "label": relevant | irrelevant | None, "section": annotations | disagreements | None}``,
    from the export's own reading of the votes. The document's ``snapshot`` is the
    :func:`fingerprint` inside the transaction.
    """
    with db.read_engine.connect() as raw:
        conn = raw.execution_options(isolation_level="REPEATABLE READ") if db.is_postgres else raw
        with conn.begin():
            snap = fingerprint(conn)
            L, It, A, F, E = S.labels.c, S.items.c, S.annotators.c, S.flags.c, S.label_events.c
            people = _rows(conn, sa.select(A.id, A.role, A.active).order_by(A.id))
            items = _rows(
                conn, sa.select(It.id, It.dataset, It.caption, It.video_id, It.needed).order_by(It.id)
            )
            labels = _rows(
                conn,
                sa.select(
                    L.id,
                    L.item_id,
                    L.annotator_id,
                    L.assignment_id,
                    L.label,
                    L.kind,
                    L.time_spent_ms,
                    L.created_at,
                ).order_by(L.id),
            )
            flags = _rows(conn, sa.select(S.flags).order_by(F.id))
            events = _rows(conn, sa.select(S.label_events).order_by(E.id))
            gold_items = _rows(conn, sa.select(S.gold_items).order_by(S.gold_items.c.id))
            gold_answers = _rows(conn, sa.select(S.gold_answers).order_by(S.gold_answers.c.id))
            gold_events = _rows(conn, sa.select(S.gold_events).order_by(S.gold_events.c.id))
            gold_flags = _rows(conn, sa.select(S.gold_flags).order_by(S.gold_flags.c.id))
            GE = S.gold_item_events.c
            replaced = _rows(conn, sa.select(S.gold_item_events).order_by(GE.id))
    doc = _document(
        snap, people, items, labels, flags, events, gold_items, gold_answers, gold_events, outcome
    )
    doc["gold"]["flags"] = [
        {
            "flag_id": int(f["id"]),
            "gold_id": int(f["gold_id"]),
            "annotator_id": int(f["annotator_id"]),
            "reason": f["reason"],
            "status": f["status"],
            "resolution": f["resolution"],
            "resolved_by": f["resolved_by"],
            "resolved_at": iso(f["resolved_at"]),
            "created_at": iso(f["created_at"]),
        }
        for f in gold_flags
    ]
    _add_replacements(doc, replaced)
    return doc


def _add_replacements(doc: dict[str, Any], replaced: Sequence[dict[str, Any]]) -> None:
    """``gold.replacements``, ``summary.gold_replacements`` and ``snapshot.last_gold_replacement_id``
    (version 4) from the ``gold_item_events`` rows, oldest first."""
    pairs = {g["gold_id"]: (g["query"], g["video_id"]) for g in doc["gold"]["items"]}
    doc["gold"]["replacements"] = [
        {
            "event_id": int(e["id"]),
            "gold_id": int(e["gold_id"]),
            "query": pairs.get(int(e["gold_id"]), (None, None))[0],
            "video_id": pairs.get(int(e["gold_id"]), (None, None))[1],
            "action": e["action"],
            "answer": e["answer"],
            "previous": e["previous"],
            "source": Path(e["source"]).name if e["source"] else None,
            "created_at": iso(e["created_at"]),
        }
        for e in replaced
    ]
    doc["summary"]["gold_replacements"] = len(replaced)
    doc["snapshot"]["last_gold_replacement_id"] = max((int(e["id"]) for e in replaced), default=0)


def _document(
    snap: tuple[int, int, int],
    people: Sequence[dict[str, Any]],
    items: Sequence[dict[str, Any]],
    labels: Sequence[dict[str, Any]],
    flags: Sequence[dict[str, Any]],
    events: Sequence[dict[str, Any]],
    gold_items: Sequence[dict[str, Any]],
    gold_answers: Sequence[dict[str, Any]],
    gold_events: Sequence[dict[str, Any]],
    outcome: Mapping[int, Mapping[str, Any]],
) -> dict[str, Any]:
    votes: dict[int, list[int]] = {}
    for lab in labels:
        if lab["kind"] == "vote" and lab["label"] != "skip":
            votes.setdefault(int(lab["item_id"]), []).append(int(lab["id"]))
    none: Mapping[str, Any] = {}
    out_items = []
    for it in items:
        iid = int(it["id"])
        got = outcome.get(iid, none)
        out_items.append(
            {
                "item_id": iid,
                "dataset": it["dataset"],
                "query": it["caption"],
                "video_id": it["video_id"],
                "section": got.get("section"),
                "label": got.get("label"),
                "decided_by": got.get("decided_by", "none"),
                "response_ids": votes.get(iid, []),
            }
        )
    decided_by = {i["item_id"]: i["decided_by"] for i in out_items}
    out_labels = [
        {
            "label_id": int(x["id"]),
            "item_id": int(x["item_id"]),
            "annotator_id": int(x["annotator_id"]),
            "queue_id": int(x["assignment_id"]),
            "label": x["label"],
            "kind": x["kind"],
            "time_spent_ms": x["time_spent_ms"],
            "created_at": iso(x["created_at"]),
        }
        for x in labels
    ]
    adjudications = [
        {
            "label_id": x["label_id"],
            "item_id": x["item_id"],
            "annotator_id": x["annotator_id"],
            "label": x["label"],
            "created_at": x["created_at"],
            "decided": decided_by.get(x["item_id"]) == "adjudication",
        }
        for x in out_labels
        if x["kind"] == "adjudication"
    ]
    out_flags = [
        {
            "flag_id": int(f["id"]),
            "item_id": int(f["item_id"]),
            "annotator_id": int(f["annotator_id"]),
            "reason": f["reason"],
            "created_at": iso(f["created_at"]),
            "status": f["status"],
            "resolution": f["resolution"],
            "resolved_by": f["resolved_by"],
            "resolved_at": iso(f["resolved_at"]),
        }
        for f in flags
        if f["kind"] == "flag"
    ]
    reasons: dict[tuple[int, int], str] = {}
    for f in flags:  # in id order: the latest reason of a pair wins
        key = (int(f["item_id"]), int(f["annotator_id"]))
        reasons[key] = f["reason"] if f["kind"] == "skip" else FLAGGED
    skips = [
        {
            "label_id": x["label_id"],
            "item_id": x["item_id"],
            "annotator_id": x["annotator_id"],
            "reason": reasons.get((x["item_id"], x["annotator_id"])) or None,
            "created_at": x["created_at"],
        }
        for x in out_labels
        if x["label"] == "skip"
    ]
    out_events = [
        {
            "event_id": int(e["id"]),
            "label_id": int(e["label_id"]),
            "item_id": int(e["item_id"]),
            "annotator_id": int(e["annotator_id"]),
            "action": e["action"],
            "label": e["label"],
            "previous": e["previous"],
            "kind": e.get("kind"),
            "created_at": iso(e["created_at"]),
        }
        for e in events
    ]
    gold = {
        "items": [
            {"gold_id": int(g["id"]), "query": g["caption"], "video_id": g["video_id"], "answer": g["answer"]}
            for g in gold_items
        ],
        "answers": [
            {
                "gold_id": int(g["gold_id"]),
                "annotator_id": int(g["annotator_id"]),
                "label": g["label"],
                "correct": g["correct"],
                "time_spent_ms": g["time_spent_ms"],
                "shown_at": iso(g["shown_at"]),
                "answered_at": iso(g["answered_at"]),
                "current": g.get("current"),
            }
            for g in gold_answers
        ],
        "events": [
            {
                "event_id": int(e["id"]),
                "gold_id": int(e["gold_id"]),
                "annotator_id": int(e["annotator_id"]),
                "action": e["action"],
                "label": e["label"],
                "previous": e["previous"],
                "after_event": int(e["after_event"]),
                "created_at": iso(e["created_at"]),
            }
            for e in gold_events
        ],
    }
    gold_actions = [e["action"] for e in gold["events"]]
    status_counts: dict[str, int] = {}
    for f in out_flags:
        state = str(f["status"]) if f["status"] == "open" else f"resolved {f['resolution']}"
        status_counts[state] = status_counts.get(state, 0) + 1
    skip_reasons: dict[str, int] = {}
    for s in skips:
        why = str(s["reason"] or "(no reason)")
        skip_reasons[why] = skip_reasons.get(why, 0) + 1
    actions = [e["action"] for e in out_events]
    summary = {
        "items": len(out_items),
        "exported": sum(1 for i in out_items if i["section"] is not None),
        "labels": len(out_labels),
        "votes": sum(len(v) for v in votes.values()),
        "adjudications": len(adjudications),
        "adjudications_not_deciding": sum(1 for a in adjudications if not a["decided"]),
        "flags": dict(sorted(status_counts.items())),
        "skips": len(skips),
        "skip_reasons": dict(sorted(skip_reasons.items())),
        "label_changes": actions.count("change"),
        "withdrawals": actions.count("withdraw"),
        "gold_items": len(gold["items"]),
        "gold_answers": sum(1 for g in gold["answers"] if g["label"] is not None),
        "gold_correct": sum(1 for g in gold["answers"] if g["correct"] is True),
        "gold_changes": gold_actions.count("change"),
        "gold_withdrawals": gold_actions.count("withdraw"),
    }
    return {
        "snapshot": {
            **dict(zip(FINGERPRINT_KEYS, snap, strict=True)),
            "last_gold_event_id": max((int(e["id"]) for e in gold_events), default=0),
        },
        "annotators": [{"id": int(p["id"]), "role": p["role"], "active": bool(p["active"])} for p in people],
        "summary": summary,
        "items": out_items,
        "labels": out_labels,
        "adjudications": adjudications,
        "flags": out_flags,
        "skips": skips,
        "gold": gold,
        "label_events": out_events,
    }


def _empty(item_id: int, decided_by: str) -> dict[str, Any]:
    return {
        "item_id": item_id,
        "decided_by": decided_by,
        "adjudications": [],
        "flags": [],
        "skips": [],
        "events": [],
    }


def by_item(doc: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """Item id → the part of a sidecar ``doc`` about that item (what ``--extended`` puts in its
    FIRE record under :data:`RECORD_KEY`): ``item_id``, ``decided_by`` and the item's
    ``adjudications``, ``flags``, ``skips`` and audit ``events`` (without the repeated item id)."""
    out = {i["item_id"]: _empty(i["item_id"], i["decided_by"]) for i in doc["items"]}
    for key, src in (
        ("adjudications", "adjudications"),
        ("flags", "flags"),
        ("skips", "skips"),
        ("events", "label_events"),
    ):
        for row in doc[src]:
            if row["item_id"] in out:
                out[row["item_id"]][key].append({k: v for k, v in row.items() if k != "item_id"})
    return out


def default_provenance_path(output: str | Path) -> Path:
    """Where the CLI writes the provenance sidecar by default: ``labels.json`` → ``labels.provenance.json``."""
    out = Path(output)
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return out.with_name(f"{stem}.provenance.json")


def sha256_of(path: str | Path) -> str:
    """sha256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fire_path_of(sidecar: str | Path, doc: Mapping[str, Any]) -> Path:
    """The FIRE file a sidecar ``doc`` describes: its ``fire_json.path`` (relative to the sidecar's
    directory; version 2) else its ``fire_json.file`` beside the sidecar (version 1)."""
    fj = doc.get("fire_json") or {}
    rel = fj.get("path") or fj.get("file")
    if not isinstance(rel, str) or not rel:
        raise InputError("the provenance sidecar names no FIRE file (fire_json.file)", source=str(sidecar))
    return Path(sidecar).parent / rel


def read_sidecar(sidecar: str | Path, fire: str | Path | None = None) -> dict[str, Any]:
    """Read a provenance sidecar and check that it describes ``fire`` (default: the FIRE file it
    names, :func:`fire_path_of`); return the document.

    The pair is accepted only when the FIRE file's sha256 is the one the sidecar recorded: an
    export writes the sidecar first and the FIRE file last, so a crash between the two renames
    (or a FIRE file replaced by hand) leaves a pair that this refuses, with a one-line
    :class:`~fireval.core.errors.InputError` naming both files. Every fireval reader of a sidecar
    goes through this function.
    """
    import json

    src = str(sidecar)
    try:
        from fireval.formats.textio import loads_bounded

        with open(sidecar, encoding="utf-8") as fh:
            doc = loads_bounded(fh.read())
    except OSError as exc:
        raise InputError(f"cannot read the provenance sidecar: {exc.strerror}", source=src) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a provenance sidecar (not JSON: {exc})", source=src) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"not a provenance sidecar (expected format {FORMAT!r})", source=src)
    if doc.get("version") not in READABLE_VERSIONS:
        raise InputError(
            f"provenance sidecar version {doc.get('version')!r}; this fireval reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}",
            source=src,
        )
    target = Path(fire) if fire is not None else fire_path_of(sidecar, doc)
    want = (doc.get("fire_json") or {}).get("sha256")
    try:
        got = sha256_of(target)
    except FileNotFoundError:
        raise InputError(
            f"the FIRE file it describes, {target}, does not exist (an export that did not finish?); "
            "export again",
            source=src,
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read the FIRE file {target}: {exc.strerror}", source=src) from None
    if got != want:
        raise InputError(
            f"does not describe {target}: that file's sha256 is {got[:12]}..., the sidecar records "
            f"{str(want)[:12]}... (the two come from different exports, e.g. one interrupted between "
            "writing them); export again",
            source=src,
        )
    return doc


def verify_pair(fire: str | Path, sidecar: str | Path | None = None) -> dict[str, Any]:
    """Check that ``fire`` and its provenance sidecar (default: ``fire``'s stem +
    ``.provenance.json``, where the export writes it) are one export's pair; return the result
    (``ok``, both paths, ``sha256``, record counts, ``extended``, sidecar ``version`` and
    ``created_at``) or raise a one-line :class:`~fireval.core.errors.InputError`.

    The checks, in order: the sidecar exists (else a hint: ``--provenance PATH``, or an export
    run with ``--no-provenance``); it is a readable sidecar whose FIRE file exists and has the
    recorded sha256 (:func:`read_sidecar`, here told ``fire``); ``fire`` follows the FIRE data
    model (:func:`fireval.formats.fire_json.schema_problems`, with fireval's extension when the
    sidecar records an ``--extended`` export or, version 1, records nothing); and the counts and
    source md5s the sidecar records (``fire_json.annotations`` / ``disagreements``,
    ``source_data_md5``, ``source_annotator_map_md5``; each only when recorded) equal the FIRE
    file's. With the sha256 matching, the last two fail only for a sidecar edited by hand.
    """
    import json

    from fireval.formats.fire_json import schema_problems

    fire = Path(fire)
    side = Path(sidecar) if sidecar is not None else default_provenance_path(fire)
    if not side.exists():
        if not fire.exists():
            raise InputError("FIRE JSON file not found", source=str(fire))
        raise InputError(
            f"no provenance sidecar at {side} (the export writes it there unless run with "
            "--no-provenance); give its path with --provenance PATH",
            source=str(fire),
        )
    doc = read_sidecar(side, fire)
    fj = doc.get("fire_json") or {}
    src = str(fire)
    try:
        from fireval.formats.textio import loads_bounded

        with open(fire, encoding="utf-8") as fh:
            data = loads_bounded(fh.read())
    except OSError as exc:
        raise InputError(f"cannot read the FIRE file: {exc.strerror}", source=src) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not FIRE JSON (not UTF-8: {exc.reason})", source=src) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not FIRE JSON (malformed JSON: {exc.msg})", source=src, line=exc.lineno) from None
    if not isinstance(data, dict):
        raise InputError(f"not FIRE JSON (expected an object, found {type(data).__name__})", source=src)
    extended = bool(fj.get("extended", True))
    problems = schema_problems(data, extended=extended, limit=2)
    if problems:
        more = " (and more)" if len(problems) > 1 else ""
        model = "fireval's extended FIRE data model" if extended else "the FIRE data model"
        raise InputError(f"does not follow {model}: {problems[0]}{more}", source=src)
    counts = {k: len(data[k]) for k in ("annotations", "disagreements")}
    for key, got in counts.items():
        want = fj.get(key)
        if want is not None and want != got:
            raise InputError(
                f"records fire_json.{key} = {want!r}, but {fire} has {got} {key}", source=str(side)
            )
    for key in ("source_data_md5", "source_annotator_map_md5"):
        if key in doc and doc[key] != data.get(key):
            raise InputError(
                f"records {key} {doc[key]!r}, but {fire} has {data.get(key)!r}", source=str(side)
            )
    return {
        "ok": True,
        "fire_json": str(fire),
        "sidecar": str(side),
        "sha256": fj.get("sha256"),
        **counts,
        "extended": fj.get("extended"),
        "version": doc.get("version"),
        "created_at": doc.get("created_at"),
    }
