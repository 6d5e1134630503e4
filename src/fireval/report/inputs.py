"""Reading the report's extra inputs: training captions for the train–test overlap."""

from __future__ import annotations

import json
from pathlib import Path

from fireval.core.errors import InputError
from fireval.formats.datasets import _rows as csv_rows
from fireval.formats.textio import read_text


def read_train_captions(path: str | Path, split: str | Path | None = None) -> list[str]:
    """Training captions from a file.

    * ``.txt``: one caption per line (blank lines skipped);
    * ``.csv``: the ``sentence``, ``caption`` or ``text`` column; every row must have as many
      fields as the header (the strict reader of :mod:`fireval.formats.datasets`);
    * ``.json``: MSR-VTT official ``{video: {sen_id: caption}}``, MSVD ``{video: [captions]}``, or a
      plain list of captions. With ``split`` (a file of video ids, one per line) only those
      videos' captions are used.
    """
    p = Path(path)
    if not p.exists():
        raise InputError("training captions file not found", source=str(p))
    ext = p.suffix.lower()
    keep: set[str] | None = None
    if split is not None:
        sp = Path(split)
        if not sp.exists():
            raise InputError("split list not found", source=str(sp))
        keep = {ln.strip() for ln in sp.read_text(encoding="utf-8").splitlines() if ln.strip()}
    if ext == ".json":
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg}", source=str(p), line=exc.lineno) from None
        out: list[str] = []
        if isinstance(data, list):
            out = [str(x) for x in data]
        elif isinstance(data, dict):
            for vid, caps in data.items():
                if keep is not None and vid not in keep:
                    continue
                if isinstance(caps, dict):
                    out.extend(str(c) for c in caps.values())
                elif isinstance(caps, list):
                    out.extend(str(c) for c in caps)
                else:
                    raise InputError(f"video {vid!r}: expected a list or dict of captions", source=str(p))
        else:
            raise InputError("expected a JSON list of captions or a dict video -> captions", source=str(p))
    elif ext == ".csv":
        # the collections' strict reader: a row with more (or fewer) fields than the header, e.g.
        # a sentence with an unquoted comma, is an error naming the file and line, not a cut caption
        header, rows = csv_rows(read_text(p), str(p))
        lower = [h.lower() for h in header]
        col = next((lower.index(c) for c in ("sentence", "caption", "text") if c in lower), None)
        if col is None:
            raise InputError(
                f"CSV needs a 'sentence' or 'caption' column; found {header}", source=str(p), line=1
            )
        out = [row[col] for _, row in rows]
    else:
        out = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    out = [c for c in out if c.strip()]
    if not out:
        raise InputError("no training captions found", source=str(p))
    return out
