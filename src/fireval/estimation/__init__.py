"""Estimation under incomplete judgments: plan what to judge, estimate corrected scores with CIs.

Rooms (docs/estimation.md):

* :mod:`~fireval.estimation.status` — per query, the exact bounds the labels leave and the
  unjudged pairs that can change a measure (C@K, P@K, RR, MnR);
* :mod:`~fireval.estimation.stratified` — the stratified Horvitz–Thompson estimator, its
  variance and CI, the allocation of a budget across strata, the stratified sample;
* :mod:`~fireval.estimation.plan` — designs (strata, sample sizes, seed) and plan files
  (pool files with the design in the header);
* :mod:`~fireval.estimation.estimate` — estimates per run, direction and measure, and paired
  differences;
* :mod:`~fireval.estimation.workflow` — what ``fireval plan`` and ``fireval estimate`` run;
* :mod:`~fireval.estimation.definitions` — the estimators as described values
  (``fireval estimate --list``).

It uses :mod:`fireval.metrics` for values and bounds, and :mod:`fireval.judging` only through
files (a plan is a pool file). Importing the package is light; the sub-modules import numpy.
"""
