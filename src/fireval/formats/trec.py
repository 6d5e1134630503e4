"""TREC qrels (``qid 0 docid rel``) and run files (``qid Q0 docid rank score tag``).

Conventions follow trec_eval (and hence ranx / ir_measures):

- Fields are separated by any whitespace; ids may not contain whitespace.
- qrels: the second field (iteration) is ignored; ``rel`` is a number. ``rel > 0`` is a
  relevance grade, ``rel <= 0`` means *judged irrelevant* (stored as grade 0, as trec_eval
  treats ``rel < 1`` as non-relevant). A repeated (qid, docid) is an error: with the same grade
  an :class:`InputError`, with a different grade a :class:`ConflictError`; both name the lines.
- run: the rank field is ignored; documents are ordered by score, as trec_eval does (it
  sorts by descending score and breaks ties by docid; fireval keeps ties as ties and lets
  the evaluation's tie policy decide). A repeated (qid, docid) is an error. ``-inf`` scores
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
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from fireval.atomic import atomic_write
from fireval.core import Collection, ConflictError, Direction, InputError, Judgments, RankedLists, Run
from fireval.formats.textio import PathLike, read_text


def _read_table(path: PathLike, n_fields: int, what: str) -> pd.DataFrame:
    """Whitespace-separated table with ``n_fields`` columns; index = 0-based line number."""
    src = str(path)
    text = read_text(path)
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=r"\s+",
            header=None,
            names=list(range(n_fields)),
            index_col=False,
            dtype=str,
            skip_blank_lines=False,
            keep_default_na=False,
            quoting=csv.QUOTE_NONE,
            engine="c",
        )
    except pd.errors.ParserError as exc:
        m = re.search(r"line (\d+), saw (\d+)", str(exc))
        if m:
            raise InputError(
                f"expected {n_fields} fields in a {what} line, found {m.group(2)}",
                source=src,
                line=int(m.group(1)),
            ) from None
        raise InputError(f"malformed {what}: {str(exc).strip()}", source=src) from None
    blank = (df == "").all(axis=1).to_numpy()
    df = df[~blank]
    short = (df == "").any(axis=1).to_numpy()
    if short.any():
        line = int(df.index[np.flatnonzero(short)[0]]) + 1
        n = int((df.loc[line - 1] != "").sum())
        raise InputError(f"expected {n_fields} fields in a {what} line, found {n}", source=src, line=line)
    if df.empty:
        raise InputError("file is empty", source=src)
    return df


def _index(ids: pd.Series, index: dict[str, int], what: str, src: str) -> npt.NDArray[np.int64]:
    pos = pd.Index(list(index)).get_indexer(ids.to_numpy())
    bad = np.flatnonzero(pos < 0)
    if bad.size:
        i = bad[0]
        raise InputError(f"unknown {what} id {ids.iloc[i]!r}", source=src, line=int(ids.index[i]) + 1)
    return pos.astype(np.int64)


def _numbers(col: pd.Series, what: str, src: str) -> npt.NDArray[np.float64]:
    vals = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(np.isnan(vals) & (col.str.lower().to_numpy() != "nan"))
    if bad.size:
        i = bad[0]
        raise InputError(f"{what} {col.iloc[i]!r} is not a number", source=src, line=int(col.index[i]) + 1)
    return vals


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
    """Read ``qid 0 docid rel`` lines into :class:`Judgments` labelled with ``source``."""
    src = str(path)
    d = Direction.parse(direction)
    df = _read_table(path, 4, "qrels")
    qindex, dindex, qwhat, dwhat = _sides(collection, d)
    q = _index(df[0], qindex, qwhat, src)
    doc = _index(df[2], dindex, dwhat, src)
    rel = _numbers(df[3], "relevance", src)
    if not np.all(np.isfinite(rel)):
        i = int(np.flatnonzero(~np.isfinite(rel))[0])
        raise InputError(f"relevance {df[3].iloc[i]!r} is not finite", source=src, line=int(df.index[i]) + 1)
    lines = df.index.to_numpy() + 1
    first, rep = _duplicates(q, doc, len(dindex))
    if rep.size:
        i, j = int(first[0]), int(rep[0])
        where = f"query {df[0].iloc[j]!r}, doc {df[2].iloc[j]!r} on lines {lines[i]} and {lines[j]}"
        if rel[i] != rel[j]:
            raise ConflictError(
                f"conflicting grades {rel[i]:g} and {rel[j]:g} for {where}", source=src, line=int(lines[j])
            )
        raise InputError(f"duplicate judgment for {where}", source=src, line=int(lines[j]))
    grades = np.maximum(rel, 0.0)
    rows, cols = (q, doc) if d is Direction.T2V else (doc, q)
    return Judgments.from_arrays(collection.shape, rows, cols, grades, source, origin=src)


def read_trec_run(
    path: PathLike, collection: Collection, direction: Direction | str = "t2v", *, name: str | None = None
) -> Run:
    """Read ``qid Q0 docid rank score tag`` lines into a :class:`Run` of ranked lists.

    Queries missing from the file retrieved nothing. The run is named ``name``, else the tag
    (when one tag is used throughout), else the file stem.
    """
    src = str(path)
    d = Direction.parse(direction)
    df = _read_table(path, 6, "run")
    qindex, dindex, qwhat, dwhat = _sides(collection, d)
    q = _index(df[0], qindex, qwhat, src)
    doc = _index(df[2], dindex, dwhat, src)
    score = _numbers(df[4], "score", src)
    bad = np.flatnonzero(np.isnan(score) | np.isposinf(score))
    if bad.size:
        i = int(bad[0])
        raise InputError(
            f"score {df[4].iloc[i]!r} is not allowed (use -inf to exclude)",
            source=src,
            line=int(df.index[i]) + 1,
        )
    lines = df.index.to_numpy() + 1
    first, rep = _duplicates(q, doc, len(dindex))
    if rep.size:
        i, j = int(first[0]), int(rep[0])
        raise InputError(
            f"document {df[2].iloc[j]!r} listed twice for query {df[0].iloc[j]!r} (lines {lines[i]} and {lines[j]})",
            source=src,
            line=int(lines[j]),
        )
    nq = len(qindex)
    order = np.lexsort((doc, -score, q))
    q, doc, score = q[order], doc[order], score[order]
    indptr = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(np.bincount(q, minlength=nq), out=indptr[1:])
    lists = RankedLists(direction=d, shape=(nq, len(dindex)), indptr=indptr, docs=doc, scores=score)
    if name is None:
        tags = df[5].unique()
        name = str(tags[0]) if tags.size == 1 else Path(src).stem
    return Run(name=name, lists=lists, source=src)


def _check_ids(ids: npt.NDArray[np.object_], what: str) -> None:
    bad = [x for x in ids if not x or any(ch.isspace() for ch in x)]
    if bad:
        raise InputError(f"{what} id {bad[0]!r} is empty or contains whitespace; TREC files cannot hold it")


def _fmt_grades(g: npt.NDArray[np.float64]) -> list[str]:
    if np.all(g == np.round(g)) and np.all(np.abs(g) < 2**53):
        return [str(x) for x in g.astype(np.int64).tolist()]
    return [repr(x) for x in g.tolist()]


def write_trec_qrels(
    path: PathLike, judgments: Judgments, collection: Collection, direction: Direction | str = "t2v"
) -> None:
    """Write every judged pair (grade 0 = judged irrelevant) as ``qid 0 docid grade``.

    Lines are sorted by query then doc in collection order.
    """
    d = Direction.parse(direction)
    if judgments.shape != collection.shape:
        raise InputError(f"judgments cover {judgments.shape} but the collection is {collection.shape}")
    qi, di = (judgments.rows, judgments.cols) if d is Direction.T2V else (judgments.cols, judgments.rows)
    order = np.lexsort((di, qi))
    qids = np.asarray(collection.query_ids(d), dtype=object)
    dids = np.asarray(collection.doc_ids(d), dtype=object)
    qs, ds = qids[qi[order]], dids[di[order]]
    _check_ids(np.unique(qs), "query")
    _check_ids(np.unique(ds), "doc")
    grades = _fmt_grades(judgments.grades[order])
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
