"""Figures of the report (matplotlib, Agg backend), each returned as PNG bytes.

Figures follow FIRE: score CIs, original vs augmented, RBO heat map, correctness by caption
length (Fig. 3), caption length vs positives (Fig. 2), positives per query (Fig. 11), rank of
positives by label source (Fig. 12), annotation budget curves (Figs. 4, 9, 10) and the
train–test overlap against caption length (App. D).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fireval.analysis.trust import TrustAnalysis


@dataclass
class Figure:
    """One report figure as PNG bytes."""

    key: str
    title: str
    png: bytes
    caption: str = ""


def _png(draw: Callable[[object], None], size: tuple[float, float] = (7.0, 3.6)) -> bytes:
    """PNG of a figure drawn by ``draw`` (a bare matplotlib Figure: no pyplot, no global backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=size, dpi=100)
    FigureCanvasAgg(fig)
    draw(fig)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # colorbar axes and tight_layout
        fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _intervals(a: TrustAnalysis) -> Callable[[object], None]:
    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        rows = [r for r in a.intervals if r["labels"] == a.main_labels]
        ms = a.measures
        ax = fig.add_subplot(111)
        width = 0.8 / max(len(a.runs), 1)
        for i, run in enumerate(a.runs):
            rr = {r["measure"]: r for r in rows if r["run"] == run}
            x = np.arange(len(ms)) + (i - (len(a.runs) - 1) / 2) * width
            mean = np.array([100 * rr[m]["mean"] for m in ms])
            lo = mean - np.array([100 * rr[m]["low"] for m in ms])
            hi = np.array([100 * rr[m]["high"] for m in ms]) - mean
            ax.bar(x, mean, width, label=run, alpha=0.8)
            ax.errorbar(x, mean, yerr=[lo, hi], fmt="none", ecolor="black", capsize=3)
        ax.set_xticks(np.arange(len(ms)), ms)
        ax.set_ylabel("score (%)")
        ax.set_title(f"{a.main_labels} labels, {int(100 * a.settings['level'])}% bootstrap CI")
        ax.legend(fontsize=8)

    return draw


def _scores(a: TrustAnalysis) -> Callable[[object], None]:
    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        ax = fig.add_subplot(111)
        labels = [f"{r['run']}\n{r['measure']}" for r in a.scores]
        x = np.arange(len(labels))
        width = 0.8 / len(a.label_sets)
        for i, ln in enumerate(a.label_sets):
            ax.bar(
                x + (i - (len(a.label_sets) - 1) / 2) * width,
                [100 * r[ln] for r in a.scores],
                width,
                label=ln,
            )
        # run names are long: slant the "run / measure" labels so neighbours do not overprint
        ax.set_xticks(x, [lab.replace("\n", " · ") for lab in labels], fontsize=7, rotation=35, ha="right")
        ax.set_ylabel("score (%)")
        ax.legend(fontsize=8)

    return draw


def _rbo(a: TrustAnalysis) -> Callable[[object], None]:
    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        n = len(a.runs)
        pos = {r: i for i, r in enumerate(a.runs)}
        for j, (key, title) in enumerate(
            [("overlap", f"overlap@{a.settings['k']}"), ("rbo", f"RBO p={a.settings['rbo_p']:g}")]
        ):
            m = np.eye(n)
            for r in a.overlap:
                m[pos[r["a"]], pos[r["b"]]] = m[pos[r["b"]], pos[r["a"]]] = r[key]
            ax = fig.add_subplot(1, 2, j + 1)
            ax.imshow(100 * m, vmin=0, vmax=100, cmap="viridis")
            for p in range(n):
                for q in range(n):
                    ax.text(
                        q,
                        p,
                        f"{100 * m[p, q]:.0f}",
                        ha="center",
                        va="center",
                        color="w" if m[p, q] < 0.6 else "k",
                    )
            ax.set_xticks(range(n), a.runs, rotation=30, ha="right", fontsize=8)
            ax.set_yticks(range(n), a.runs, fontsize=8)
            ax.set_title(title, fontsize=10)

    return draw


def _correctness(a: TrustAnalysis) -> Callable[[object], None]:
    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        pairs = list(a.correctness.items())
        cats = [("both", "both"), ("only_a", "only A"), ("only_b", "only B"), ("neither", "neither")]
        for i, (pair, rows) in enumerate(pairs):
            ax = fig.add_subplot(1, len(pairs), i + 1)
            x = np.arange(len(rows))
            bottom = np.zeros(len(rows))
            for key, lab in cats:
                vals = np.array([r[key] / r["n"] if r["n"] else 0.0 for r in rows])
                ax.bar(x, 100 * vals, bottom=100 * bottom, label=lab)
                bottom += vals
            ax.set_xticks(x, [r["bin"] for r in rows], fontsize=7)
            ax.set_title(pair, fontsize=8)
            ax.set_xlabel("caption words", fontsize=8)
            if i == 0:
                ax.set_ylabel(f"% of queries (C@{a.settings['correct_k']})")
            if i == len(pairs) - 1:  # outside the bars, right of the last panel
                ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))

    return draw


def _length_positives(a: TrustAnalysis) -> Callable[[object], None]:
    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        ax = fig.add_subplot(121)
        rng = np.random.default_rng(0)
        assert a.lengths is not None and a.positives is not None
        ax.scatter(a.lengths + rng.uniform(-0.25, 0.25, a.lengths.size), a.positives, s=4, alpha=0.3)
        rows = a.length_positives["rows"]
        ax.plot([r["length"] for r in rows], [r["mean_positives"] for r in rows], color="red", label="mean")
        ax.set_xlabel("caption length (words)")
        ax.set_ylabel("positives per query")
        rho = a.length_positives["spearman"]
        ax.set_title(
            "Spearman ρ = n/a (constant)" if np.isnan(rho) else f"Spearman ρ = {rho:.3f}", fontsize=9
        )
        ax.legend(fontsize=8)
        ax2 = fig.add_subplot(122)
        counts = np.bincount(a.positives)
        ax2.bar(np.arange(counts.size), counts)
        ax2.set_xticks(
            np.arange(counts.size) if counts.size <= 15 else np.linspace(0, counts.size - 1, 8).round()
        )
        ax2.set_xlabel("positives per query")
        ax2.set_ylabel("queries")

    return draw


def _ranks(a: TrustAnalysis) -> Callable[[object], None]:
    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        ax = fig.add_subplot(111)
        data, labels = [], []
        for run, by in a.positive_ranks.items():
            for kind, ranks in by.items():
                if ranks.size:
                    data.append(ranks)
                    labels.append(f"{run}\n{kind} ({ranks.size})")
        if data:
            ax.boxplot(data, showfliers=False)
            ax.set_xticks(np.arange(1, len(labels) + 1), labels, fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("rank of relevant video")

    return draw


def _budget(a: TrustAnalysis) -> Callable[[object], None]:
    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        ms = a.measures
        for i, m in enumerate(ms):
            ax = fig.add_subplot(1, len(ms), i + 1)
            for run in a.runs:
                rows = [r for r in a.budget if r["run"] == run and r["measure"] == m]
                ax.plot([r["n"] for r in rows], [100 * r["error"] for r in rows], marker=".", label=run)
            ax.set_xscale("log")
            ax.set_title(m, fontsize=9)
            ax.set_xlabel("annotated queries", fontsize=8)
            if i == 0:
                ax.set_ylabel("95th pct |error| (points)", fontsize=8)
                ax.legend(fontsize=7)

    return draw


def _train_overlap(a: TrustAnalysis) -> Callable[[object], None]:
    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        ax = fig.add_subplot(111)
        assert a.lengths is not None and a.train_overlap is not None
        ax.scatter(a.lengths, a.train_overlap, s=4, alpha=0.4)
        ax.set_xlabel("caption length (words)")
        ax.set_ylabel("train–test overlap")
        s = a.train_overlap_stats
        ax.set_title(f"Spearman ρ = {s['spearman']:.3f}, Kendall τ = {s['kendall']:.3f}", fontsize=9)

    return draw


def build_figures(a: TrustAnalysis) -> list[Figure]:
    """All figures for the analysis (those whose data exist)."""
    wide = (max(7.0, 2.6 * len(a.measures)), 3.4)
    figs = [
        Figure("fig-intervals", "Scores with bootstrap confidence intervals", _png(_intervals(a))),
        Figure("fig-scores", "Original vs augmented", _png(_scores(a), (max(7.0, 0.6 * len(a.scores)), 3.6))),
    ]
    if a.overlap:
        figs.append(Figure("fig-overlap", "Top-K overlap and RBO between runs", _png(_rbo(a), (8.0, 3.6))))
    if a.correctness:
        figs.append(
            Figure(
                "fig-correctness",
                "Correctness by caption length (FIRE Fig. 3)",
                _png(_correctness(a), (max(7.0, 3.2 * len(a.correctness)), 3.4)),
            )
        )
    if a.lengths is not None and a.positives is not None:
        figs.append(
            Figure(
                "fig-positives",
                "Caption length vs positives; positives per query (FIRE Figs. 2, 11)",
                _png(_length_positives(a), (8.0, 3.4)),
            )
        )
    if a.positive_ranks:
        figs.append(
            Figure(
                "fig-ranks",
                "Rank of positives by label source (FIRE Fig. 12)",
                _png(_ranks(a), (max(7.0, 1.2 * sum(len(v) for v in a.positive_ranks.values())), 3.6)),
            )
        )
    if a.budget:
        figs.append(
            Figure(
                "fig-budget",
                "Annotation budget: error vs sample size (FIRE Figs. 4, 9, 10)",
                _png(_budget(a), wide),
            )
        )
    if a.train_overlap is not None:
        figs.append(
            Figure(
                "fig-train-overlap",
                "Train–test caption overlap vs caption length (FIRE App. D)",
                _png(_train_overlap(a)),
            )
        )
    return figs
