"""Semantic-similarity proxies (Wray et al. 2021), automatic labels, offline text pipeline.

Modules (imported on demand; none loads WordNet or the tagger at import time):

* :mod:`~fireval.proxies.relevance` — BoW / PoS / SYN / METEOR caption × video relevance,
  :class:`~fireval.proxies.relevance.ProxyRelevance` (``.npz`` with provenance, ``Judgments``);
* :mod:`~fireval.proxies.iou` — sparse-matrix IoU kernels;
* :mod:`~fireval.proxies.meteor` — NLTK-exact METEOR, vectorised;
* :mod:`~fireval.proxies.matchers` — char / word TF-IDF and edit-distance auto positives;
* :mod:`~fireval.proxies.ivr` — IVR upper/lower bounds on C@K (Wray §5.2);
* :mod:`~fireval.proxies.ndcg` — nDCG@R in both directions and their mean (Wray Eq. 3), the
  exact expected nDCG@R of a random ranking;
* :mod:`~fireval.proxies.analysis` — Wray's Fig. 4 (relevant items per query vs threshold),
  App. B (Pearson r between proxies per video), the random-row sweep over processing settings;
* :mod:`~fireval.proxies.text`, :mod:`~fireval.proxies.tagger`, :mod:`~fireval.proxies.wordnet`
  — tokens, stop words (Glasgow; spaCy's as shipped data), class lists, shipped UPOS tagger,
  WordNet without a download.
"""

#: BLAS thread-count variables of the BLAS libraries numpy and SciPy ship with (OpenBLAS) or link
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS",)


def single_blas_thread() -> bool:
    """Ask numpy's BLAS for one thread, if numpy is not imported yet and the user set no count.

    The proxy builds do no dense linear algebra (sparse products and ufuncs are not BLAS), but
    OpenBLAS starts its worker threads when numpy is imported and they spin, waiting for work,
    before they sleep: on a warm ``fireval proxies build`` that is CPU time taken from the
    process's own thread (15-20 ms of CPU for ``import numpy`` on two cores). Meant for a command's
    process (the CLI), before the first ``import numpy``; returns whether it applied.
    """
    import os
    import sys

    if "numpy" in sys.modules or any(v in os.environ for v in _BLAS_THREAD_VARS):
        return False
    os.environ[_BLAS_THREAD_VARS[0]] = "1"
    return True
