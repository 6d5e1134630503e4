"""FIRE's figures as published that the core report set lacks (drawn with :mod:`fireval.report.plots`).

* ``fig-correctness-labels-words`` / ``-chara``: Fig. 3 on every label set side by side
  (original vs augmented), one panel per run pair and label set.
* ``fig-rank-histogram``: Fig. 12's count of relevant pairs at each rank, per label source,
  one panel per run (the drop after rank 10 is the pool depth showing).
* ``fig-pool-size``: pool bias against the number of pooled runs (§4.2), mean drop with the
  min–max over the pools of that size, one panel per measure.

Computation lives in :mod:`fireval.analysis` (``TrustAnalysis.correctness_by_labels``,
``rank_histogram``, ``pool_bias_sizes``); this module only draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fireval.analysis.trust import TrustAnalysis, split_pair
from fireval.metrics.measures import display_name
from fireval.report.figcore import WIDTHS, Draw, Figure, _axes, _suptitle, _title, render
from fireval.report.figstyle import OKABE_ITO, run_colours
from fireval.report.nouns import doc_noun

KEYS = ("fig-correctness-labels-words", "fig-correctness-labels-chara", "fig-rank-histogram", "fig-pool-size")

_CATS = (
    ("both", "both right"),
    ("only_a", "only A right"),
    ("only_b", "only B right"),
    ("neither", "neither"),
)


def _correctness_by_labels(a: TrustAnalysis, names: str, unit: str) -> Draw:
    data = a.correctness_by_labels if unit == "words" else a.correctness_chars_by_labels

    def draw(fig: Any) -> None:
        panels = [
            (ln, pair, rows)
            for pair in data[a.label_sets[0]]
            for ln in a.label_sets
            for rows in [data[ln][pair]]
        ]
        axes = _axes(fig, len(panels))
        ck = display_name(f"C@{a.settings['correct_k']}", names)
        for ax, (ln, pair, rows) in zip(axes, panels, strict=True):
            ra, rb = split_pair(pair, a.runs)
            x = np.arange(len(rows))
            bottom = np.zeros(len(rows))
            for j, (key, lab) in enumerate(_CATS):
                vals = np.array([r[key] / r["n"] if r["n"] else 0.0 for r in rows])
                ax.bar(x, 100 * vals, bottom=100 * bottom, label=lab, color=OKABE_ITO[[2, 4, 0, 7][j]])
                bottom += vals
            ax.set_xticks(x, [r["bin"] for r in rows], rotation=30)
            ax.set_title(f"{ln} labels\nA: {ra}\nB: {rb}", fontsize=7, loc="left")
            ax.set_xlabel(f"caption length ({unit})")
            ax.set_ylabel("% of queries")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=2 if fig.get_figwidth() < 5 else 4)
        _suptitle(fig, f"{ck} ({a.settings['direction']}) by caption length in {unit}, each label set")

    return draw


def _rank_histogram(a: TrustAnalysis) -> Draw:
    def draw(fig: Any) -> None:
        runs = [r for r in a.runs if a.rank_histogram.get(r)]
        axes = _axes(fig, len(runs))
        depth = a.settings.get("pool_depth", 10)
        sources = list(
            dict.fromkeys(k for r in runs for k in a.rank_histogram[r][0] if k not in ("rank", "beyond"))
        )
        for ax, run in zip(axes, runs, strict=True):
            rows = [r for r in a.rank_histogram[run] if not r["beyond"]]
            x = np.array([r["rank"] for r in rows])
            beyond = []
            for i, src in enumerate(sources):
                if src not in rows[0]:
                    continue
                ax.step(x, [r[src] for r in rows], where="mid", label=src, color=OKABE_ITO[i % 8])
                beyond.append(str(a.rank_histogram[run][-1][src]))
            ax.axvline(depth + 0.5, color="0.5", linestyle=":", linewidth=0.8)
            ax.set_xlabel(f"rank of the {doc_noun(a.settings['direction'])}")
            ax.set_ylabel("relevant pairs")
            ax.set_title(f"{run}\n>{x[-1]}: {' / '.join(beyond)}", fontsize=7, loc="left")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=len(sources))
        _suptitle(
            fig,
            f"{a.settings['direction']}, {a.main_labels} labels: relevant pairs at each rank by label source "
            f"(dotted: pool depth {depth}; >{a.rank_histogram[runs[0]][-1]['rank'] - 1}: pairs ranked lower, per source)",
        )

    return draw


def _pool_size(a: TrustAnalysis, names: str) -> Draw:
    def draw(fig: Any) -> None:
        measures = list(dict.fromkeys(str(r["measure"]) for r in a.pool_bias_sizes))
        axes = _axes(fig, len(measures))
        runs = list(dict.fromkeys(str(r["run"]) for r in a.pool_bias_sizes))
        colour = run_colours(a.runs)  # one colour per run, the same in every figure
        for ax, m in zip(axes, measures, strict=True):
            scale = 1.0 if m in ("MdR", "MnR") else 100.0
            for i, run in enumerate(runs):
                rows = sorted(
                    (r for r in a.pool_bias_sizes if r["run"] == run and r["measure"] == m),
                    key=lambda r: r["pool_size"],
                )
                x = np.array([r["pool_size"] for r in rows]) + (i - (len(runs) - 1) / 2) * 0.06
                mean = np.array([r["mean_drop"] for r in rows]) * scale
                lo = mean - np.array([r["min_drop"] for r in rows]) * scale
                hi = np.array([r["max_drop"] for r in rows]) * scale - mean
                ax.errorbar(
                    x,
                    mean,
                    yerr=[lo, hi],
                    marker="o",
                    markersize=3,
                    capsize=2,
                    label=run,
                    color=colour[run],
                )
            ax.axhline(0, color="0.5", linewidth=0.6)
            ax.set_xticks(range(max(int(r["pool_size"]) for r in a.pool_bias_sizes) + 1))
            ax.set_xlabel("other runs in the pool")
            ax.set_ylabel("drop (points)" if scale == 100.0 else "drop (ranks)")
            _title(ax, display_name(m, names))
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=min(3, len(runs)))
        _suptitle(fig, "Score lost by a run left out of a pool of n other runs (mean, min–max over pools)")

    return draw


def build_fire_figures(a: TrustAnalysis, names: str = "ir", png: bool = True) -> list[Figure]:
    """The figures of the module docstring whose data exist, rendered like :func:`plots.build_figures`."""
    figs: list[Figure] = []
    if len(a.label_sets) > 1:
        for unit, data in (("words", a.correctness_by_labels), ("characters", a.correctness_chars_by_labels)):
            if data and any(data.values()):
                n = sum(len(v) for v in data.values())
                figs.append(
                    Figure(
                        f"fig-correctness-labels-{unit[:5]}",
                        f"Correctness by caption length in {unit}, original vs augmented labels (FIRE Fig. 3)",
                        draw=_correctness_by_labels(a, names, unit),
                        panels=n,
                        aspect=1.3,
                    )
                )
    if any(a.rank_histogram.values()):
        figs.append(
            Figure(
                "fig-rank-histogram",
                "Relevant pairs at each rank by label source (FIRE Fig. 12)",
                draw=_rank_histogram(a),
                panels=len([r for r in a.runs if a.rank_histogram.get(r)]),
            )
        )
    if a.pool_bias_sizes:
        figs.append(
            Figure(
                "fig-pool-size",
                "Pool bias against the number of pooled runs (FIRE §4.2)",
                draw=_pool_size(a, names),
                panels=len({r["measure"] for r in a.pool_bias_sizes}),
            )
        )
    for f in figs:
        f.caption = f"{f.title} ({a.settings['direction']})."
        if png:  # the HTML embeds SVG (report/html.py), like the figures of report/plots.py
            f.svg = render(f, WIDTHS["2col"], "svg")
            f.svg_narrow = render(f, WIDTHS["1col"], "svg")
    return figs
