"""LaTeX escaping of notes: specials escaped, `code` spans set in \\texttt, stray backticks kept."""

from __future__ import annotations

from fireval.report.latex import escape


def test_code_span_becomes_texttt_and_specials_are_escaped() -> None:
    assert escape("as in `fireval evaluate`: 50% & x_y") == r"as in \texttt{fireval evaluate}: 50\% \& x\_y"


def test_specials_inside_a_code_span_are_escaped() -> None:
    assert escape("`--per-query a_b.tsv`") == r"\texttt{--per-query a\_b.tsv}"


def test_unbalanced_backtick_is_left_as_text() -> None:
    assert escape("a ` b") == "a ` b"
