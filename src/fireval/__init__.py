"""fireval: valid evaluation of text–video retrieval.

Quick start (in memory; ``sims`` is a captions x videos numpy array or torch tensor)::

    import fireval
    ev = fireval.evaluate(sims, collection="msrvtt-1ka")     # or a Collection, or a path
    ev.table                       # tidy pandas DataFrame
    ev.to_dict(names="tvr")        # {"t2v": {"R@1": ..., "MdR": ...}, "v2t": {...}}, fractions like .value()

From files: :mod:`fireval.api` (``load_collection``, ``load_run``, ``label_sets``,
``evaluate_runs``). ``import fireval`` stays light: pandas, scipy and the formats load on first use.
"""

from typing import TYPE_CHECKING, Any

from fireval.core.errors import FirevalError, InputError

if TYPE_CHECKING:  # numpy-backed core types load on first use (the CLI's --help needs none)
    from fireval.core import Collection, Direction, Judgments, RankedLists, Run, merge, normalise

_CORE = {"Collection", "Direction", "Judgments", "RankedLists", "Run", "merge", "normalise"}

__version__ = "0.1.0"

__all__ = [
    "Collection",
    "Direction",
    "FirevalError",
    "InputError",
    "Judgments",
    "RankedLists",
    "Run",
    "__version__",
    "evaluate",
    "merge",
    "normalise",
]


def evaluate(
    scores: Any = None,
    collection: Any = None,
    labels: Any = None,
    *,
    measures: Any = None,
    direction: Any = "both",
    ties: str = "tie-aware",
    unjudged: Any = "lower",
    preset: str | None = None,
    **options: Any,
) -> Any:
    """Evaluate scores in memory; see :func:`fireval.api.evaluate` (imported on first call).

    ``fireval.evaluate(sims, collection="msrvtt-1ka").to_dict(names="tvr")`` gives
    ``{"t2v": {"R@1": ..., "R@5": ..., "MdR": ...}, "v2t": {...}}`` as fractions, like ``.value()``
    and ``.table`` (ranks for MdR/MnR); ``units="percent"`` gives x100.
    """
    from fireval import api

    return api.evaluate(
        scores,
        collection,
        labels,
        measures=measures,
        direction=direction,
        ties=ties,
        unjudged=unjudged,
        preset=preset,
        **options,
    )


def __getattr__(name: str) -> Any:  # lazy: keep `import fireval` light
    if name in _CORE:
        from fireval import core

        return getattr(core, name)
    if name in {"api", "formats", "metrics", "judging", "proxies", "analysis", "report"}:
        import importlib

        return importlib.import_module(f"fireval.{name}")
    raise AttributeError(name)
