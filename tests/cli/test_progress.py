"""Issue 24 item 8: progress on stderr for the long commands (``labels auto``, ``proxies build``,
``budget``, ``report``), silent with ``-q`` and when stderr is not a terminal, from one helper
(:func:`fireval.cli.common.progress_bar`)."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from fireval.cli import main


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_helper_draws_on_a_terminal_stderr_only(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from fireval.cli.common import progress_bar

    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    with progress_bar("matching captions") as progress:
        assert progress is not None
        progress(1, 3)
        progress(3, 3)
    assert "matching captions" in tty.getvalue() and out.getvalue() == ""
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    with progress_bar("matching captions", disable=True) as progress:  # -q
        assert progress is None
    assert tty.getvalue() == ""
    pipe = io.StringIO()  # not a terminal: a log or a pipe stays clean
    monkeypatch.setattr(sys, "stderr", pipe)
    with progress_bar("matching captions") as progress:
        assert progress is None
    assert pipe.getvalue() == ""


@pytest.fixture()
def calls(monkeypatch):  # type: ignore[no-untyped-def]
    """Every progress_bar a command opens: (description, disable)."""
    import fireval.cli.common as common

    seen: list[tuple[str, bool]] = []
    real = common.progress_bar

    @contextlib.contextmanager
    def spy(description: str = "evaluating", disable: bool = False) -> Iterator[object]:
        seen.append((description, disable))
        with real(description, disable) as cb:
            yield cb

    monkeypatch.setattr(common, "progress_bar", spy)
    import fireval.cli.report as report  # binds the helper at import: patch its name too

    monkeypatch.setattr(report, "progress_bar", spy)
    return seen


def _csv(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.csv"
    rows = ["key,vid_key,video_id,sentence"] + [
        f"q{i},m{i},v{i},a {w} is running on the grass" for i, w in enumerate(["dog", "cat", "man", "dog"])
    ]
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return p


def _run(args: list[str], capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as info:
        main(args)
    cap = capsys.readouterr()
    return info.value.code or 0, cap.out, cap.err


@pytest.mark.parametrize("quiet", [False, True])
def test_labels_auto_and_proxies_build_report_progress(tmp_path, capsys, calls, quiet) -> None:  # type: ignore[no-untyped-def]
    csv = _csv(tmp_path)
    q = ["-q"] if quiet else []
    code, out, err = _run(
        ["labels", "auto", "-c", str(csv), "--threshold", "0.5", "-o", str(tmp_path / "a.npz"), *q], capsys
    )
    assert code == 0, err
    assert any(d.startswith("auto labels") and dis == quiet for d, dis in calls), calls
    assert err == ""  # stderr is not a terminal here: nothing drawn, quiet or not
    calls.clear()
    code, out, err = _run(
        ["proxies", "build", "-p", "bow", "-c", str(csv), "-o", str(tmp_path / "b.npz"), *q], capsys
    )
    assert code == 0, err
    assert any("proxy" in d and dis == quiet for d, dis in calls), calls


def test_budget_takes_quiet(tmp_path, capsys, calls) -> None:  # type: ignore[no-untyped-def]
    csv = _csv(tmp_path)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", rng.normal(size=(4, 4)) + 2 * np.eye(4))
    code, _, err = _run(
        ["budget", str(tmp_path / "a.npy"), "-c", str(csv), "--n", "2,4", "--resamples", "50", "-q"], capsys
    )
    assert code == 0, err
    assert calls and all(dis for _, dis in calls)
