"""Train the shipped UPOS tagger on UD English-EWT train and report its accuracy.

Usage::

    .venv/bin/python scripts/train_tagger.py [--data ../shared/data/ud_english_ewt] [--iter 5]

Writes ``src/fireval/proxies/tagger_upos_ewt.json.gz`` (gzip JSON, no pickle) and prints
UPOS accuracy on EWT dev and test, cased and lowercased.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from fireval.proxies import tagger as tg

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "ud_english_ewt")
    ap.add_argument("--iter", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=tg.WEIGHTS_PATH)
    args = ap.parse_args()
    train = list(tg.read_conllu_upos(args.data / "en_ewt-ud-train.conllu"))
    t0 = time.perf_counter()
    model = tg.train(train, n_iter=args.iter, seed=args.seed)
    print(f"trained on {len(train)} sentences (+ lowercased copies) in {time.perf_counter() - t0:.1f} s")
    tg.save(model, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
    shipped = tg.load_tagger(str(args.out))
    for split in ("dev", "test"):
        gold = list(tg.read_conllu_upos(args.data / f"en_ewt-ud-{split}.conllu"))
        for lower in (False, True):
            acc, n = tg.accuracy(gold, shipped, lowercase=lower)
            print(f"UPOS accuracy EWT {split}{' (lowercased)' if lower else ''}: {acc:.4f} on {n} tokens")


if __name__ == "__main__":
    main()
