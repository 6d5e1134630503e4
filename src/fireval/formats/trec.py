"""TREC qrels (``qid 0 docid rel``) and run files (``qid Q0 docid rank score tag``).

Conventions follow trec_eval (and hence ranx / ir_measures):

- Fields are separated by any whitespace; ids may not contain whitespace.
- qrels: recognised by content (:func:`~fireval.formats.textio.label_format`: FIRE JSON or a
  graded-label ``.npz`` under a qrels name is read as what it is); the second field
  (iteration) is ignored; ``rel`` is an integer of at most
  :data:`~fireval.formats.grades.GRADE_MAX` (100; any real in range for ``proxy:*`` sources).
  ``rel > 0`` is a relevance grade, ``rel = 0`` means *judged irrelevant*, ``rel < 0`` means
  *in the pool but not judged* (trec_eval's ``RELVALUE_UNJUDGED``): the pair stays unjudged and
  is marked in ``Judgments.pooled``, which only infAP reads. A repeated (qid, docid) is an error: with the same grade
  an :class:`InputError`, with a different grade a :class:`ConflictError`; both name the lines.
- run: the rank field is ignored; documents are ordered by score, as trec_eval does (it
  sorts by descending score and breaks ties by docid; fireval keeps ties as ties and lets
  the evaluation's tie policy decide). A run whose listed scores are one value per query
  (say, every score 1.0, the order only in the rank column) is read as it is, each list one tie;
  the truncation check (:func:`fireval.checks.truncation.constant_scores`) warns about it and
  suggests a score column (e.g. ``-rank``). A repeated (qid, docid) is an error. ``-inf`` scores
  are allowed (not retrieved); NaN and ``+inf`` are errors.
- Query ids are captions (t2v) or videos (v2t); doc ids the other side. Unknown ids raise an
  :class:`InputError` naming the file, the line and the id.

Writers are atomic and write grades/scores losslessly: integral grades as integers, scores
with Python's shortest round-trip ``repr`` of the float64 value.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from fireval.atomic import atomic_write
from fireval.core import Collection, ConflictError, Direction, InputError, Judgments, RankedLists, Run
from fireval.formats.grades import bad_grade
from fireval.formats.textio import PathLike, label_format, read_text

if TYPE_CHECKING:  # pandas loads when a TREC file is read, not with `fireval.formats`
    import pandas as pd


class _Table:
    """A parsed whitespace table: ``df`` holds the non-blank lines in order; ``line(i)`` maps row
    ``i`` back to its 1-based line number (computed only when an error is reported)."""

    def __init__(self, df: pd.DataFrame, text: str, src: str) -> None:
        self.df, self._text, self.src = df, text, src
        self._lines: npt.NDArray[np.int64] | None = None

    def line(self, row: int) -> int:
        if self._lines is None:
            flags = [bool(ln.strip()) for ln in self._text.splitlines()]
            self._lines = np.flatnonzero(flags) + 1
        return int(self._lines[row])


def _read_table(path: PathLike, n_fields: int, what: str, float_col: int) -> _Table:
    """Parse ``n_fields`` whitespace-separated columns; column ``float_col`` as float64.

    Fast path: pandas' C parser with typed columns. If that fails (a short line, a non-number),
    the file is re-read as text to name the offending line.
    """
    import pandas as pd

    src = str(path)
    text = read_text(path)
    kw: dict = dict(
        sep=r"\s+",
        header=None,
        names=list(range(n_fields)),
        index_col=False,
        skip_blank_lines=True,
        na_filter=False,
        quoting=csv.QUOTE_NONE,
        engine="c",
    )
    typed = {i: (np.float64 if i == float_col else object) for i in range(n_fields)}
    try:
        # pandas drops the fields past ``names`` with only a ParserWarning: a line with too many
        # fields must be an error naming the line, not a silently shortened record
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            try:
                df = pd.read_csv(io.StringIO(text), dtype=typed, **kw)
                slow = False
            except pd.errors.ParserError:
                raise
            except pd.errors.ParserWarning:
                raise _too_many_fields(text, n_fields, what, src) from None
            except ValueError:
                df = pd.read_csv(io.StringIO(text), dtype=object, **kw)
                slow = True
    except pd.errors.ParserWarning:
        raise _too_many_fields(text, n_fields, what, src) from None
    except pd.errors.ParserError as exc:
        m = re.search(r"line (\d+), saw (\d+)", str(exc))
        if m:
            raise InputError(
                f"expected {n_fields} fields in a {what} line, found {m.group(2)}",
                source=src,
                line=int(m.group(1)),
            ) from None
        raise InputError(f"malformed {what}: {str(exc).strip()}", source=src) from None
    table = _Table(df.reset_index(drop=True), text, src)
    if df.empty:
        raise InputError("file is empty", source=src)
    last = n_fields - 1
    if slow or last != float_col:
        short = np.flatnonzero((table.df[last] == "").to_numpy())
        if short.size:
            i = int(short[0])
            n = int((table.df.loc[i] != "").sum())
            raise InputError(
                f"expected {n_fields} fields in a {what} line, found {n}", source=src, line=table.line(i)
            )
    if slow:
        col = table.df[float_col]
        vals = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(np.isnan(vals) & (col.str.lower().to_numpy() != "nan"))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{what} value {col.iloc[i]!r} is not a number", source=src, line=table.line(i))
        table.df[float_col] = vals
    return table


def _too_many_fields(text: str, n_fields: int, what: str, src: str) -> InputError:
    """The error for the first line with more than ``n_fields`` fields (the slow path of an error)."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        n = len(line.split())
        if n > n_fields:
            return InputError(
                f"expected {n_fields} fields in a {what} line, found {n}", source=src, line=lineno
            )
    return InputError(f"malformed {what}: a line has more than {n_fields} fields", source=src)


def _index(
    table: _Table,
    col: int,
    index: dict[str, int],
    what: str,
    other: dict[str, int] | None = None,
    other_direction: str = "",
    kind: str = "run",
) -> npt.NDArray[np.int64]:
    """Positions of column ``col``'s ids in ``index``; an unknown id raises naming its line.

    ``other`` is the index of the other side: an id found there means the file is in the other
    orientation, and the message says how to read it (``kind``: ``run`` or ``qrels``).
    """
    ids = table.df[col].to_numpy()
    pos = np.fromiter((index.get(x, -1) for x in ids), dtype=np.int64, count=ids.size)
    bad = np.flatnonzero(pos < 0)
    if bad.size:
        i = int(bad[0])
        hint = ""
        if other is not None and ids[i] in other and kind == "qrels":
            hint = (
                f" (an id of the other side: the qrels look transposed; read them with direction "
                f"{other_direction!r}: fireval.formats.read_trec_qrels(path, collection, "
                f"direction={other_direction!r}); label files given with -l/--labels list the caption "
                "id first)"
            )
        elif other is not None and ids[i] in other:
            hint = (
                f" (an id of the other side: the file looks transposed; read it with direction "
                f"{other_direction!r}, on the command line --run-direction {other_direction}, while "
                "-d/--direction only picks the direction to evaluate)"
            )
        raise InputError(f"unknown {what} id {ids[i]!r}{hint}", source=table.src, line=table.line(i))
    return pos


def _sides(collection: Collection, direction: Direction) -> tuple[dict[str, int], dict[str, int], str, str]:
    if direction is Direction.T2V:
        return collection.caption_index, collection.video_index, "caption (query)", "video (doc)"
    return collection.video_index, collection.caption_index, "video (query)", "caption (doc)"


def _duplicates(
    q: npt.NDArray[np.int64], d: npt.NDArray[np.int64], nd: int
) -> tuple[npt.NDArray, npt.NDArray]:
    """Positions (first, repeat) of repeated (q, d) pairs, in file order."""
    key = q * nd + d
    order = np.argsort(key, kind="stable")
    sk = key[order]
    rep = np.flatnonzero(sk[1:] == sk[:-1]) + 1
    first_of_group = np.maximum.accumulate(np.where(np.r_[True, sk[1:] != sk[:-1]], np.arange(sk.size), 0))
    return order[first_of_group[rep]], order[rep]


def read_trec_qrels(
    path: PathLike, collection: Collection, direction: Direction | str = "t2v", source: str = "human"
) -> Judgments:
    """Read ``qid 0 docid rel`` lines into :class:`Judgments` labelled with ``source``.

    The content decides, not the name: a file that holds FIRE JSON or a graded-label ``.npz``
    (say, FIRE JSON saved as ``labels.txt``) is read by that format's reader
    (:func:`fireval.formats.labelfmt.read_label_content`, as
    :func:`fireval.formats.labels.read_labels` does; ``source`` is then the file's own).
    """
    src = str(path)
    d = Direction.parse(direction)
    kind = label_format(path)
    if kind != "qrels":
        from fireval.formats.labelfmt import read_label_content  # imported here: only other formats need it

        return read_label_content(Path(path), collection, kind)
    t = _read_table(path, 4, "qrels", float_col=3)
    qindex, dindex, qwhat, dwhat = _sides(collection, d)
    flip = "v2t" if d is Direction.T2V else "t2v"
    q = _index(t, 0, qindex, qwhat, other=dindex, other_direction=flip, kind="qrels")
    doc = _index(t, 2, dindex, dwhat)
    rel = t.df[3].to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(rel)):
        i = int(np.flatnonzero(~np.isfinite(rel))[0])
        raise InputError(f"relevance {rel[i]} is not finite", source=src, line=t.line(i))
    found = bad_grade(rel, source, allow_negative=True)
    if found is not None:
        raise InputError(found[1], source=src, line=t.line(found[0]))
    first, rep = _duplicates(q, doc, len(dindex))
    if rep.size:
        i, j = int(first[0]), int(rep[0])
        li, lj = t.line(i), t.line(j)
        where = f"query {t.df[0].iloc[j]!r}, doc {t.df[2].iloc[j]!r} on lines {li} and {lj}"
        if rel[i] != rel[j]:
            raise ConflictError(
                f"conflicting grades {rel[i]:g} and {rel[j]:g} for {where}", source=src, line=lj
            )
        raise InputError(f"duplicate judgment for {where}", source=src, line=lj)
    rows, cols = (q, doc) if d is Direction.T2V else (doc, q)
    pool = rel < 0  # trec_eval's RELVALUE_UNJUDGED: in the pool, not judged (Judgments.pooled)
    return Judgments.from_arrays(
        collection.shape,
        rows[~pool],
        cols[~pool],
        rel[~pool],
        source,
        origin=src,
        pooled=np.stack([rows[pool], cols[pool]], axis=1),
    )


def read_trec_run(
    path: PathLike, collection: Collection, direction: Direction | str = "t2v", *, name: str | None = None
) -> Run:
    """Read ``qid Q0 docid rank score tag`` lines into a :class:`Run` of ranked lists.

    Queries missing from the file retrieved nothing. The run is named ``name``, else the tag
    (when one tag is used throughout), else the file stem.
    """
    src = str(path)
    d = Direction.parse(direction)
    t = _read_table(path, 6, "run", float_col=4)
    qindex, dindex, qwhat, dwhat = _sides(collection, d)
    flip = "v2t" if d is Direction.T2V else "t2v"
    q = _index(t, 0, qindex, qwhat, other=dindex, other_direction=flip)
    doc = _index(t, 2, dindex, dwhat)
    score = t.df[4].to_numpy(dtype=np.float64)
    bad = np.flatnonzero(np.isnan(score) | np.isposinf(score))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"score {score[i]} is not allowed (use -inf to exclude)", source=src, line=t.line(i))
    first, rep = _duplicates(q, doc, len(dindex))
    if rep.size:
        i, j = int(first[0]), int(rep[0])
        raise InputError(
            f"document {t.df[2].iloc[j]!r} listed twice for query {t.df[0].iloc[j]!r} "
            f"(lines {t.line(i)} and {t.line(j)})",
            source=src,
            line=t.line(j),
        )
    nq = len(qindex)
    order = np.lexsort((doc, -score, q))
    q, doc, score = q[order], doc[order], score[order]
    indptr = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(np.bincount(q, minlength=nq), out=indptr[1:])
    lists = RankedLists(direction=d, shape=(nq, len(dindex)), indptr=indptr, docs=doc, scores=score)
    if name is None:
        tags = t.df[5].unique()
        name = str(tags[0]) if tags.size == 1 else Path(src).stem
    return Run(name=name, lists=lists, source=src)


def _check_ids(ids: npt.NDArray[np.object_], what: str) -> None:
    bad = [x for x in ids if not x or any(ch.isspace() for ch in x)]
    if bad:
        raise InputError(f"{what} id {bad[0]!r} is empty or contains whitespace; TREC files cannot hold it")


def _fmt_grades(g: npt.NDArray[np.floating]) -> list[str]:  # float64, or float32 grades
    if np.all(g == np.round(g)) and np.all(np.abs(g) < 2**53):
        return [str(x) for x in g.astype(np.int64).tolist()]
    return [repr(x) for x in g.tolist()]


def write_trec_qrels(
    path: PathLike, judgments: Judgments, collection: Collection, direction: Direction | str = "t2v"
) -> None:
    """Write every judged pair (grade 0 = judged irrelevant) as ``qid 0 docid grade``, and every
    pooled but unjudged pair (:attr:`Judgments.pooled`) as ``qid 0 docid -1`` (trec_eval's
    convention, which :func:`read_trec_qrels` reads back as a pooled mark).

    Lines are sorted by query then doc in collection order.
    """
    d = Direction.parse(direction)
    if judgments.shape != collection.shape:
        raise InputError(f"judgments cover {judgments.shape} but the collection is {collection.shape}")
    pooled = np.asarray(judgments.pooled, np.int64).reshape(-1, 2)
    rows = np.concatenate([np.asarray(judgments.rows, np.int64), pooled[:, 0]])
    cols = np.concatenate([np.asarray(judgments.cols, np.int64), pooled[:, 1]])
    qi, di = (rows, cols) if d is Direction.T2V else (cols, rows)
    order = np.lexsort((di, qi))
    qids = np.asarray(collection.query_ids(d), dtype=object)
    dids = np.asarray(collection.doc_ids(d), dtype=object)
    qs, ds = qids[qi[order]], dids[di[order]]
    _check_ids(np.unique(qs), "query")
    _check_ids(np.unique(ds), "doc")
    text = np.asarray(_fmt_grades(judgments.grades), dtype=object)
    grades = np.concatenate([text, np.full(pooled.shape[0], "-1", dtype=object)])[order]
    with atomic_write(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.writelines(f"{a} 0 {b} {g}\n" for a, b, g in zip(qs, ds, grades, strict=True))


def top_k(
    run: Run, direction: Direction | str, depth: int, chunk_elems: int = 8 * 2**20
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]]:
    """Yield ``(query, doc, score)`` arrays of the top ``depth`` docs per query, in row chunks.

    Order within a query: descending score, ties by collection doc order (lowest index
    first); the same rule decides which tied docs make the cut at ``depth``. ``-inf`` docs
    are never listed.
    """
    d = Direction.parse(direction)
    nq = run.n_queries(d)
    nd = run.shape[1] if d is Direction.T2V else run.shape[0]
    step = max(1, chunk_elems // max(1, nd))
    k = min(depth, nd)
    for start in range(0, nq, step):
        block = run.block(d, start, min(nq, start + step)).astype(np.float64, copy=False)
        if k < nd:
            kth = -np.partition(-block, k - 1, axis=1)[:, k - 1 : k]
            above = block > kth
            need = k - above.sum(axis=1, keepdims=True)
            tied = block == kth
            sel = above | (tied & (np.cumsum(tied, axis=1) <= need))
        else:
            sel = np.ones(block.shape, dtype=bool)
        sel &= block > -np.inf
        r, c = np.nonzero(sel)
        s = block[r, c]
        order = np.lexsort((c, -s, r))
        yield r[order] + start, c[order], s[order]


def write_trec_run(
    path: PathLike,
    run: Run,
    collection: Collection,
    direction: Direction | str = "t2v",
    depth: int = 100,
    tag: str | None = None,
) -> None:
    """Write the top ``depth`` documents per query as ``qid Q0 docid rank score tag``.

    Ranks start at 1 in the order of :func:`top_k`; scores are the float64 ``repr`` of the
    stored value (exact). ``-inf`` entries are not written. ``tag`` defaults to the run name.
    """
    d = Direction.parse(direction)
    if run.shape != collection.shape:
        raise InputError(f"run {run.name!r} covers {run.shape} but the collection is {collection.shape}")
    if depth < 1:
        raise InputError(f"depth must be >= 1, got {depth}")
    tag = tag or run.name
    if not tag or any(ch.isspace() for ch in tag):
        raise InputError(f"run tag {tag!r} is empty or contains whitespace")
    qids = np.asarray(collection.query_ids(d), dtype=object)
    dids = np.asarray(collection.doc_ids(d), dtype=object)
    _check_ids(qids, "query")
    _check_ids(dids, "doc")
    with atomic_write(path, "w", encoding="utf-8", newline="\n") as fh:
        for q, doc, s in top_k(run, d, depth):
            starts = np.r_[0, np.flatnonzero(q[1:] != q[:-1]) + 1]
            ranks = np.arange(q.size) - np.repeat(starts, np.diff(np.r_[starts, q.size])) + 1
            fh.writelines(
                f"{a} Q0 {b} {rk} {sc!r} {tag}\n"
                for a, b, rk, sc in zip(qids[q], dids[doc], ranks.tolist(), s.tolist(), strict=True)
            )
