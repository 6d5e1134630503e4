"""Label files that are not qrels, read by what they hold: graded ``.npz`` and FIRE JSON.

Both readers that choose by content, :func:`fireval.formats.labels.read_labels` and
:func:`fireval.formats.trec.read_trec_qrels`, hand every file whose content
(:func:`~fireval.formats.textio.label_format`) is not qrels to :func:`read_label_content`.
It sits below both of them, so neither imports the other to read the other's format:
``labels -> labelfmt``, ``trec -> labelfmt``, ``labels -> trec`` (for qrels), and nothing back.
"""

from __future__ import annotations

from pathlib import Path

from fireval.core import Collection, InputError, Judgments
from fireval.formats.graded_npz import read_graded_labels


def read_label_content(path: Path, collection: Collection, kind: str) -> Judgments:
    """Labels of ``kind`` ``"npz"`` (:func:`~fireval.formats.graded_npz.read_graded_labels`) or
    ``"fire"`` (:func:`read_fire_labels`) from ``path``, as ``label_format`` named them."""
    if kind == "npz":
        return read_graded_labels(path, collection)
    if kind == "fire":
        return read_fire_labels(path, collection)
    raise ValueError(f"not a non-qrels label format: {kind!r}")


def read_fire_labels(path: Path, collection: Collection) -> Judgments:
    """FIRE JSON labels, with the import's warnings in ``Judgments.warnings`` (not logged).

    Threshold on joining: a file with records none of which joins the collection (unknown
    video, caption text not in the collection, other dataset) is an :class:`InputError`,
    since it means labels of another collection or dataset and would silently change nothing;
    a partly joined file (e.g. FIRE labels over all of MSR-VTT evaluated on the 1k-A split) is
    normal and gives one warning line with the counts by reason. Pairs whose annotation
    records conflict (left unjudged) also give a warning line.
    """
    import dataclasses

    from fireval.formats.fire_json import read_fire_json  # imported here: writers do not need it

    imp = read_fire_json(path, collection, log=False)
    n_records = imp.n_annotations + imp.disagreements
    warnings = list(imp.warnings)
    if imp.unmatched:
        reasons = imp.summary()["unmatched_by_reason"]
        why = ", ".join(f"{n} {r}" for r, n in reasons.items())
        if len(imp.unmatched) == n_records:
            raise InputError(
                f"none of its {n_records} FIRE record(s) match the captions/videos of collection "
                f"{collection.name!r} ({why}); are these labels for another collection or dataset "
                "(check -c/--collection)?",
                source=str(path),
            )
        warnings.append(
            f"{path}: {len(imp.unmatched)} of {n_records} FIRE records could not be joined to collection "
            f"{collection.name!r} ({why}); they are not used"
        )
    if imp.conflicts:
        warnings.append(
            f"{path}: {imp.conflicts} caption-video pair(s) have FIRE annotation records with different "
            "labels; they stay unjudged"
        )
    if not warnings:
        return imp.judgments
    return dataclasses.replace(imp.judgments, warnings=(*imp.judgments.warnings, *warnings))
