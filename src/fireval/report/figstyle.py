"""What every report figure shares: one colour per run, the paper sizes, and the ``!`` marks.

* **Colours.** A run's colour is a function of its name and of the set of runs shown, never of
  the order they were given in: the names are taken in sorted order, and each takes the slot of
  the Okabe–Ito palette (Okabe & Ito 2008; safe under every common colour-vision deficiency)
  that the CRC-32 of its name picks, or the next free one. So ``report a b c`` and
  ``report c a b`` draw ``a`` in the same colour in every figure and in the HTML report, and most
  runs keep their colour when another run joins. Yellow (too light on white) and black (used
  for error bars and medians) are left out, so six runs get six colours; a seventh repeats one.
* **Sizes.** One-column figures are 3.3 in wide and at most 2.5 in high (:data:`MAX_1COL_HEIGHT`);
  two-column figures 6.9 in wide.
* **Marks.** A run that fails the alignment check (:meth:`fireval.checks.ChecksReport.unaligned_runs`)
  has its augmented values and its per-query pairings marked ``!`` (legend entries, bar labels,
  panel titles, heat-map cells), as in the tables (:data:`MARK`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

#: Okabe & Ito (2008) colour-blind-safe palette (black last)
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2", "#CC79A7", "#F0E442", "#000000")
#: the run colours: Okabe–Ito without yellow and black
RUN_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9")
#: one-column figures: at most this high (inches)
MAX_1COL_HEIGHT = 2.5
#: the mark of a value that depends on a misaligned run
MARK = "!"
#: the sentence that explains :data:`MARK` under a figure
MARK_NOTE = (
    f"{MARK}: the run fails the alignment check (its rows are probably not the collection's captions), "
    "so its augmented values and its per-query pairings with other runs are not comparable (see fireval check)."
)


def run_colours(runs: Iterable[str]) -> dict[str, str]:
    """``{run: colour}``, independent of the order of ``runs`` (see the module docstring)."""
    names = sorted(set(runs))
    n = len(RUN_PALETTE)
    out: dict[str, str] = {}
    used: set[int] = set()
    for name in names:
        slot = zlib.crc32(name.encode("utf-8")) % n
        if len(used) < n:
            while slot in used:
                slot = (slot + 1) % n
        used.add(slot)
        out[name] = RUN_PALETTE[slot]
    return out


def marked(run: str, unaligned: Iterable[str]) -> str:
    """``run`` with `` !`` when it fails the alignment check."""
    return f"{run} {MARK}" if run in set(unaligned) else run
