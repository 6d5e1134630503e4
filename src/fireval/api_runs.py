"""Runs from files, arguments and in-memory scores (part of :mod:`fireval.api`, which re-exports it).

- :func:`load_run`: a ``.npy``/``.npz`` score matrix (memory-mapped) or a TREC run file, or the
  scores themselves; :func:`as_score_matrix` makes a 2-D float numpy view of arrays, torch
  tensors (any device, torch never imported here), CuPy arrays and array-likes;
  :func:`run_from_array` a dense :class:`~fireval.core.Run` in either orientation;
  :func:`check_matrix_shape` names a transposed or wrong-sized matrix.
- Run arguments: :func:`split_run_spec` (``NAME=PATH`` or a path; an existing file is a path
  even with ``=`` in it, a name holds no ``/``), :func:`run_stem` (the default name: the file
  name without compression suffixes and extension) and :func:`load_runs` (names checked before
  any file is read; a repeated stem gets ``'``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core import Collection, Direction, InputError, Run


def load_run(
    path: str | os.PathLike[str] | Any,
    collection: Collection,
    *,
    name: str | None = None,
    direction: str = "t2v",
    query_ids: str | Path | None = None,
    doc_ids: str | Path | None = None,
) -> Run:
    """Read a run: ``.npy``/``.npz`` score matrices (memory-mapped) or a TREC run file.

    ``path`` may also be the scores themselves: a numpy array, a torch tensor (any device) or
    anything array-like (see :func:`as_score_matrix`), in collection order, captions x videos
    (``direction="v2t"``: videos x captions). ``query_ids``/``doc_ids`` are for files only.
    """
    from fireval import formats

    if isinstance(path, Run):
        return (
            path if name is None else Run(name=name, scores=path.scores, lists=path.lists, source=path.source)
        )
    if not isinstance(path, str | os.PathLike):
        if query_ids is not None or doc_ids is not None:
            raise InputError(
                "query_ids/doc_ids name the rows of a score file; put an array in collection order"
            )
        return run_from_array(path, collection, name=name, direction=direction)
    from fireval.formats.runs import run_kind

    p = Path(path)
    if not p.exists():
        raise InputError("run file not found", source=str(p))
    if run_kind(p) in ("npy", "npz"):
        return formats.read_scores(
            p, collection, direction=direction, query_ids=query_ids, doc_ids=doc_ids, name=name
        )
    run = formats.read_trec_run(p, collection, direction=direction)
    return run if name is None else Run(name=name, scores=run.scores, lists=run.lists, source=run.source)


def as_score_matrix(scores: Any) -> npt.NDArray[np.floating]:
    """A 2-D float numpy view of ``scores`` without copying when it can.

    A torch tensor (detected by its type's module, so torch is never imported here) is
    detached and moved to the CPU (``bfloat16`` is widened to float32, which numpy lacks); a
    CuPy array is copied to the host; anything else goes through ``numpy.asarray``. float16
    is widened to float32 and integers/booleans to float64. NaN and ``+inf`` are refused when
    the scores are evaluated (``-inf`` means "not retrieved").
    """
    module = type(scores).__module__ or ""
    try:
        if module.startswith("torch"):
            t = scores.detach()
            if str(getattr(t, "dtype", "")) == "torch.bfloat16":
                t = t.float()
            arr = np.asarray(t.cpu().numpy())
        elif module.startswith("cupy"):
            arr = np.asarray(scores.get())
        else:
            arr = np.asarray(scores)
    except (TypeError, ValueError, AttributeError, RuntimeError) as exc:
        raise InputError(
            f"cannot read the scores ({type(scores).__name__}) as a numeric array: {exc}"
        ) from None
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    elif arr.dtype.kind in "iub":
        arr = arr.astype(np.float64)
    elif arr.dtype.kind != "f":
        raise InputError(f"scores must be real numbers, found dtype {arr.dtype} ({type(scores).__name__})")
    if arr.ndim != 2:
        raise InputError(f"scores must be a 2-D matrix (captions x videos), got shape {arr.shape}")
    return arr


def run_from_array(
    scores: Any, collection: Collection, *, name: str | None = None, direction: str = "t2v"
) -> Run:
    """A dense :class:`Run` over ``collection`` from an in-memory matrix (see :func:`as_score_matrix`).

    ``direction`` is the matrix's orientation: ``t2v`` = rows are captions (collection order),
    ``v2t`` = rows are videos (transposed lazily, as a view).
    """
    d = Direction.parse(direction)
    if (type(scores).__module__ or "").startswith("pandas") and hasattr(scores, "columns"):
        from fireval.formats.scores import frame_scores  # a DataFrame's labels win over positions

        scores = frame_scores(scores, collection, d)
    m = as_score_matrix(scores)
    check_matrix_shape(m.shape, collection, d)
    return Run(name=name or "run", scores=m if d is Direction.T2V else m.T)


def _on_device(scores: Any) -> bool:
    """A tensor on an accelerator (``fireval.evaluate`` counts it there; torch is not imported to tell)."""
    from fireval.torch.tensors import on_device

    return on_device(scores)


def check_matrix_shape(shape: tuple[int, ...], collection: Collection, d: Direction) -> None:
    """Raise :class:`InputError` unless a score matrix of ``shape`` covers ``collection`` in orientation ``d``."""
    want = collection.shape if d is Direction.T2V else collection.shape[::-1]
    if tuple(shape) != tuple(want):
        hint = ""
        if tuple(shape) == tuple(want[::-1]):
            hint = (
                " (it looks transposed: pass scores.T, or fireval.api.load_run(scores, collection, "
                f"direction={'v2t' if d is Direction.T2V else 't2v'!r}); fireval.evaluate's direction= "
                "picks the directions to evaluate)"
            )
        raise InputError(
            f"scores have shape {tuple(shape)} but {d.value} over collection {collection.name!r} "
            f"({collection.n_captions} captions x {collection.n_videos} videos) expects {tuple(want)}{hint}"
        )


#: compression suffixes stripped before the run's own extension when naming a run
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zip")


def run_stem(path: str | Path) -> str:
    """A run's default name: the file name without compression suffixes, then its extension
    (``c4c.run.gz`` → ``c4c``, ``a.npy`` → ``a``)."""
    p = Path(path)
    while p.suffix.lower() in _COMPRESSION_SUFFIXES and p.stem:
        p = p.with_suffix("")
    return p.stem or p.name


def split_run_spec(spec: str | os.PathLike[str]) -> tuple[str | None, str]:
    """``(NAME, PATH)`` of a run argument ``NAME=PATH``, or ``(None, PATH)`` for a plain path.

    The rules every verb that takes runs follows (``evaluate``, ``compare``, ``report``,
    ``budget``, ``serve`` through :func:`load_runs`):

    - a spec that exists as a file is a path, even when it contains ``=`` (``lr=0.1.npy``);
    - otherwise the first ``=`` splits it, unless the text before it contains a path separator
      (``runs/lr=0.1/sims.npy`` is a path, not a name): names cannot hold ``/`` and paths may
      hold ``=`` (``mine=runs/lr=0.1/sims.npy`` names ``mine``);
    - an empty name (``=x.npy``) or an empty path (``a=``) is an :class:`InputError`.
    """
    s = os.fspath(spec)
    if "=" not in s or Path(s).exists():
        return None, s
    name, _, path = s.partition("=")
    if "/" in name or os.sep in name:
        return None, s
    if not name.strip():
        raise InputError(f"{s}: empty run name before '='; expected NAME=PATH or a path")
    if not path:
        raise InputError(f"{s}: no path after '='; expected NAME=PATH")
    return name.strip(), path


def load_runs(
    paths: Sequence[str | os.PathLike[str]], collection: Collection, *, direction: str = "t2v"
) -> dict[str, Run]:
    """Read several runs given as ``PATH`` or ``NAME=PATH`` (rules: :func:`split_run_spec`).

    ``NAME=PATH`` names the run ``NAME``; a plain path is named by its file stem (``a.npy`` →
    ``a``, ``c4c.run.gz`` → ``c4c``; a repeated stem gets ``'``, so ``e1/sims.npy e2/sims.npy``
    are ``sims`` and ``sims'``: name them ``a=e1/sims.npy b=e2/sims.npy``). A ``NAME`` given
    twice, or equal to another run's stem, is an :class:`InputError`. Every spec is parsed
    before any file is read.
    """
    parsed = [split_run_spec(p) for p in paths]
    explicit: dict[str, str] = {}
    for (name, _), spec in zip(parsed, paths, strict=True):
        if name is None:
            continue
        if name in explicit:
            raise InputError(f"run name {name!r} given twice ({explicit[name]}, {os.fspath(spec)})")
        explicit[name] = os.fspath(spec)
    for name, path in parsed:
        if name is None and run_stem(path) in explicit:
            stem = run_stem(path)
            raise InputError(
                f"run name {stem!r} given twice ({explicit[stem]}, and {path} by its file stem); "
                "name that run with NAME=PATH"
            )
    runs: dict[str, Run] = {}
    for name, path in parsed:
        if name is None:
            name = run_stem(path)
            while name in runs or name in explicit:
                name += "'"
        runs[name] = load_run(path, collection, name=name, direction=direction)
    return runs
