"""The estimators of ``fireval estimate``, as values with one definition and a citation each
(``fireval estimate --list``; docs/estimation.md). No numpy here: listing them stays light."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class EstimatorInfo:
    """One estimator (the ``method`` of an ``estimate`` record)."""

    name: str
    description: str
    citation: str
    docs: str = "docs/estimation.md"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


ESTIMATOR_INFO: tuple[EstimatorInfo, ...] = (
    EstimatorInfo(
        "exact",
        "Every query of the mean is decided by the known labels (lower = upper): the mean itself, "
        "CI of zero width; equals `fireval evaluate` with the same labels.",
        "-",
    ),
    EstimatorInfo(
        "stratified-ht",
        "Mean over queries = (sum of decided values + sum_h [sum x + N_h * mean over the sample of (y - x)]) / N, "
        "x a lower bound that does not depend on the sample (a difference estimator; x = 0 is plain "
        "Horvitz-Thompson); variance sum_h N_h^2 (1 - n_h/N_h) s_h^2 / n_h / N^2 of y - x; 95% CI "
        "(walk, the --budget default): Agresti-Coull's interval for the sampled strata's total as a share p "
        "of its largest value, at Kish's effective sample size p (1 - p) / variance; (--one-shot, --target): "
        "mean -/+ 1.96 sd with a rare-event variance floor; clipped to the bounds. Strata of undecided "
        "queries sampled without replacement (pi = n_h/N_h; --budget walks each sampled query in rank "
        "order, --one-shot judges all its candidates); members decided by other samples leave the "
        "stratum; unsampled strata and undecided sampled queries enter with their bounds. Walk with a "
        "second phase (the budget left could not finish every walk): of the u_h undecided sampled queries "
        "a random m_h were walked to the end, each weighing u_h/m_h; the variance adds "
        "(N_h/n_h)^2 u_h^2 (1/m_h - 1/u_h) s2_h^2 and s_h^2 is estimated unbiasedly from both phases.",
        "Horvitz & Thompson (1952), JASA 47(260); Cochran (1977), Sampling Techniques, 3rd ed., §5.3, "
        "§13.6; Hansen & Hurwitz (1946), JASA 41(236); Särndal, Swensson & Wretman (1992), Model Assisted "
        "Survey Sampling, ch. 9; Agresti & Coull (1998), The American Statistician 52(2); Wilson (1927), "
        "JASA 22(158); Kish (1965), Survey Sampling; Korn & "
        "Graubard (1998), Survey Methodology 24(2)",
    ),
    EstimatorInfo(
        "bounds",
        "No sample covers the measure and the labels leave queries undecided: no point estimate; the "
        "interval is the exact [lower, upper] over every labelling of the unjudged pairs.",
        "exact bounds: fireval.metrics.bounds (docs/metrics.md)",
    ),
    EstimatorInfo(
        "paired-difference",
        "A - B from the same labels when the runs' samples were drawn independently (--one-shot, "
        "--target, or a walk per run): est_A - est_B with variance var_A + var_B; bounds "
        "[lower_A - upper_B, upper_A - lower_B]. Reported with method stratified-ht.",
        "Cochran (1977), §5.3 (independent stratified samples)",
    ),
    EstimatorInfo(
        "paired-stratified",
        "A - B when the two runs' walks share one sample of queries (plan --budget --paired): mean of x_A - x_B + sum_h N_h * mean over the shared sample of e / N, with "
        "e = (y_A - x_A) - (y_B - x_B) per query (the runs' errors on the same queries cancel); variance "
        "sum_h N_h^2 (1 - n_h/N_h) s_e,h^2 / n_h / N^2 (with the walk's second phase, its two-phase "
        "form); 95% CI estimate -/+ 1.96 sd, clipped to [lower_A - upper_B, upper_A - lower_B].",
        "Cochran (1977), Sampling Techniques, 3rd ed., §5.3 (a stratified estimator of the per-query "
        "difference); Särndal, Swensson & Wretman (1992), Model Assisted Survey Sampling, ch. 9",
    ),
    EstimatorInfo(
        "sequential-exact",
        "`fireval plan --exact`: each round judges, per undecided query, its first unjudged candidate "
        "in rank order, until the labels decide every query (for C@K: the unjudged docs above the first "
        "relevant one inside the top K).",
        "FIRE §4.2 (Rodriguez et al. 2023) for pool bias; the walk: docs/estimation.md",
    ),
)
