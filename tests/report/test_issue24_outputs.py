"""Issue 24 items 1, 3, 4 on the real MSR-VTT 1k-A runs: GRAM and VAST fail the alignment check.

1. Values that depend on a run's alignment (its augmented and Δ cells) carry ``!`` in every table
   (terminal, Markdown, LaTeX, HTML), are never bold, and the JSON carries each run's check status.
3. Paper tables: ``evaluate --latex/--markdown``, ``report --latex DIR`` with ``--tables`` and
   ``--columns``; the main table fits one CVPR column (3.3 in) at >= 8 pt, compiled by pdflatex.
4. Terminal tables fit 80 columns.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIREVAL = [sys.executable, "-m", "fireval"]
RUNS = ("clip4clip", "GRAM", "VAST")
BAD = ("GRAM", "VAST")


def run_cli(*args: object, columns: int = 80, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS=str(columns))
    return subprocess.run(
        [*FIREVAL, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def inputs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = shared_data / "msrvtt"
    work = tmp_path_factory.mktemp("issue24")
    runs = []
    for r in RUNS:  # NAME=PATH: the short names of the issue
        runs.append(f"{r}={d / 'sims' / f'{r}_msrvtt.npy'}")
    # extra positives beyond the instance ones: an augmented label set (as `labels auto` makes)
    qrels = work / "extra.qrels"
    rows = [ln.split(",") for ln in (d / "MSRVTT_JSFUSION_test.csv").read_text().splitlines()[1:]]
    qrels.write_text(
        "".join(f"{rows[i][0]} 0 {rows[(i + 1) % len(rows)][2]} 1\n" for i in range(0, len(rows), 7))
    )
    return {"work": work, "csv": d / "MSRVTT_JSFUSION_test.csv", "qrels": qrels, "runs": runs}  # type: ignore[dict-item]


@pytest.fixture(scope="module")
def report(inputs: dict) -> dict[str, object]:
    w = inputs["work"]
    r = run_cli(
        "report", *inputs["runs"], "-c", inputs["csv"], "-l", inputs["qrels"], "--names", "tvr", "-d", "both",
        "-m", "R@1,R@5,R@10", "--resamples", "500", "-o", w / "r.html", "--markdown", w / "r.md",
        "--latex", w / "tex", "--tables", "paper,intervals", "-q",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return {"proc": r, "dir": w / "tex", "md": (w / "r.md").read_text(), "html": (w / "r.html").read_text()}


def _section_rows(lines: list[str], heading: str) -> list[str]:
    """The Markdown rows under a bold section heading row, up to the next heading or table end."""
    i = next(k for k, ln in enumerate(lines) if ln.startswith(f"| **{heading}** "))
    out = []
    for ln in lines[i + 1 :]:
        if not ln.startswith("| ") or ln.startswith("| **"):
            break
        out.append(ln)
    return out


def test_report_marks_misaligned_values_and_never_bolds_them(report) -> None:  # type: ignore[no-untyped-def]
    md = str(report["md"])
    block = md[md.index("### Results") :].split("\n### ")[0].splitlines()
    for group in ("augmented", "Δ"):
        rows = {ln.split("|")[1].strip(): ln for ln in _section_rows(block, group)}
        for run in BAD:
            cells = [c.strip() for c in rows[run].strip("|").split("|")[1:]]
            assert cells and all(c.endswith("!") for c in cells), (group, run, cells)
            assert not any("**" in c for c in cells)
        assert "!" not in rows["clip4clip"]
    aug = {ln.split("|")[1].strip(): ln for ln in _section_rows(block, "augmented")}
    assert aug["clip4clip"].count("**") == 2 * 6  # the best comparable run of every column
    orig = {ln.split("|")[1].strip(): ln for ln in _section_rows(block, "original")}
    assert "!" not in "".join(orig.values())  # instance labels follow the run's own diagonal
    assert "GRAM" in orig and "**" in orig["GRAM"]  # GRAM is best on the original labels
    tex = (Path(str(report["dir"])) / "paper.tex").read_text()
    gram = [ln for ln in tex.splitlines() if ln.startswith("GRAM &")]
    assert len(gram) == 3 and "!" not in gram[0] and r"\textbf" in gram[0]
    assert all(ln.count(r"\textsuperscript{!}") == 6 and r"\textbf" not in ln for ln in gram[1:])
    # HTML: the same cells carry a superscript !; the intervals table marks them too
    html = str(report["html"])
    paper = html[html.index('data-key="paper"') :].split("</table>")[0]
    assert paper.count("<sup>!</sup>") == 2 * 2 * 6
    intervals = md[md.index("### Bootstrap") :].split("\n### ")[0]
    assert re.search(r"\| augmented \| GRAM \| R@1 \| [\d.]+!", intervals)


def test_report_latex_dir_one_file_per_chosen_table(report) -> None:  # type: ignore[no-untyped-def]
    d = Path(str(report["dir"]))
    assert sorted(p.name for p in d.iterdir()) == ["intervals.tex", "paper.tex", "tables.tex"]
    assert (d / "tables.tex").read_text().splitlines()[1:] == [r"\input{paper}", r"\input{intervals}"]
    assert "tex" in str(report["proc"].stdout)  # type: ignore[attr-defined]


def _footnote_words(tex: str) -> int:
    note = re.search(r"\\footnotesize (.*?)\\par\}", tex, flags=re.S)
    assert note is not None
    return len(note.group(1).split())


def test_paper_table_fits_one_cvpr_column(report) -> None:  # type: ignore[no-untyped-def]
    """3 runs × R@1/5/10 in both directions, two label sets and Δ: one column, >= 8 pt, no shrinking."""
    from fireval.report.latex import COLUMN_PT

    tex = (Path(str(report["dir"])) / "paper.tex").read_text()
    assert r"\begin{table}[t]" in tex and "table*" not in tex and "resizebox" not in tex
    size = tex.split(r"\label{tab:fireval-paper}")[1].splitlines()[1]
    assert size in (r"\small", r"\footnotesize")  # 9 or 8 pt in a 10 pt paper
    assert _footnote_words(tex) <= 40
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed")
    width, log = _compile_width(tex, Path(str(report["dir"])).parent / "cvpr")
    assert 0.5 * COLUMN_PT < width <= COLUMN_PT, width  # measured by TeX, not estimated
    assert "Overfull \\hbox" not in log


def _compile_width(tex: str, work: Path) -> tuple[float, str]:
    """Compile ``tex`` in a CVPR-like two-column 10 pt page; return the tabular's width (pt) and the log."""
    work.mkdir(exist_ok=True)
    body = tex.split(r"\label{", 1)[1].split("\n", 1)[1]
    body = body[: body.index(r"\end{tabular}") + len(r"\end{tabular}")]
    (work / "table.tex").write_text(tex, encoding="utf-8")
    doc = (
        "\\documentclass[10pt,twocolumn]{article}\n\\usepackage[T1]{fontenc}\n\\usepackage[utf8]{inputenc}\n"
        "\\usepackage{booktabs}\n\\usepackage{graphicx}\n"
        "\\setlength{\\textwidth}{6.875in}\\setlength{\\columnsep}{0.3125in}\n\\begin{document}\n"
        f"\\setbox0=\\hbox{{{body}}}\n\\typeout{{FIREVAL-WIDTH=\\the\\wd0}}\n"
        "\\input{table}\n\\end{document}\n"
    )
    (work / "doc.tex").write_text(doc, encoding="utf-8")
    proc = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    m = re.search(r"FIREVAL-WIDTH=([\d.]+)pt", proc.stdout)
    assert m is not None, proc.stdout[-2000:]
    return float(m.group(1)), (work / "doc.log").read_text(errors="replace")


def test_report_columns_pick_measures_and_groups(inputs) -> None:  # type: ignore[no-untyped-def]
    w = inputs["work"]
    r = run_cli(
        "report", *inputs["runs"], "-c", inputs["csv"], "-l", inputs["qrels"], "--names", "tvr",
        "-m", "R@1,R@5,R@10,MnR", "--resamples", "200", "--latex", w / "cols.tex", "--tables", "paper",
        "--columns", "R@1,MnR,augmented,delta", "-q", "--no-checks",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    tex = (w / "cols.tex").read_text()
    assert tex.count(r"\begin{table") == 1
    assert "run & R@1 & MnR$\\downarrow$ \\\\" in tex
    assert r"\textit{augmented}" in tex and r"\textit{$\Delta$}" in tex and r"\textit{original}" not in tex
    bad = run_cli(
        "report", *inputs["runs"][:1], "-c", inputs["csv"], "--latex", w / "x.tex", "--columns", "R@50", "-q",
        "--no-checks",
    )  # fmt: skip
    assert bad.returncode == 2 and "--columns" in bad.stderr and "Traceback" not in bad.stderr
    assert not (w / "x.tex").exists()


@pytest.fixture(scope="module")
def evaluated(inputs: dict) -> dict[str, object]:
    w = inputs["work"]
    r = run_cli(
        "evaluate", *inputs["runs"], "-c", inputs["csv"], "-l", inputs["qrels"], "--json", w / "e.json",
        "--latex", w / "e.tex", "--markdown", w / "e.md", "--names", "tvr",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return {"proc": r, "json": json.loads((w / "e.json").read_text()), "tex": (w / "e.tex").read_text()}


def test_evaluate_terminal_marks_and_fits_80_columns(evaluated) -> None:  # type: ignore[no-untyped-def]
    out = evaluated["proc"].stdout  # type: ignore[attr-defined]
    assert [ln for ln in out.splitlines() if len(ln) > 80] == []
    rows = [ln.split() for ln in out.splitlines() if ln.split()[:1] in (["GRAM"], ["VAST"])]
    assert rows
    for cells in rows:
        assert cells[1] in ("original", "augmented")
        vals = [v for v in cells[2:] if "." in v]  # the values (n, an integer, left out)
        assert vals
        assert all(v.endswith("!") for v in vals) == (cells[1] == "augmented")
    assert "! not comparable: the run fails the alignment check" in " ".join(out.split())


def test_evaluate_json_carries_check_status_per_value(evaluated) -> None:  # type: ignore[no-untyped-def]
    res = evaluated["json"]["results"]  # type: ignore[index]
    by = {(r["run"], r["labels"]): r for r in res}
    assert by[("GRAM", "augmented")]["checks"] == "fail" and by[("GRAM", "augmented")]["not_comparable"]
    assert by[("GRAM", "original")]["not_comparable"] is None
    assert by[("clip4clip", "augmented")]["not_comparable"] is None
    assert by[("clip4clip", "augmented")]["checks"] in ("pass", "inconclusive", "warn")


def test_evaluate_paper_table_latex(evaluated, tmp_path) -> None:  # type: ignore[no-untyped-def]
    tex = str(evaluated["tex"])
    assert r"\label{tab:fireval-results}" in tex and "resizebox" not in tex
    gram = [ln for ln in tex.splitlines() if ln.startswith("GRAM &")]
    assert len(gram) == 3 and r"\textsuperscript{!}" not in gram[0]
    assert all(r"\textsuperscript{!}" in ln and r"\textbf" not in ln for ln in gram[1:])
    assert _footnote_words(tex) <= 40
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed")
    from fireval.report.latex import PAGE_PT

    width, log = _compile_width(tex, tmp_path)
    assert width <= PAGE_PT and "Overfull \\hbox" not in log


def test_report_and_compare_fit_80_columns(inputs) -> None:  # type: ignore[no-untyped-def]
    w = inputs["work"]
    r = run_cli(
        "compare", *inputs["runs"], "-c", inputs["csv"], "-l", inputs["qrels"], "--resamples", "200", "-q",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [ln for ln in lines if len(ln.expandtabs()) > 80] == []
    # at 80 columns the rows are split into column blocks (the last holds the marks)
    gv = [ln for ln in lines if ln.split()[1:3] == ["GRAM", "VAST"]]
    marked = {ln.split()[0] for ln in gv if ln.endswith("!")}
    assert gv and marked == {ln.split()[0] for ln in gv}  # both misaligned: their augmented values too
    rep = run_cli(
        "report", *inputs["runs"], "-c", inputs["csv"], "--resamples", "200", "--markdown", w / "m.md",
    )  # fmt: skip
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout and all(len(ln) <= 80 for ln in rep.stdout.splitlines())


def test_columns_and_tables_need_a_table_output(inputs) -> None:  # type: ignore[no-untyped-def]
    for verb, opt in (("evaluate", "--columns"), ("report", "--columns"), ("report", "--tables")):
        value = "R@1" if opt == "--columns" else "paper"
        r = run_cli(
            verb, *inputs["runs"][:1], "-c", inputs["csv"], opt, value, "--no-checks", cwd=inputs["work"]
        )
        assert r.returncode == 2 and opt in r.stderr and "--latex" in r.stderr, (verb, opt, r.stderr)


def _wide(text: str, width: int = 80) -> list[str]:
    return [ln for ln in text.splitlines() if len(ln.expandtabs()) > width]


def test_bounds_estimate_check_and_stats_fit_80_columns(inputs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Item 4 beyond the default tables: evaluate's bounds table (137+ columns), estimate's table
    (99), check's records (214) and judgments stats' disagreements printed wider than 80."""
    args = (*inputs["runs"], "-c", inputs["csv"], "-l", inputs["qrels"])
    ev = run_cli(
        "evaluate", *args, "-m", "C@1,AP,MnR", "-d", "both", "--unjudged", "lower,condensed,upper,worst,best",
    )  # fmt: skip
    assert ev.returncode == 0, ev.stderr
    assert _wide(ev.stdout) == []
    flat = " ".join(ev.stdout.split())
    # one table per direction, the better side as an arrow, every value column somewhere
    for d in ("t2v", "v2t"):
        assert f"{d} (1/" in flat or f"{d}: unjudged" in flat
    for head in ("worst", "irrel.", "cond.", "rel.", "best", "cond. reaches", "MnR ↓", "C@1 ↑"):
        assert head in ev.stdout, head
    # the bounds of a misaligned run's augmented values carry ! too (item 1), the original ones not
    bounds = ev.stdout[ev.stdout.index("unjudged videos;") :]
    rows = [ln.split() for ln in bounds.splitlines() if ln.split()[:1] == ["GRAM"] and "↑" in ln]
    vals: dict[tuple[str, str], list[str]] = {}
    for c in rows:  # the value columns (the "cond. reaches" part has none)
        vals.setdefault((c[1], c[2]), []).extend(v for v in c[4:] if v[:1].isdigit())
    assert {k[0] for k in vals} == {"original", "augmented"}
    for (labels, measure), vs in vals.items():
        assert all(v.endswith("!") for v in vs) == (labels == "augmented"), (labels, measure, vs)
    est = run_cli("estimate", *args, "-d", "both")
    assert est.returncode == 0, est.stderr
    assert _wide(est.stdout) == [] and "method" in est.stdout and "[" in est.stdout
    chk = run_cli("check", *args[:-2])
    assert chk.returncode == 1, chk.stderr
    assert _wide(chk.stdout) == []
    assert "GRAM\talignment\tfail" in chk.stdout  # still greppable by run, check and status
    lst = run_cli("check", "--list")
    assert lst.returncode == 0 and _wide(lst.stdout) == []
    # judgments stats on a FIRE JSON file with long queries and many votes per item
    caps = [ln.split(",", 2)[2] for ln in inputs["csv"].read_text().splitlines()[1:9]]
    recs = [
        {
            "annotator_ids": [0, 1, 2, 3],
            "video_id": f"video{9000 + i}",
            "query": f"{c} while a person explains what happens at great length in a very long caption",
            "annotator_labels": ["relevant", "irrelevant", "relevant", "irrelevant"],
            "response_ids": [1] * 4,
            "queue_ids": [1] * 4,
            "models": ["CE"],
            "dataset": "MSRVTT",
        }
        for i, c in enumerate(caps)
    ]
    fire = tmp_path / "fire.json"
    fire.write_text(
        json.dumps({"annotations": [{**recs[0], "label": "relevant"}], "disagreements": recs[1:]})
    )
    st = run_cli("judgments", "stats", fire)
    assert st.returncode == 0, st.stderr
    assert _wide(st.stdout) == [] and "video9001" in st.stdout and "Disagreements" in st.stdout
