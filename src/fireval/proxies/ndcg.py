"""nDCG with proxy relevance, as Wray et al. (2021) evaluate semantic-similarity retrieval.

Per direction, nDCG is the ``wray2021`` preset of the metrics engine (``nDCG@R``: linear
gain, log2 discount, cut at the query's number of items with relevance > 0; see
:mod:`fireval.metrics.presets`). Wray's Eq. 3 reports the mean of the two directions:
``nDCG = (nDCG_t2v + nDCG_v2t) / 2``.
"""

from __future__ import annotations

from typing import Any

from fireval.core.judgments import Judgments
from fireval.core.run import Run


def wray_ndcg(run: Run, judgments: Judgments, *, ties: str = "tie-aware", **kw: Any) -> dict[str, float]:
    """``{"t2v": …, "v2t": …, "mean": …}`` nDCG@R of ``run`` with graded ``judgments``."""
    from fireval.metrics import evaluate

    ev = evaluate(run, judgments, directions=("t2v", "v2t"), ties=ties, preset="wray2021", **kw)
    t = ev.table
    out: dict[str, float] = {}
    for d in ("t2v", "v2t"):
        sel = t[(t["direction"] == d) & (t["measure"].astype(str).str.startswith("nDCG"))]
        if len(sel):
            out[d] = float(sel["value"].iloc[0])
    if "t2v" in out and "v2t" in out:
        out["mean"] = (out["t2v"] + out["v2t"]) / 2
    return out
