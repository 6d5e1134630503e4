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
