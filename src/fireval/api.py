"""File-level entry points shared by the CLI and the web app.

These functions turn paths and label specs into core objects and run the library; the CLI
only parses arguments and prints. Everything here is also usable from Python::

    from fireval import api
    coll = api.load_collection("MSRVTT_JSFUSION_test.csv")
    runs = {"clip4clip": api.load_run("clip4clip.npy", coll)}
    labels = api.label_sets(coll, ["fire.json"])           # {"original": ..., "augmented": ...}
    result = api.evaluate_runs(runs, labels)

In memory (a training loop; arrays, torch tensors on any device, or array-likes)::

    ev = api.evaluate(sims, collection="msrvtt-1ka")      # also fireval.evaluate
    ev.to_dict(names="tvr")   # {"t2v": {"R@1": 0.421, ...}, "v2t": {...}}: fractions, like ev.value()
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fireval.core import (
    DEFAULT_PRECEDENCE,
    FIRE_PRECEDENCE,
    Collection,
    Direction,
    FirevalError,
    InputError,
    Judgments,
    Run,
    merge,
)

if TYPE_CHECKING:  # pandas loads when a table is first asked for (`fireval evaluate` prints from records)
    import pandas as pd

    from fireval.metrics import Evaluation

DB_PREFIXES = ("sqlite:", "postgresql:", "postgresql+", "postgres:")


def load_collection(path: str | Path | None = None, *, split: str | Path | None = None) -> Collection:
    """Read a collection, detecting its format.

    ``None``, ``"example"`` or a registered name (``"msrvtt-1ka"``; see
    :mod:`fireval.formats.registry`): a bundled collection. A file: any layout of
    :func:`fireval.formats.read_collection`, detected by content (JSFusion, ``video_id,sentence``
    CSV such as DiDeMo/ActivityNet/VATEX, MSR-VTT JSON, MSVD JSON with ``split``, YouCook2 JSON,
    EPIC-Kitchens-100 CSV, LSMDC TSV, JSONL; gzip-compressed or not).
    """
    from fireval import formats
    from fireval.formats import registry

    if path is None:
        return formats.example.load_example().collection
    if isinstance(path, str) and registry.canonical(path) and not Path(path).exists():
        return registry.load(path)
    p = Path(path)
    if str(path) == "-" and not p.exists():
        raise InputError(
            "-c -: reading the collection from standard input is not supported; give the collection "
            "file's path (a .gz file is read as is)"
        )
    if not p.exists():
        raise InputError("collection file not found", source=str(p))
    if p.is_dir():
        raise InputError("is a directory; give the collection file", source=str(p))
    return formats.read_collection(p, split)


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


def resolve_collection(collection: Collection | str | os.PathLike[str]) -> Collection:
    """A :class:`Collection` as given, a registered name (``"msrvtt-1ka"``) or a collection file."""
    if isinstance(collection, Collection):
        return collection
    if isinstance(collection, str | os.PathLike):
        path = os.fspath(collection)
        if isinstance(collection, str) and not Path(path).suffix and not Path(path).exists():
            from fireval.formats import registry

            return registry.load(path)  # a name, not a file: unknown names list the registered ones
        return load_collection(path)
    raise InputError(
        f"collection must be a Collection, a path or a registered name such as 'msrvtt-1ka', "
        f"got {type(collection).__name__}"
    )


def evaluate(
    scores: Any = None,
    collection: Collection | str | os.PathLike[str] | Judgments | None = None,
    labels: Judgments | str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    measures: Any = None,
    direction: str | Direction | Sequence[str | Direction] = "both",
    ties: str = "tie-aware",
    unjudged: str | Sequence[str] = "lower",
    preset: str | None = None,
    per_query: bool = False,
    name: str | None = None,
    checks: bool = False,
    **options: Any,
) -> Evaluation:
    """Evaluate in memory: scores (array, tensor, :class:`Run`) against a collection's labels.

    ``scores``: captions x videos in collection order (numpy array, torch tensor on any device,
    array-like, or a :class:`Run`). ``collection``: a :class:`Collection`, a file path or a
    registered name (``"msrvtt-1ka"``). ``labels``: None = the instance labels (each caption is
    relevant to its own video); a :class:`Judgments`; or a label spec / list of specs as
    ``fireval evaluate --labels`` takes (FIRE JSON, qrels, ``.npz``, store URL), merged with
    the instance labels (load them once outside a training loop and pass the Judgments).
    ``direction``: ``"both"``, ``"t2v"`` or ``"v2t"``. ``measures``: None = the default set
    (or the preset's). ``unjudged``: ``lower`` (default), ``upper``, ``condensed``, ``worst`` /
    ``best`` (exact bounds over every labelling of the unjudged pairs) or several.
    ``min_grade=G`` (``--min-grade``, trec_eval's ``-l``): the binary measures count a doc relevant
    when its grade is >= G (nDCG, nDCG_exp and infNDCG keep the grades). Other keywords
    (``chunk_rows``, ``progress``, ``run_name``, ``labels_name``) go to
    :func:`fireval.metrics.evaluate`.

    ``checks=True`` runs the per-run input checks of ``fireval evaluate`` (alignment with the
    collection's text, truncation, orientation; :mod:`fireval.checks`, docs/checks.md) and adds
    one line per failed or warned check to ``.warnings`` (e.g. a matrix whose rows are not in the
    collection's order); ``.checks`` holds the :class:`fireval.checks.ChecksReport`. Off by
    default, since a training loop evaluates the same, already checked, layout many times.

    Returns a :class:`fireval.metrics.Evaluation`: ``.table`` (tidy DataFrame), ``.value()``,
    and ``.to_dict(names="tvr")`` → ``{"t2v": {"R@1": 0.421, ...}, "v2t": {...}}`` as fractions
    like ``.value()`` (``units="percent"``: x100; MdR/MnR as ranks) for a logger. ``.warnings`` starts with the lines of
    :func:`label_warnings` for the labels used (what ``fireval evaluate`` prints: labels
    overruled by the precedence, instance positives graded by another source).

    The older form ``evaluate(run, judgments)`` still works.

    From embeddings instead of scores (:mod:`fireval.scale`, docs/scale.md):
    ``evaluate(collection=coll, text_emb=T, video_emb=V, sim="cosine", pool="mean",
    block_size=None, client=None)`` — arrays, ``.npy`` paths/shards or Zarr; the score matrix is
    never materialised; ``client`` (a ``dask.distributed.Client``) runs the blocks on Dask.
    """
    from fireval.metrics import DEFAULT_MEASURES
    from fireval.metrics import evaluate as _evaluate

    if isinstance(collection, Judgments):  # the older form evaluate(run, judgments)
        if labels is not None:
            raise InputError(
                "collection= is a Judgments; pass labels as labels= and the collection as collection="
            )
        collection, labels = None, collection
    coll = resolve_collection(collection) if collection is not None else None
    if checks and coll is None:
        raise InputError("checks=True needs collection= (the checks compare the run with its text)")
    labels_name = "original"
    label_ws: list[str] = []
    if labels is None or (isinstance(labels, str) and labels == "instance"):
        if coll is None:
            raise InputError(
                "give collection= (a Collection, a path or a registered name such as 'msrvtt-1ka') "
                "or labels= (Judgments)"
            )
        judg = coll.instance_judgments()
    elif isinstance(labels, Judgments):
        judg, labels_name = labels, "labels"
        label_ws = label_warnings({labels_name: judg}, preset=preset)
    else:
        if coll is None:
            raise InputError("label files need collection= to join captions and videos")
        specs = [os.fspath(x) for x in ([labels] if isinstance(labels, str | os.PathLike) else labels)]
        judg, labels_name = label_sets(coll, specs, separate_named=False)["augmented"], "augmented"
        label_ws = label_warnings({labels_name: judg}, preset=preset)  # what `fireval evaluate` prints
    emb_keys = ("text_emb", "video_emb", "sim", "pool", "text_ids", "video_ids", "block_size", "client")
    emb = {k: options.pop(k) for k in emb_keys if k in options}
    if emb.get("text_emb") is not None or emb.get("video_emb") is not None:  # fireval.scale
        if scores is not None:
            raise InputError("give scores or text_emb=/video_emb=, not both")
        if checks:
            raise InputError("checks=True needs a score matrix (the checks read whole rows and columns)")
        from fireval.torch.tensors import host_array, on_device

        if on_device(emb.get("text_emb")) or on_device(emb.get("video_emb")):  # blocks on their device
            from fireval.torch.sources import evaluate_tensor_embeddings as evaluate_embeddings
        else:
            from fireval.scale.embeddings import evaluate_embeddings

            emb.update({k: host_array(emb[k]) for k in ("text_emb", "video_emb") if k in emb})

        if "directions" not in options:
            both = isinstance(direction, str) and direction.strip().lower() == "both"
            options["directions"] = ("t2v", "v2t") if both else direction
        options.setdefault("labels_name", labels_name)
        return _with_warnings(
            evaluate_embeddings(
                emb.pop("text_emb", None),
                emb.pop("video_emb", None),
                judg,
                coll,
                name=name or "embeddings",
                measures=DEFAULT_MEASURES if measures is None else measures,
                ties=ties,
                unjudged=unjudged,
                preset=preset,
                per_query=per_query,
                **emb,
                **options,
            ),
            label_ws,
        )
    if emb:
        raise InputError(f"{', '.join(sorted(emb))} only apply with text_emb= and video_emb=")
    if scores is None:
        raise InputError("give scores (captions x videos), or text_emb= and video_emb=")
    if isinstance(scores, Run):
        run = (
            scores
            if name is None
            else Run(name, scores.scores, scores.lists, scores.source, blocks=scores.blocks)
        )
    elif not checks and _on_device(scores):  # counted with torch where the tensor lives
        from fireval.torch.sources import TensorScores

        src = TensorScores(scores)
        if coll is not None:
            check_matrix_shape(src.shape, coll, Direction.T2V)
        elif tuple(src.shape) != tuple(judg.shape):
            raise InputError(f"scores have shape {tuple(src.shape)} but the labels cover {judg.shape}")
        run = Run(name=name or "run", blocks=src)
    elif coll is not None:
        run = run_from_array(scores, coll, name=name)
    else:
        m = as_score_matrix(scores)
        if tuple(m.shape) != tuple(judg.shape):
            raise InputError(f"scores have shape {tuple(m.shape)} but the labels cover {judg.shape}")
        run = Run(name=name or "run", scores=m)
    if "directions" not in options:
        options["directions"] = (
            ("t2v", "v2t")
            if isinstance(direction, str) and direction.strip().lower() == "both"
            else direction
        )
    options.setdefault("labels_name", labels_name)
    ev = _evaluate(
        run,
        judg,
        measures=DEFAULT_MEASURES if measures is None else measures,
        ties=ties,
        unjudged=unjudged,
        preset=preset,
        collection=coll,
        per_query=per_query,
        **options,
    )
    if checks:
        assert coll is not None
        from fireval.checks import run_checks

        report = run_checks(coll, {run.name: run}, pairs=False)
        ev.warnings = [*ev.warnings, *report.warnings()]
        ev.checks = report
    return _with_warnings(ev, label_ws)


def _with_warnings(ev: Evaluation, label_ws: list[str]) -> Evaluation:
    """``ev`` with the label lines of :func:`label_warnings` first in ``ev.warnings`` (the same lines
    ``fireval evaluate`` prints as ``warning: ...``)."""
    if label_ws:
        ev.warnings = [*label_ws, *(w for w in ev.warnings if w not in label_ws)]
    return ev


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


@dataclass
class RunsEvaluation:
    """Evaluations of several runs under several label sets, with one tidy table.

    ``records`` are the rows of ``table`` as dicts; the DataFrame is built on first access.
    """

    records: list[dict[str, Any]]
    per_query: pd.DataFrame | None
    tie_reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    label_summary: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    @cached_property
    def table(self) -> pd.DataFrame:
        """The tidy table of :func:`fireval.metrics.evaluate`, over every run and label set."""
        import pandas as pd

        from fireval.metrics.evaluate import TABLE_COLUMNS

        return pd.DataFrame(self.records, columns=TABLE_COLUMNS).astype({"n": "Int64"})  # integer n

    def to_dict(self) -> dict[str, Any]:
        """The JSON record: ``units`` (:data:`fireval.core.units.UNITS_JSON`), ``results`` (the
        table's rows: values as fractions, ``n`` an integer or null), ``ties`` and ``labels``."""
        from fireval.core.units import UNITS_JSON, int_counts

        return {
            "units": UNITS_JSON,
            "results": int_counts(json.loads(self.table.to_json(orient="records"))),
            "ties": self.tie_reports,
            "labels": self.label_summary,
        }


def evaluate_runs(
    runs: Mapping[str, Run],
    labels: Mapping[str, Judgments],
    *,
    collection: Collection | None = None,
    progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> RunsEvaluation:
    """Evaluate every run under every label set (``options`` go to :func:`fireval.metrics.evaluate`).

    With several label sets every set is evaluated over the same queries (:func:`common_queries`),
    so the original-vs-augmented Δ compares like with like; the table's ``n`` states the count.
    """
    from fireval.metrics import evaluate

    if not runs:
        raise FirevalError("no runs to evaluate")
    if len(labels) > 1 and "queries" not in options:
        options = {**options, "queries": common_queries(labels)}
    records: list[dict[str, Any]] = []
    per_query: list[pd.DataFrame] = []
    ties: dict[str, dict[str, Any]] = {}
    for run_name, run in runs.items():
        for label_name, judg in labels.items():
            ev = evaluate(
                run,
                judg,
                collection=collection,
                run_name=run_name,
                labels_name=label_name,
                progress=progress,
                **options,
            )
            records.extend(ev.records)
            if ev.per_query is not None:
                per_query.append(ev.per_query)
            ties[f"{run_name}/{label_name}"] = ev.tie_report
    if per_query:
        import pandas as pd
    return RunsEvaluation(
        records=records,
        per_query=pd.concat(per_query, ignore_index=True) if per_query else None,
        tie_reports=ties,
        label_summary={
            name: {
                src: {**c, "overruled": j.overruled.get(src, 0), "regraded": j.regraded.get(src, 0)}
                for src, c in j.counts_by_source().items()
            }
            for name, j in labels.items()
        },
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


TABLE_FORMATS = (".tsv", ".txt", ".csv", ".jsonl", ".json", ".parquet")


def check_table_path(path: str | Path) -> str:
    """The lower-case extension of a per-query table path, or an :class:`InputError` naming it.

    Called before any work so that a bad output name fails fast and nothing is half-written.
    """
    ext = Path(path).suffix.lower()
    if ext not in TABLE_FORMATS:
        raise InputError("unknown table format; use .tsv, .csv, .jsonl or .parquet", source=str(path))
    return ext


def write_table(df: pd.DataFrame, path: str | Path) -> None:
    """Write a tidy table as TSV, CSV, JSON lines or parquet (by extension), atomically."""
    from fireval.atomic import atomic_write

    p = Path(path)
    ext = check_table_path(p)
    if ext == ".parquet":
        with atomic_write(p, "wb") as fh:
            df.to_parquet(fh, index=False)
    elif ext in (".tsv", ".txt", ".csv"):
        with atomic_write(p, "w", encoding="utf-8", newline="") as fh:
            df.to_csv(fh, sep="," if ext == ".csv" else "\t", index=False)
    elif ext in (".jsonl", ".json"):
        with atomic_write(p, "w", encoding="utf-8") as fh:
            df.to_json(fh, orient="records", lines=ext == ".jsonl")


def write_json(obj: Any, path: str | Path) -> None:
    """Write JSON atomically."""
    from fireval.atomic import atomic_write

    with atomic_write(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, default=_json_default)
        fh.write("\n")


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
