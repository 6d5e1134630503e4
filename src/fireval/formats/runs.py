"""What kind of run file a path holds, decided from its first bytes, with clear errors for common mistakes.

- ``\\x93NUMPY`` → a ``.npy`` score matrix; a zip archive of ``.npy`` members → ``.npz``.
- A PyTorch file (``.pt``/``.pth``/``.ckpt``, a zip holding ``data.pkl``, or pickle data, which
  starts with byte ``0x80``) is refused: fireval never unpickles (loading a pickle runs code).
  The message says how to save the tensor as ``.npy``.
- Text (gzip or not) is a TREC run (``qid Q0 docid rank score tag``). A comma-separated table or a
  matrix of numbers as text is refused with what is accepted and how to convert it.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from fireval.core import InputError
from fireval.formats.textio import GZIP_MAGIC, PathLike

PICKLE_SUFFIXES = (".pt", ".pth", ".ckpt", ".pkl", ".pickle")

SAVE_HINT = "save the scores with `numpy.save(path, tensor.cpu().numpy())` and pass the .npy file"
ACCEPTED = (
    "a run is a score matrix (.npy/.npz, caption x video, e.g. `numpy.save('run.npy', scores)`) "
    "or a TREC run file (whitespace-separated lines `qid Q0 docid rank score tag`)"
)


def _is_torch_zip(path: Path) -> bool:
    import zipfile  # only for zip files (start-up of `fireval evaluate run.npy`, issue 14)

    try:
        with zipfile.ZipFile(path) as z:
            return any(n == "data.pkl" or n.endswith("/data.pkl") for n in z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def run_kind(path: PathLike) -> str:
    """``"npy"``, ``"npz"`` or ``"trec"`` for a run file; :class:`InputError` for anything else."""
    p = Path(path)
    src = str(p)
    if p.is_dir():
        raise InputError("is a directory; give a run file", source=src)
    try:
        with p.open("rb") as fh:
            head = fh.read(1 << 16)
    except FileNotFoundError:
        raise InputError("run file not found", source=src) from None
    suffix = p.suffix.lower()
    is_zip = head.startswith(b"PK\x03\x04")
    if suffix in PICKLE_SUFFIXES or head[:1] == b"\x80" or (is_zip and _is_torch_zip(p)):
        raise InputError(
            f"a PyTorch/pickle file: fireval never unpickles (loading a pickle runs its code); {SAVE_HINT}",
            source=src,
        )
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if is_zip or suffix in (".npz", ".npy"):
        return "npz" if is_zip or suffix == ".npz" else "npy"
    if head[:2] == GZIP_MAGIC:
        try:
            with gzip.open(p, "rb") as fh:
                head = fh.read(1 << 16)
        except (OSError, EOFError) as exc:
            raise InputError(f"cannot read: {exc}", source=src) from None
    text = head.decode("utf-8", "replace")
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    fields = first.split()
    if "," in first and len(fields) != 6:
        cells = [c.strip() for c in first.split(",")]
        if any(c and not _is_number(c) for c in cells):  # a header: caption ids x video ids
            how = (
                "A CSV of scores with caption ids as rows and video ids as its header converts, ids "
                "kept, with `df = pandas.read_csv(path, index_col=0); numpy.savez('run.npz', "
                "scores=df.to_numpy(float), query_ids=df.index.to_numpy(str), doc_ids=df.columns.to_numpy(str))`"
            )
        else:
            how = (
                "A CSV matrix of scores converts with "
                "`numpy.save('run.npy', numpy.loadtxt('scores.csv', delimiter=','))`"
            )
        raise InputError(
            f"looks like a CSV table (comma-separated), not a TREC run; {ACCEPTED}. {how}",
            source=src,
            line=1,
        )
    if len(fields) > 1 and all(_is_number(f) for f in fields):
        raise InputError(
            f"looks like a matrix of numbers as text, not a TREC run; {ACCEPTED}. Convert it with "
            "`numpy.save('run.npy', numpy.loadtxt(path))`",
            source=src,
            line=1,
        )
    return "trec"
