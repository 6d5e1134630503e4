"""fireval: valid evaluation of text–video retrieval.

Quick start::

    import fireval
    coll = fireval.formats.read_msrvtt_jsfusion("MSRVTT_JSFUSION_test.csv")
    run = fireval.formats.read_scores("sims.npy", coll)
    result = fireval.evaluate(run, coll.instance_judgments())
    result.table            # tidy pandas DataFrame
"""

from fireval.core import (
    Collection,
    Direction,
    FirevalError,
    InputError,
    Judgments,
    RankedLists,
    Run,
    merge,
    normalise,
)

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


def __getattr__(name: str):  # lazy: keep `import fireval` light
    if name == "evaluate":
        from fireval.metrics import evaluate

        return evaluate
    if name in {"formats", "metrics", "judging", "proxies", "analysis", "report"}:
        import importlib

        return importlib.import_module(f"fireval.{name}")
    raise AttributeError(name)
