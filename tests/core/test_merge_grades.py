"""Instance positives are "relevant, grade unknown" in :func:`fireval.core.merge`.

Definition (written from the policy, not from the code): for each pair, order its labels by
(position of the source's kind or name in the precedence, part number); the first decides
relevant vs irrelevant and the source. When that winner is an ``instance`` label with grade > 0
and another (non-instance) label of the pair is relevant, the pair's grade is the grade of the
first such label in that order. ``regraded`` counts, per grading source, the pairs whose grade
changed.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fireval import api
from fireval.core import Collection, Judgments, merge
from fireval.core.judgments import DEFAULT_PRECEDENCE, FIRE_PRECEDENCE

SHAPE = (3, 3)


def _gold() -> Judgments:
    return Judgments.instance([0, 1, 2], 3)


def _grades(j: Judgments) -> dict[tuple[int, int], float]:
    return {(int(r), int(c)): float(g) for r, c, g in zip(j.rows, j.cols, j.grades, strict=True)}


def test_human_grade_3_on_a_gold_pair_is_kept_under_fire_precedence() -> None:
    human = Judgments.from_arrays(SHAPE, [0, 1], [0, 2], [3.0, 2.0], "human")
    m = merge([_gold(), human], FIRE_PRECEDENCE)
    g = _grades(m)
    assert g[(0, 0)] == 3.0  # gold pair: the human grade, not 1
    assert g[(1, 1)] == 1.0 and g[(2, 2)] == 1.0  # gold pairs without another grade
    assert g[(1, 2)] == 2.0
    assert dict(m.regraded) == {"human": 1}
    assert m.source_per_label[np.flatnonzero((m.rows == 0) & (m.cols == 0))[0]] == "instance"


def test_relevance_conflicts_are_decided_as_before() -> None:
    human = Judgments.from_arrays(SHAPE, [0], [0], [0.0], "human")
    m = merge([_gold(), human], FIRE_PRECEDENCE)  # instance wins: relevant, grade 1, human overruled
    assert _grades(m)[(0, 0)] == 1.0 and dict(m.overruled) == {"human": 1} and not m.regraded
    m = merge([_gold(), human], DEFAULT_PRECEDENCE)  # human wins: irrelevant
    assert _grades(m)[(0, 0)] == 0.0 and dict(m.overruled) == {"instance": 1}


def test_an_equal_grade_is_not_counted_and_proxy_grades_gold_only_without_a_better_source() -> None:
    human = Judgments.from_arrays(SHAPE, [0], [0], [1.0], "human")
    proxy = Judgments.from_arrays(SHAPE, [0, 1], [0, 1], [40.0, 55.0], "proxy:bow")
    m = merge([_gold(), proxy, human], FIRE_PRECEDENCE)
    assert _grades(m)[(0, 0)] == 1.0  # human (ranked before proxy) grades it 1: unchanged
    assert _grades(m)[(1, 1)] == 55.0
    assert dict(m.regraded) == {"proxy:bow": 1}


def test_label_warnings_report_the_regraded_pairs_in_one_line(tmp_path) -> None:
    coll = Collection.from_pairs("x", [(f"c{i}", f"v{i}", f"caption {i}") for i in range(3)])
    qrels = tmp_path / "graded.qrels"
    qrels.write_text("c0 0 v0 3\nc1 0 v1 1\n")
    sets = api.label_sets(coll, [str(qrels)])
    assert _grades(sets["augmented"])[(0, 0)] == 3.0
    ws = api.label_warnings(sets)
    assert ws == [
        "labels 'augmented': instance positives carry no grade: 1 take the grade of their human label"
    ]


def _oracle(parts: list[Judgments], precedence: tuple[str, ...]) -> dict[tuple[int, int], tuple[float, str]]:
    def rank(source: str) -> int:
        for i, key in enumerate(precedence):
            if source == key or source.split(":")[0] == key:
                return i
        return len(precedence)

    labels: dict[tuple[int, int], list[tuple[int, int, float, str]]] = {}
    for no, p in enumerate(parts):
        for r, c, g, s in zip(p.rows, p.cols, p.grades, p.source_per_label, strict=True):
            labels.setdefault((int(r), int(c)), []).append((rank(str(s)), no, float(g), str(s)))
    out = {}
    for pair, ls in labels.items():
        ls.sort()
        _, _, grade, src = ls[0]
        if src == "instance" and grade > 0:
            others = [x for x in ls if x[3] != "instance" and x[2] > 0]
            if others:
                grade = others[0][2]
        out[pair] = (grade, src)
    return out


_SOURCES = ("human", "proxy:bow", "auto:exact")


@st.composite
def _parts(draw):  # type: ignore[no-untyped-def]
    n, m = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    gold = Judgments.instance(draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n)), m)
    parts = [gold]
    for src in draw(st.lists(st.sampled_from(_SOURCES), max_size=3)):
        cells = draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, m - 1)), max_size=n * m))
        cells = sorted(cells)
        grades = draw(
            st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0]), min_size=len(cells), max_size=len(cells))
        )
        parts.append(Judgments.from_arrays((n, m), [r for r, _ in cells], [c for _, c in cells], grades, src))
    draw(st.randoms()).shuffle(parts)
    return parts


@settings(max_examples=150, deadline=None)
@given(_parts(), st.sampled_from([FIRE_PRECEDENCE, DEFAULT_PRECEDENCE, ("proxy", "instance")]))
def test_merge_matches_the_definition(parts: list[Judgments], precedence: tuple[str, ...]) -> None:
    m = merge(parts, precedence)
    got = {
        (int(r), int(c)): (float(g), str(s))
        for r, c, g, s in zip(m.rows, m.cols, m.grades, m.source_per_label, strict=True)
    }
    assert got == _oracle(parts, precedence)


def test_evaluate_json_label_summary_counts_the_regraded_pairs(tmp_path) -> None:
    coll = Collection.from_pairs("x", [(f"c{i}", f"v{i}", f"caption {i}") for i in range(3)])
    qrels = tmp_path / "graded.qrels"
    qrels.write_text("c0 0 v0 3\nc2 0 v1 2\n")
    sets = api.label_sets(coll, [str(qrels)])
    res = api.evaluate_runs({"r": api.load_run(np.eye(3), coll)}, sets, measures=["nDCG@10"])
    summary = res.to_dict()["labels"]["augmented"]
    assert summary["human"]["regraded"] == 1 and summary["instance"]["regraded"] == 0
    assert summary["instance"]["relevant"] == 3  # the gold pair keeps its source
