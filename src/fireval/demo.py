"""The main job on bundled data: evaluate a text baseline on MSR-VTT 1k-A, show what is unjudged.

Runs offline from the package's own example (no ``../shared``): the 1000 JSFusion 1k-A
sentences, and the 20 official captions of each of those videos (see
``fireval/data/ATTRIBUTION.md``). The run is a *caption oracle*: each query is scored against
the other captions of each video with TF-IDF (:func:`fireval.baselines.caption_oracle_scores`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fireval.api import RunsEvaluation, evaluate_runs, write_json, write_table
from fireval.core import Collection, Judgments, Run

DEMO_MEASURES = ("C@1", "C@5", "C@10", "MdR", "MnR", "AP", "nDCG@10", "judged@10")


@dataclass
class DemoResult:
    """What :func:`run_demo` built: the run, its evaluation, the proxy view and the files written."""

    collection: Collection
    run: Run
    evaluation: RunsEvaluation
    proxy: RunsEvaluation
    outputs: dict[str, Path]


def run_demo(out_dir: str | Path, progress: Callable[[int, int], None] | None = None) -> DemoResult:
    """Build the oracle run, evaluate it (lower/condensed/upper bounds), add the proxy view."""
    from fireval.baselines import caption_oracle_scores
    from fireval.formats.example import load_example

    ex = load_example()
    coll = ex.collection
    scores = caption_oracle_scores(coll, ex.video_captions)
    run = Run("caption-oracle", scores=scores)
    labels = {"original": coll.instance_judgments()}
    evaluation = evaluate_runs(
        {run.name: run},
        labels,
        collection=coll,
        measures=DEMO_MEASURES,
        unjudged=("lower", "condensed", "upper"),
        per_query=True,
        progress=progress,
    )
    proxy = _proxy_view(run, coll, ex.video_captions, progress)
    out = Path(out_dir)
    outputs = {
        "results": out / "results.json",
        "per_query": out / "per_query.tsv",
        "scores": out / "caption-oracle.npy",
    }
    payload: dict[str, Any] = evaluation.to_dict()
    payload["proxy"] = proxy.to_dict()
    write_json(payload, outputs["results"])
    if evaluation.per_query is not None:
        write_table(evaluation.per_query, outputs["per_query"])
    from fireval.atomic import atomic_write

    with atomic_write(outputs["scores"], "wb") as fh:
        np.save(fh, scores)
    return DemoResult(coll, run, evaluation, proxy, outputs)


def _proxy_view(
    run: Run, coll: Collection, descriptions: Collection, progress: Callable[[int, int], None] | None
) -> RunsEvaluation:
    """nDCG with Wray et al.'s BoW proxy relevance (t2v, v2t and their mean)."""
    from fireval.proxies.relevance import video_relevance

    judg: Judgments = video_relevance(coll, "bow", "max", descriptions).to_judgments()
    ev = evaluate_runs(
        {run.name: run}, {"proxy:bow": judg}, collection=coll, preset="wray2021", progress=progress
    )
    return ev
