"""Figures of the report (matplotlib, Agg backend, no pyplot): SVG for the HTML, PDF and SVG for papers.

Figures follow FIRE: score CIs, original vs augmented, RBO heat map, correctness by caption
length in words and in characters (Fig. 3), caption length vs positives (Fig. 2), positives per
query (Fig. 11), rank of positives by label source (Fig. 12), correctness against train–test
caption similarity (Fig. 8), annotation budget curves (Figs. 4, 9, 10) and the train–test
overlap against caption length (App. D).

Conventions (the shared machinery, :class:`Figure`, :func:`render`, :func:`size` and
:func:`write_figures`, lives in :mod:`fireval.report.figcore` and is re-exported here). Every
figure is a ``draw(fig)`` function that lays its panels out for the
figure's width, so one drawing serves a one-column (3.3 in wide, at most 2.5 in high: panels
in one row, or two) and a two-column (6.9 in) paper (:data:`WIDTHS`); the HTML embeds both
drawings as SVG (text stays text). Fonts are 8 pt (7 pt legends and ticks), viridis for heat
maps, and one colour per run, the same in every figure and whatever the order of the runs
(:func:`fireval.report.figstyle.run_colours`: Okabe–Ito, safe under every common colour-vision
deficiency). With ``-d both`` the score figures draw one panel per direction. Values that
depend on a run failing the alignment check carry ``!`` (:mod:`fireval.report.figstyle`). Titles say what is measured,
in which direction and on which labels; axes carry units. A figure with nothing to show
(e.g. every query has the same number of positives, or only one label set was given) is
replaced by one sentence (:attr:`Figure.empty`). PDFs embed TrueType fonts (``pdf.fonttype``
42, accepted by paper submission systems); SVGs keep text as text.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fireval.analysis.paper import lower_is_better
from fireval.analysis.trust import TrustAnalysis, split_pair
from fireval.metrics.measures import display_name
from fireval.report.figcore import (
    _DIRECTION_STYLES,
    CAPTION_FIGURES,
    FIGURE_KEYS,
    HTML_DPI,
    WIDTHS,
    Draw,
    Figure,
    _augmented,
    _axes,
    _budget_measures,
    _by_direction,
    _handles,
    _legend,
    _log_x,
    _measure_ticks,
    _narrow,
    _pct_measures,
    _style,
    _suptitle,
    _title,
    _xlabel_once,
    directions,
    figure_files,
    grid,
    render,
    size,
    write_figures,
)
from fireval.report.figstyle import MARK, MARK_NOTE, OKABE_ITO, marked, run_colours
from fireval.report.nouns import doc_noun

# the machinery moved to fireval.report.figcore; re-exported so ``from fireval.report.plots import ...`` works
__all__ = [
    "FIGURE_KEYS",
    "HTML_DPI",
    "OKABE_ITO",
    "WIDTHS",
    "Draw",
    "Figure",
    "_axes",
    "_style",
    "_suptitle",
    "_title",
    "build_figures",
    "directions",
    "figure_files",
    "grid",
    "render",
    "size",
    "write_figures",
]


def _intervals(a: TrustAnalysis, names: str = "ir", unaligned: frozenset[str] = frozenset()) -> Draw:
    dirs = [d for d in directions(a) if d == a.settings["direction"] or d in a.direction_intervals]

    def draw(fig: Any) -> None:
        ms = _pct_measures(a)
        col = run_colours(a.runs)
        bad = unaligned if _augmented(a) else frozenset()
        axes = _axes(fig, len(dirs), sharey=True)
        width = 0.8 / max(len(a.runs), 1)
        lvl = int(round(100 * a.settings["level"]))
        for ax, d in zip(axes, dirs, strict=True):
            src = a.intervals if d == a.settings["direction"] else a.direction_intervals[d]
            rows = [r for r in src if r["labels"] == a.main_labels]
            for i, run in enumerate(a.runs):
                rr = {r["measure"]: r for r in rows if r["run"] == run}
                x = np.arange(len(ms)) + (i - (len(a.runs) - 1) / 2) * width
                mean = np.array([100 * rr[m]["mean"] for m in ms])
                # clipped at 0: matplotlib refuses a negative error bar (a bound past the mean by rounding)
                lo = np.maximum(mean - np.array([100 * rr[m]["low"] for m in ms]), 0.0)
                hi = np.maximum(np.array([100 * rr[m]["high"] for m in ms]) - mean, 0.0)
                ax.bar(x, mean, width, label=marked(run, bad), color=col[run])
                ax.errorbar(
                    x,
                    mean,
                    yerr=[lo, hi],
                    fmt="none",
                    ecolor="black",
                    color="black",
                    capsize=2,
                    linewidth=0.8,
                )
                if run in bad:
                    for xi, top in zip(x, mean + hi, strict=True):
                        ax.text(xi, top, MARK, ha="center", va="bottom", fontsize=7, fontweight="bold")
            _measure_ticks(ax, ms, names)
            ax.set_ylabel("score (%)")
            ax.margins(y=0.08)
            _title(
                ax,
                f"{d}, {a.main_labels}, {lvl}% CI"
                if _narrow(fig)
                else f"{d}, {a.main_labels} labels: mean, {lvl}% bootstrap CI",
            )
        _legend(fig, *_handles(axes[0]), ncol_wide=min(len(a.runs), 6))

    return draw


def _scores(a: TrustAnalysis, names: str = "ir", unaligned: frozenset[str] = frozenset()) -> Draw:
    """Original vs augmented: one panel per direction, measures on the x axis; per run (its colour)
    a light hatched bar on the first label set and a solid bar on the last."""

    def draw(fig: Any) -> None:
        from matplotlib.patches import Patch

        ms = _pct_measures(a)
        col = run_colours(a.runs)
        first, last = a.label_sets[0], a.label_sets[-1]
        dirs = directions(a)
        axes = _axes(fig, len(dirs), sharey=True)
        slot = 0.84 / max(len(a.runs), 1)
        for ax, d in zip(axes, dirs, strict=True):
            vals = a.paper[d].values
            for i, run in enumerate(a.runs):
                x = np.arange(len(ms)) + (i - (len(a.runs) - 1) / 2) * slot
                v0 = np.array([100 * vals[first][run][m] for m in ms])
                v1 = np.array([100 * vals[last][run][m] for m in ms])
                c = col[run]
                ax.bar(
                    x - slot / 4, v0, slot / 2, color=c, alpha=0.35, hatch="////", edgecolor=c, linewidth=0
                )
                ax.bar(x + slot / 4, v1, slot / 2, color=c)
                if run in unaligned:  # the augmented values are on the wrong pairs
                    for xi, top in zip(x + slot / 4, v1, strict=True):
                        ax.text(xi, top, MARK, ha="center", va="bottom", fontsize=7, fontweight="bold")
            _measure_ticks(ax, ms, names)
            ax.set_ylabel("score (%)")
            ax.margins(y=0.08)
            _title(
                ax, f"{d}: {first} vs {last}" if _narrow(fig) else f"{d}: {first} (hatched) vs {last} labels"
            )
        handles = [Patch(color=col[r], label=marked(r, unaligned)) for r in a.runs]
        handles += [
            Patch(facecolor="#999999", alpha=0.35, hatch="////", edgecolor="#999999", label=first),
            Patch(color="#999999", label=last),
        ]
        _legend(fig, handles, [str(h.get_label()) for h in handles], ncol_wide=len(handles))

    return draw


def _rbo(a: TrustAnalysis, bad_pairs: frozenset[frozenset[str]] = frozenset()) -> Draw:
    """Overlap@K and RBO heat maps, one pair of panels per direction."""
    per_dir = _by_direction(a, a.overlap, a.direction_overlap)

    def draw(fig: Any) -> None:
        n = len(a.runs)
        pos = {r: i for i, r in enumerate(a.runs)}
        panels = [
            (d, rows, key, title)
            for d, rows in per_dir
            for key, title in (
                ("overlap", f"overlap@{a.settings['k']} (%)"),
                ("rbo", f"RBO, p = {a.settings['rbo_p']:g} (%)"),
            )
        ]
        axes = _axes(fig, len(panels), min_panel=3.0)
        cols = grid(len(panels), fig.get_figwidth(), 3.0)[1]
        for j, (ax, (d, rows, key, title)) in enumerate(zip(axes, panels, strict=True)):
            m = np.eye(n)
            for r in rows:
                m[pos[r["a"]], pos[r["b"]]] = m[pos[r["b"]], pos[r["a"]]] = r[key]
            ax.imshow(100 * m, vmin=0, vmax=100, cmap="viridis", aspect="auto")  # fills its panel: fits
            for p in range(n):
                for q in range(n):
                    flag = MARK if frozenset((a.runs[p], a.runs[q])) in bad_pairs else ""
                    ax.text(
                        q,
                        p,
                        f"{100 * m[p, q]:.0f}{flag}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="w" if m[p, q] < 0.6 else "k",
                    )
            ax.set_xticks(range(n), a.runs, rotation=30, ha="right", rotation_mode="anchor")
            ax.set_yticks(range(n), a.runs)
            if j % cols:  # the panels of a row share the first one's rows
                ax.tick_params(labelleft=False)
            _title(ax, f"{title}, {d} top {a.settings['k']}")
            ax.spines[:].set_visible(False)

    return draw


def _correctness(
    a: TrustAnalysis,
    names: str = "ir",
    unit: str = "words",
    bad_pairs: frozenset[frozenset[str]] = frozenset(),
) -> Draw:
    data = a.correctness if unit == "words" else a.correctness_chars

    def draw(fig: Any) -> None:
        pairs = list(data.items())
        axes = _axes(fig, len(pairs), sharey=True)
        narrow = _narrow(fig)
        ck = display_name(f"C@{a.settings['correct_k']}", names)
        cats = [
            ("both", "both right"),
            ("only_a", "only A right"),
            ("only_b", "only B right"),
            ("neither", "neither"),
        ]
        cols = grid(len(pairs), fig.get_figwidth())[1]
        for i, (ax, (pair, rows)) in enumerate(zip(axes, pairs, strict=True)):
            ra, rb = split_pair(pair, a.runs)
            x = np.arange(len(rows))
            bottom = np.zeros(len(rows))
            for j, (key, lab) in enumerate(cats):
                vals = np.array([r[key] / r["n"] if r["n"] else 0.0 for r in rows])
                ax.bar(x, 100 * vals, bottom=100 * bottom, label=lab, color=OKABE_ITO[[2, 4, 0, 7][j]])
                bottom += vals
            ax.set_xticks(x, [r["bin"] for r in rows], rotation=90 if narrow or unit != "words" else 0)
            flag = f"{MARK} " if frozenset((ra, rb)) in bad_pairs else ""
            ax.set_title(f"{flag}A: {ra}\nB: {rb}", fontsize=6 if narrow else 7, loc="left")
            ax.set_ylabel("% of queries")
            if i % cols:  # shared y: the label once per row
                ax.yaxis.label.set_visible(False)
                ax.tick_params(labelleft=False)
        _xlabel_once(axes, f"caption length ({unit})")
        handles, labels = axes[0].get_legend_handles_labels()
        _legend(fig, handles, labels, ncol_wide=4)
        _suptitle(
            fig, f"{ck} ({a.settings['direction']}, {a.main_labels} labels) by caption length in {unit}"
        )

    return draw


def _length_positives(a: TrustAnalysis) -> Draw:
    def draw(fig: Any) -> None:
        assert a.lengths is not None and a.positives is not None
        ax, ax2 = _axes(fig, 2)
        rng = np.random.default_rng(0)
        ax.scatter(
            a.lengths + rng.uniform(-0.25, 0.25, a.lengths.size),
            a.positives,
            s=3,
            alpha=0.3,
            color=OKABE_ITO[4],
            linewidths=0,
        )
        rows = a.length_positives["rows"]
        ax.plot(
            [r["length"] for r in rows], [r["mean_positives"] for r in rows], color=OKABE_ITO[3], label="mean"
        )
        ax.set_xlabel("caption length (words)")
        ax.set_ylabel("positives per caption")
        rho = a.length_positives["spearman"]
        _title(ax, f"{a.main_labels} labels: Spearman ρ = {rho:.3f}")
        ax.legend()
        counts = np.bincount(a.positives)
        ax2.bar(np.arange(counts.size), counts, color=OKABE_ITO[4])
        ax2.set_xlabel("positives per caption")
        ax2.set_ylabel("captions")
        _title(ax2, f"{a.main_labels} labels: positives per caption")

    return draw


def _ranks(a: TrustAnalysis, unaligned: frozenset[str] = frozenset()) -> Draw:
    """Rank of positives by label source: one panel per direction, a box per run and source."""
    per_dir = _by_direction(a, a.positive_ranks, a.direction_ranks)

    def draw(fig: Any) -> None:
        axes = _axes(fig, len(per_dir), sharey=True)
        col = run_colours(a.runs)
        narrow = _narrow(fig)
        for i, (ax, (d, by_run)) in enumerate(zip(axes, per_dir, strict=True)):
            data, labels, colours = [], [], []
            for run, by in by_run.items():
                for kind, ranks in by.items():
                    if ranks.size:
                        data.append(ranks)
                        flag = f" {MARK}" if run in unaligned and not kind.startswith("instance") else ""
                        labels.append(f"{run}{flag}\n{kind} (n={ranks.size})")
                        colours.append(col.get(run, OKABE_ITO[4]))
            if not data:
                ax.text(0.5, 0.5, "no relevant pair", ha="center", va="center", transform=ax.transAxes)
                ax.set_xticks([])
            else:
                box = ax.boxplot(data, showfliers=False, patch_artist=True, medianprops={"color": "black"})
                for patch, c in zip(box["boxes"], colours, strict=True):
                    patch.set_facecolor(c)
                    patch.set_alpha(0.6)
                ax.set_xticks(
                    np.arange(1, len(labels) + 1),
                    labels,
                    rotation=90 if narrow or len(per_dir) > 1 else 35,
                    ha="right" if not (narrow or len(per_dir) > 1) else "center",
                    fontsize=6 if narrow and len(per_dir) > 1 else 7,
                )
                ax.set_yscale("log")
            if i == 0:
                ax.set_ylabel(
                    f"rank of relevant {doc_noun(d)} (log)" if len(per_dir) == 1 else "rank of positive (log)"
                )
            else:
                ax.tick_params(labelleft=False)
            _title(
                ax,
                f"{d}, {a.main_labels} labels: rank of positives by label source"
                if len(per_dir) == 1
                else f"{d}: rank of relevant {doc_noun(d)}",
            )

    return draw


def _budget(a: TrustAnalysis, names: str = "ir", unaligned: frozenset[str] = frozenset()) -> Draw:
    """Budget curves: one panel per measure; per run (its colour) one line per direction (solid:
    the report's direction, dashed: the other with ``-d both``)."""
    per_dir = _by_direction(a, a.budget, a.direction_budget)

    def draw(fig: Any) -> None:
        from matplotlib.lines import Line2D

        ms = _budget_measures(a)
        col = run_colours(a.runs)
        bad = unaligned if _augmented(a) else frozenset()
        axes = _axes(fig, len(ms))
        cols = grid(len(ms), fig.get_figwidth())[1]
        for i, (ax, m) in enumerate(zip(axes, ms, strict=True)):
            scale = 1.0 if lower_is_better(m) else 100.0
            for (_, budget_rows), style in zip(per_dir, _DIRECTION_STYLES, strict=False):
                for run in a.runs:
                    rows = [r for r in budget_rows if r["run"] == run and r["measure"] == m]
                    ax.plot(
                        [r["n"] for r in rows],
                        [scale * r["error"] for r in rows],
                        marker=".",
                        markersize=3 if len(per_dir) > 1 else 6,
                        linestyle=style,
                        color=col[run],
                    )
            _log_x(ax)
            _title(ax, f"{display_name(m, names)}, {a.main_labels} labels")
            ax.set_ylabel("p95 |error| (" + ("ranks" if lower_is_better(m) else "points") + ")")
            if i % cols or len(axes) > cols:  # one label per row, or one for the figure (below)
                ax.yaxis.label.set_visible(False)
        if len(axes) > cols:  # several rows: short panels, so one label beside them all
            fig.supylabel(axes[0].get_ylabel(), fontsize=8)
        _xlabel_once(axes, "annotated queries")
        handles = [Line2D([], [], color=col[r], marker=".", label=marked(r, bad)) for r in a.runs]
        if len(per_dir) > 1:
            handles += [
                Line2D([], [], color="#555555", linestyle=style, label=d)
                for (d, _), style in zip(per_dir, _DIRECTION_STYLES, strict=False)
            ]
        labels = [str(h.get_label()) for h in handles]
        _legend(fig, handles, labels, ncol_wide=min(len(handles), 6 if len(per_dir) > 1 else 3))

    return draw


def _train_overlap(a: TrustAnalysis) -> Draw:
    def draw(fig: Any) -> None:
        ax = fig.add_subplot(111)
        assert a.lengths is not None and a.train_overlap is not None
        ax.scatter(a.lengths, a.train_overlap, s=3, alpha=0.4, color=OKABE_ITO[4], linewidths=0)
        ax.set_xlabel("caption length (words)")
        ax.set_ylabel("train–test overlap (cosine)")
        s = a.train_overlap_stats
        _title(ax, f"Overlap vs length: Spearman ρ = {s['spearman']:.3f}, Kendall τ = {s['kendall']:.3f}")

    return draw


def _train_similarity(a: TrustAnalysis, names: str = "ir", unaligned: frozenset[str] = frozenset()) -> Draw:
    def draw(fig: Any) -> None:
        ax = fig.add_subplot(111)
        col = run_colours(a.runs)
        rows = a.correctness_similarity
        x = np.array([(r["low"] + r["high"]) / 2 for r in rows])
        for run in a.runs:  # per query: meaningless for a run whose rows are not the captions
            ax.plot(
                x,
                [100 * r[run] for r in rows],
                marker="o",
                markersize=3,
                label=marked(run, unaligned),
                color=col[run],
            )
        ck = display_name(f"C@{a.settings.get('fig8_k', a.settings['correct_k'])}", names)
        ax.set_xlabel(
            "max TF-IDF cosine to a training caption (bin centre)"
            if a.settings.get("fig8_similarity") == "max"
            else "mean of the 10 highest TF-IDF cosines to training captions (bin centre)"
        )
        ax.set_ylabel(f"{ck} (%)")
        _title(ax, f"{ck} ({a.settings['direction']}) vs train–test similarity, {a.main_labels} labels")
        _legend(fig, *_handles(ax), ncol_wide=min(3, len(a.runs)))

    return draw


def build_figures(
    a: TrustAnalysis,
    names: str = "ir",
    png: bool = True,
    *,
    unaligned: frozenset[str] | set[str] = frozenset(),
    misaligned_pairs: dict[tuple[str, str], str] | None = None,
) -> list[Figure]:
    """All figures for the analysis (those whose data exist), each drawn for the HTML as SVG at
    both widths unless ``png=False`` (the name is historical: the HTML embeds SVG).

    ``unaligned``: the runs that fail the alignment check, ``misaligned_pairs`` the run pairs
    whose per-query comparison is meaningless (:meth:`fireval.checks.ChecksReport.misaligned_pairs`);
    their values are marked ``!`` and the caption says why.
    """
    d = a.settings["direction"]
    bad = frozenset(unaligned)
    bad_pairs = frozenset(frozenset(p) for p in (misaligned_pairs or {})) | frozenset(
        frozenset((x, y)) for x in a.runs for y in a.runs if x != y and (x in bad) != (y in bad)
    )
    dirs = directions(a)
    figs = [
        Figure(
            "fig-intervals",
            "Scores with bootstrap confidence intervals",
            draw=_intervals(a, names, bad),
            panels=len([x for x in dirs if x == d or x in a.direction_intervals]),
        ),
    ]
    if not _pct_measures(a):
        figs[0].empty = "Only rank measures were asked for; their intervals are in the table."
        figs[0].draw = None
    scores = Figure(
        "fig-scores",
        "Original vs augmented labels",
        draw=_scores(a, names, bad),
        panels=len(dirs),
    )
    if len(a.label_sets) < 2:
        scores.empty = (
            f"Only the {a.label_sets[0]} labels were given, so there is no original vs augmented "
            "comparison to draw (give --labels)."
        )
        scores.draw = None
    elif not _pct_measures(a):
        scores.empty, scores.draw = "Only rank measures were asked for; their values are in the table.", None
    figs.append(scores)
    if a.overlap:
        figs.append(
            Figure(
                "fig-overlap",
                "Top-K overlap and RBO between runs",
                draw=_rbo(a, bad_pairs),
                panels=2 * len(_by_direction(a, a.overlap, a.direction_overlap)),
                aspect=0.9,
                min_panel=3.0,
            )
        )
    for unit, data in (("words", a.correctness), ("characters", a.correctness_chars)):
        if data:
            figs.append(
                Figure(
                    f"fig-correctness-{unit[:5]}",
                    f"Correctness by caption length in {unit} (FIRE Fig. 3)",
                    draw=_correctness(a, names, unit, bad_pairs),
                    panels=len(data),
                    aspect=1.2,
                )
            )
    if a.lengths is not None and a.positives is not None:
        f = Figure(
            "fig-positives",
            "Caption length vs positives; positives per query (FIRE Figs. 2, 11)",
            draw=_length_positives(a),
            panels=2,
        )
        if a.positives.size and np.ptp(a.positives) == 0:
            k = int(a.positives[0])
            f.empty = (
                f"Every caption has exactly {k} positive video{'s' if k != 1 else ''} under the "
                f"{a.main_labels} labels, so positives cannot vary with caption length (Spearman ρ undefined)."
            )
            f.draw = None
        figs.append(f)
    if a.positive_ranks:
        f = Figure(
            "fig-ranks",
            "Rank of positives by label source (FIRE Fig. 12)",
            draw=_ranks(a, bad),
            aspect=0.6,
            panels=len(_by_direction(a, a.positive_ranks, a.direction_ranks)),
        )
        if not any(r.size for by in a.positive_ranks.values() for r in by.values()):
            f.empty, f.draw = "No relevant pair to rank.", None
        figs.append(f)
    if a.correctness_similarity:
        figs.append(
            Figure(
                "fig-train-similarity",
                "Correctness vs train–test caption similarity (FIRE Fig. 8)",
                draw=_train_similarity(a, names, bad),
            )
        )
    if a.budget:
        figs.append(
            Figure(
                "fig-budget",
                "Annotation budget: error vs sample size (FIRE Figs. 4, 9, 10)",
                draw=_budget(a, names, bad),
                panels=len(_budget_measures(a)),
            )
        )
    if a.train_overlap is not None:
        figs.append(
            Figure(
                "fig-train-overlap",
                "Train–test caption overlap vs caption length (FIRE App. D)",
                draw=_train_overlap(a),
            )
        )
    extra: dict[str, dict[str, Any]] = {
        "fig-overlap": a.direction_overlap,
        "fig-ranks": a.direction_ranks,
        "fig-budget": a.direction_budget,
    }
    for f in figs:
        if f.key in ("fig-intervals", "fig-scores"):
            shown = ", ".join(dirs)
        elif f.key in extra:
            shown = ", ".join(x for x, _ in _by_direction(a, None, extra[f.key]))
            if f.key == "fig-budget" and len(shown.split(", ")) > 1:
                shown += "; solid: " + ", dashed: ".join(shown.split(", "))
        elif len(dirs) > 1 and d == "t2v" and f.key in CAPTION_FIGURES:
            shown = f"{d}; the queries of {', '.join(x for x in dirs if x != d)} are videos, with no caption length or caption similarity"
        else:
            shown = d
        f.caption = f"{f.title} ({shown})."
        if bad or bad_pairs:
            f.caption += " " + MARK_NOTE
        if png and f.draw is not None:
            f.svg = render(f, WIDTHS["2col"], "svg")
            f.svg_narrow = render(f, WIDTHS["1col"], "svg")
    return figs
