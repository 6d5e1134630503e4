"""Grades are validated on input, exponential gain never overflows silently, no NaN reaches a mean
(issue 11, item 4).

Before: a qrels grade of 1024 made ``2^g`` overflow, that query's nDCG_exp became NaN and the
mean silently left it out (999 of 1000 queries), exit 0.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from fireval.cli import main
from fireval.core import InputError, Judgments
from fireval.core.errors import InternalError
from fireval.formats.example import load_example
from fireval.formats.grades import GRADE_MAX
from fireval.formats.labels import write_graded_arrays
from fireval.metrics import evaluate
from fireval.metrics.measures import MAX_EXP_GRADE

kernel = importlib.import_module("fireval.metrics.kernel")


def _exit(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    cap = capsys.readouterr()
    return info.value.code or 0, cap.err


@pytest.fixture()
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "good.npy", np.eye(1000, dtype=np.float32))
    return tmp_path


@pytest.mark.parametrize(
    ("grade", "needle"),
    [
        ("1024", "grade 1024 is not an integer <= 100"),
        ("101", "grade 101 is not an integer <= 100"),
        (
            "2.5",
            "grade 2.5 is not an integer <= 100 (0: judged irrelevant, < 0: pooled, not judged); non-integer grades are accepted for proxy labels only",
        ),
        ("inf", "relevance inf is not finite"),
    ],
)
def test_qrels_grades_checked(work, capsys, grade, needle):
    (work / "x.qrels").write_text(f"ret0 0 video9770 1\nret1 0 video7020 {grade}\n")
    code, err = _exit(["evaluate", "good.npy", "-l", "x.qrels", "-m", "nDCG_exp@10", "--no-checks"], capsys)
    assert code == 2 and "Traceback" not in err
    assert f"x.qrels:2: {needle}" in err


def _npz(path, grades, source):
    coll = load_example().collection
    n = len(grades)
    write_graded_arrays(
        path,
        shape=coll.shape,
        rows=np.arange(n),
        cols=np.arange(n),
        grades=np.asarray(grades, dtype=np.float64),
        source=source,
        caption_ids=coll.caption_ids,
        video_ids=coll.video_ids,
    )


@pytest.mark.parametrize(
    ("grades", "source", "ok"),
    [
        ([1, 2, 3], "human", True),
        ([1, 2.5, 3], "auto:char", False),
        ([1, 1024, 3], "human", False),
        ([0.37, 0.0, 1.0], "proxy:bow", True),
        ([0.37, -0.1, 1.0], "proxy:bow", False),
        ([0.37, 1e300, 1.0], "proxy:bow", False),
    ],
)
def test_npz_grades_checked(work, capsys, grades, source, ok):
    _npz(work / "l.npz", grades, source)
    code, err = _exit(
        ["evaluate", "good.npy", "-l", "l.npz", "-m", "nDCG_exp@10", "-q", "--no-checks"], capsys
    )
    if ok:
        assert code == 0, err
    else:
        assert code == 2 and "l.npz: label 1: grade" in err and "Traceback" not in err


def test_exponential_gain_refuses_instead_of_dropping_a_query():
    coll = load_example().collection
    run = np.eye(1000, dtype=np.float32)
    from fireval.core import Run

    r = Run(name="eye", scores=run)
    big = np.ones(1000)
    big[0] = 1024
    j = Judgments.from_arrays(coll.shape, np.arange(1000), np.arange(1000), big, "human")
    with pytest.raises(InputError, match="grade 1024 is too large for the exponential gain"):
        evaluate(r, j, measures="nDCG_exp@10")
    assert evaluate(r, j, measures="nDCG@10").value("nDCG@10") == 1.0  # linear gain is fine
    big[0] = MAX_EXP_GRADE  # the largest accepted grade: finite, every query counted
    j = Judgments.from_arrays(coll.shape, np.arange(1000), np.arange(1000), big, "human")
    res = evaluate(r, j, measures="nDCG_exp@10", per_query=True)
    assert res.value("nDCG_exp@10") == 1.0
    assert not res.per_query["value"].isna().any()
    assert GRADE_MAX < MAX_EXP_GRADE


def test_nan_for_a_query_with_a_relevant_doc_is_an_internal_error(work, capsys, monkeypatch):
    real = kernel.compute_chunk

    def broken(*args, **kwargs):
        res = real(*args, **kwargs)
        for v in res.values.values():
            v[0] = np.nan  # as an overflow would
        return res

    monkeypatch.setattr(kernel, "compute_chunk", broken)
    coll = load_example().collection
    from fireval.core import Run

    with pytest.raises(InternalError, match="NaN for 1 queries that have a relevant doc"):
        evaluate(
            Run(name="eye", scores=np.eye(1000, dtype=np.float32)), coll.instance_judgments(), measures="C@1"
        )
    code, err = _exit(["evaluate", "good.npy", "-m", "C@1", "-q", "--no-checks"], capsys)
    assert code == 3 and "fireval: internal error" in err and "Traceback" not in err
