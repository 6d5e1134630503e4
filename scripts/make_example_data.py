"""Build the bundled example in ``src/fireval/data/`` from the shared public data.

Writes (deterministic gzip, mtime 0):

- ``msrvtt_1ka.csv.gz``: the MSR-VTT 1k-A JSFusion CSV, byte for byte
  (``key,vid_key,video_id,sentence``; 1000 sentences × 1000 videos);
- ``msrvtt_1ka_captions.json.gz``: ``{video_id: {sen_id: caption}}`` with all 20 official
  captions of each of those 1000 videos, from ``official_test/test.json`` (videos in CSV row
  order, captions in the order of test.json, text verbatim);
- ``ATTRIBUTION.md``: sources, commits, licenses.

Usage: ``python scripts/make_example_data.py [SHARED_DATA_DIR]`` (default ``../shared/data``
relative to the repository root).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import sys
from pathlib import Path

from fireval.atomic import atomic_write

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "src" / "fireval" / "data"

ATTRIBUTION = """# Bundled example data: attribution

The files in this directory are a small extract of the MSR-VTT benchmark, bundled so that
`fireval demo` runs with no network and no other data.

- **Data**: MSR-VTT, (c) Xu, Mei, Yao and Rui, "MSR-VTT: A Large Video Description Dataset for
  Bridging Video and Language", CVPR 2016, Microsoft. The captions remain under the terms of
  the original dataset; the repositories below do not state a license for the data.
- `msrvtt_1ka.csv.gz`: the JSFusion 1k-A test split (Yu, Kim and Kim, ECCV 2018), file
  `MSRVTT_JSFUSION_test.csv` byte for byte, taken from layer6ai-labs/xpool @
  bc88718199007d395136adc99a3e69adbee874a0, path `data/MSRVTT/MSRVTT_JSFUSION_test.csv`
  (git blob 0ba60f72f279e4d75965de75b37e3fdd2340cc59; sha256 of the uncompressed file
  {csv_sha}). The repository states no license.
- `msrvtt_1ka_captions.json.gz`: the 20 official captions of each of those 1000 videos, extracted
  (no text edited) from the official MSR-VTT test annotations `data/MSR-VTT/metadata/test.json`
  of hobincar/SGN @ df5dff4eaf5f957826e374fd510383849451d348 (git blob
  099b8a2e5a219325e549a834143df2432890e861; repository license MIT, for its code). sha256 of
  the uncompressed extract: {json_sha}.

Built by `scripts/make_example_data.py` from `../shared/data` (see its SOURCES.md).
"""


def main(shared: Path) -> None:
    csv_path = shared / "msrvtt" / "MSRVTT_JSFUSION_test.csv"
    test_json = shared / "msrvtt" / "official_test" / "test.json"
    raw_csv = csv_path.read_bytes()
    rows = list(csv.DictReader(io.StringIO(raw_csv.decode("utf-8"), newline="")))
    videos = list(dict.fromkeys(r["video_id"] for r in rows))
    official = json.loads(test_json.read_text(encoding="utf-8"))
    captions = {v: official[v] for v in videos}
    raw_json = json.dumps(captions, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    OUT.mkdir(parents=True, exist_ok=True)
    for name, raw in (("msrvtt_1ka.csv.gz", raw_csv), ("msrvtt_1ka_captions.json.gz", raw_json)):
        with atomic_write(OUT / name, "wb") as fh:
            fh.write(gzip.compress(raw, compresslevel=9, mtime=0))
    with atomic_write(OUT / "ATTRIBUTION.md", "w", encoding="utf-8") as fh:
        fh.write(
            ATTRIBUTION.format(
                csv_sha=hashlib.sha256(raw_csv).hexdigest(), json_sha=hashlib.sha256(raw_json).hexdigest()
            )
        )
    n_caps = sum(len(c) for c in captions.values())
    total = sum(f.stat().st_size for f in OUT.iterdir() if f.is_file())
    print(f"{len(rows)} sentences, {len(videos)} videos, {n_caps} captions; {total} bytes in {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "data")
