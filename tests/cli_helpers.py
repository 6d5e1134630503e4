"""Small helpers shared by the tests that drive the CLI in-process (``from tests.cli_helpers import ...``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest


def exit_code(args: list[str]) -> int:
    """Run ``fireval ARGS`` in this process and return its exit status (0 when it returns)."""
    from fireval.cli import main

    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def write_csv_collection(path: Path, rows: Iterable[tuple[str, str]]) -> Path:
    """An MSR-VTT style collection CSV (``key,vid_key,video_id,sentence``): one caption a
    ``(video_id, sentence)`` row, keys ``c0, c1, ...``."""
    path.write_text(
        "key,vid_key,video_id,sentence\n" + "".join(f"c{i},m{i},{v},{t}\n" for i, (v, t) in enumerate(rows))
    )
    return path


def refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """Run ``fireval ARGS`` in this process and check that it refuses as bad input must: exit 2,
    no traceback, one line on stderr. Returns ``(stdout, stderr)``."""
    from fireval.cli import main

    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    assert info.value.code == 2, (out, err)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return out, err


def write_1ka_run_and_collection(d: Path) -> Path:
    """``d/good.npy`` (the identity run of MSR-VTT 1k-A) and ``d/coll.csv.gz`` (the bundled 1k-A
    collection)."""
    np.save(d / "good.npy", np.eye(1000, dtype=np.float32))
    src = Path(__file__).resolve().parents[1] / "src" / "fireval" / "data" / "msrvtt_1ka.csv.gz"
    shutil.copy(src, d / "coll.csv.gz")
    return d
