"""Label sources and label sets from arguments (part of :mod:`fireval.api`, which re-exports it).

- :func:`load_labels`: one source: ``instance``, a store URL (:data:`DB_PREFIXES`) or an SQLite
  store given as a path, or a label file (FIRE JSON, TREC qrels, ``.npz`` graded labels, told
  apart by content); :func:`split_label_spec` splits ``NAME=PATH`` by the rules of
  :func:`fireval.api_runs.split_run_spec`.
- :func:`label_sets`: ``original`` (instance labels), ``augmented`` (merged with every unnamed
  spec, FIRE's precedence by default) and one set per named spec; :func:`check_precedence`
  refuses unknown or repeated sources; :func:`label_warnings` gives the conflict, regrade and
  reader lines; :func:`common_queries` the queries with a relevant doc under any set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from fireval.api_runs import split_run_spec
from fireval.core import (
    DEFAULT_PRECEDENCE,
    FIRE_PRECEDENCE,
    Collection,
    Direction,
    FirevalError,
    InputError,
    Judgments,
    merge,
)

DB_PREFIXES = ("sqlite:", "postgresql:", "postgresql+", "postgres:")


def split_label_spec(spec: str | os.PathLike[str]) -> tuple[str | None, str]:
    """``(NAME, PATH)`` of a label argument ``NAME=PATH``, or ``(None, SPEC)`` (rules of
    :func:`split_run_spec`; ``instance`` and store URLs such as ``postgresql://…?sslmode=…``
    are never split)."""
    s = os.fspath(spec)
    if s == "instance" or s.startswith(DB_PREFIXES):
        return None, s
    try:
        return split_run_spec(s)
    except InputError as e:
        raise InputError(str(e).replace("run name", "label set name")) from None


def load_labels(spec: str | Path, collection: Collection) -> Judgments:
    """One label source: ``instance``, a store URL (``sqlite:///file.db``) or SQLite file, or a label file.

    Label files are FIRE JSON, TREC qrels, or ``.npz`` graded labels (proxies, auto labels),
    told apart by content, whatever the name (:func:`fireval.formats.read_labels`).
    """
    s = str(spec)
    if s == "instance":
        return collection.instance_judgments()
    if s.startswith(DB_PREFIXES):
        from fireval.judging import store_judgments

        return store_judgments(s, collection)  # refuses a missing store (never creates one)
    from fireval.formats.labels import read_labels

    p = Path(s)
    if not p.exists():
        raise InputError("label file not found", source=s)
    if _is_sqlite_file(p):  # a store given as a plain path, as `fireval serve --db` accepts
        from fireval.judging import store_judgments

        return store_judgments(f"sqlite:///{p.resolve()}", collection)
    return read_labels(p, collection)


def _is_sqlite_file(path: Path) -> bool:
    """True when ``path`` starts with the SQLite 3 file header."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def label_sets(
    collection: Collection,
    specs: Sequence[str | Path] = (),
    *,
    include_instance: bool = True,
    precedence: Sequence[str] | None = None,
    augmented_name: str = "augmented",
    separate_named: bool = True,
) -> dict[str, Judgments]:
    """``{"original": instance labels, "augmented": instance merged with every spec}``.

    With no specs only ``original`` is returned. Without the instance labels the merged set
    is the only one. A spec ``NAME=PATH`` (:func:`split_label_spec`) is a label set of its own,
    ``NAME`` (instance merged with that file alone, or the file alone without the instance
    labels), so ``bow=bow.npz syn=syn.npz`` gives one set per proxy as Wray et al.'s Table 3
    does; unnamed specs merge into ``augmented`` as before. ``separate_named=False`` merges
    named specs too. ``precedence`` ``None`` is FIRE's semantics
    (:data:`fireval.core.judgments.FIRE_PRECEDENCE`): the instance positives are always kept, so
    ``augmented`` is gold ∪ annotated and a human "irrelevant" on an instance positive is a
    conflict counted in ``Judgments.overruled`` (see :func:`label_warnings`). An explicit
    precedence overrides it.
    """
    precedence = FIRE_PRECEDENCE if precedence is None else precedence
    check_precedence(precedence)
    sets: dict[str, Judgments] = {}
    instance = collection.instance_judgments()
    if include_instance:
        sets["original"] = instance
    parsed = [split_label_spec(s) for s in specs]
    named: dict[str, str] = {}
    for (name, _), spec in zip(parsed, specs, strict=True):
        if name is None or not separate_named:
            continue
        if name in named or name in sets or name == augmented_name:
            raise InputError(
                f"label set name {name!r} given twice or reserved ({os.fspath(spec)}); "
                f"expected NAME=PATH with a new NAME (not original or {augmented_name})"
            )
        named[name] = os.fspath(spec)
    base = [instance] if include_instance else []
    extra = [load_labels(p, collection) for n, p in parsed if n is None or not separate_named]
    if extra:
        sets[augmented_name] = merge(base + extra, precedence)
    for n, p in parsed:
        if n is not None and separate_named:
            sets[n] = merge(base + [load_labels(p, collection)], precedence)
    if not sets:
        raise FirevalError("no labels: give --labels or keep the instance labels")
    return sets


def label_warnings(
    sets: Mapping[str, Judgments], *, preset: str | None = None, explicit: bool = False
) -> list[str]:
    """One line per label set with conflicting labels (which source lost how many pairs), and one
    per label set whose instance positives took another source's grade (``Judgments.regraded``).

    With ``preset="fire2023"`` and an ``explicit`` precedence under which instance positives
    were overruled, the line says that this is not FIRE's gold ∪ annotated.

    Then the lines the label readers left in ``Judgments.warnings`` (FIRE JSON: records not
    joined, texts shared by several captions, conflicting records), each once.
    """
    out = []
    for name, j in sets.items():
        lost = {s: n for s, n in j.overruled.items() if n}
        if not lost:
            continue
        what = ", ".join(f"{n} {s} label(s)" for s, n in lost.items())
        line = f"labels {name!r}: {what} conflict with a source earlier in the precedence and were not used"
        if not explicit and "human" in lost:
            line += " (FIRE semantics: the instance positives are kept; --precedence changes this)"
        elif "instance" in lost and preset == "fire2023":
            line += " (--precedence overrides the fire2023 preset: FIRE keeps every instance positive)"
        out.append(line)
    for name, j in sets.items():
        graded = {s: n for s, n in j.regraded.items() if n}
        if graded:
            what = ", ".join(f"{n} take the grade of their {s} label" for s, n in graded.items())
            out.append(f"labels {name!r}: instance positives carry no grade: {what}")
    # the readers' own lines (``Judgments.warnings``, e.g. FIRE records not joined); each names its
    # file, so a file used by several label sets is reported once
    out.extend(dict.fromkeys(w for j in sets.values() for w in j.warnings))
    return out


def check_precedence(precedence: Sequence[str]) -> None:
    """Each entry must be a source kind (``human``) or a source name of a kind (``proxy:bow``),
    listed once.

    A typo would otherwise rank last silently and change which label wins a conflict; a repeat
    says the user meant another order.
    """
    from fireval.core.judgments import SOURCE_KINDS, source_kind

    if not list(precedence):
        raise InputError(
            f"--precedence is empty; expected source kinds such as {','.join(DEFAULT_PRECEDENCE)}"
        )
    for key in precedence:
        try:
            source_kind(str(key))
        except InputError:
            raise InputError(
                f"--precedence: unknown label source {key!r}; expected kinds {', '.join(SOURCE_KINDS)} "
                "or a source name such as proxy:bow"
            ) from None
    seen = [str(k) for k in precedence]
    if dup := next((k for i, k in enumerate(seen) if k in seen[:i]), None):
        raise InputError(
            f"--precedence: {dup!r} is listed twice; list each source once, in the order that wins"
        )


def common_queries(labels: Mapping[str, Judgments]) -> dict[str, npt.NDArray[np.bool_]]:
    """Per direction, the queries with at least one relevant doc under *any* of the label sets.

    Comparing label sets over this union keeps a query that lost (or gained) every positive in
    both means: where it has no relevant doc it counts as a failure
    (:func:`fireval.metrics.evaluate.no_relevant_value`) instead of silently leaving one side.
    """
    out: dict[str, npt.NDArray[np.bool_]] = {}
    for d in (Direction.T2V, Direction.V2T):
        masks = [j.has_relevant(d) for j in labels.values()]
        out[d.value] = np.logical_or.reduce(masks) if masks else np.zeros(0, bool)
    return out
