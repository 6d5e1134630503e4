from __future__ import annotations

from fireval.report.terminal import _fmt, _fmt_delta


def test_rank_measures_print_as_ranks_and_lower_is_better() -> None:
    assert _fmt("MnR", 12.34) == "12.3" and _fmt("C@1", 0.4567) == "45.7"
    assert _fmt_delta("MdR", -2.0) == "[green]-2.0[/]"
    assert _fmt_delta("MnR@100", 1.5) == "[red]+1.5[/]"
    assert _fmt_delta("C@5", 0.012) == "[green]+1.2[/]"
    assert _fmt_delta("nDCG@10", 0.0) == "[dim]+0.0[/]"
