"""Reading the report's extra inputs: training captions for the train–test overlap."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from fireval.core.errors import InputError


def read_train_captions(path: str | Path, split: str | Path | None = None) -> list[str]:
    """Training captions from a file.

    * ``.txt``: one caption per line (blank lines skipped);
    * ``.csv``: the ``sentence`` or ``caption`` column;
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
        with p.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            fields = reader.fieldnames or []
            col = next((c for c in ("sentence", "caption", "text") if c in fields), None)
            if col is None:
                raise InputError(
                    f"CSV needs a 'sentence' or 'caption' column; found {fields}", source=str(p), line=1
                )
            out = [row[col] for row in reader]
    else:
        out = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    out = [c for c in out if c.strip()]
    if not out:
        raise InputError("no training captions found", source=str(p))
    return out
