"""Small helpers shared by the tests that drive the CLI in-process (``from tests.cli_helpers import ...``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


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
