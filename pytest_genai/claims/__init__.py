"""The papers' expectations as data (TOML in ``claims/data``) and the pure checks against them."""
import contextlib
from typing import Any, Iterable

from pytest_genai.claims.check import FAIL, INCONCLUSIVE, NOT_APPLICABLE, PASS, Verdict, check_value, not_applicable
from pytest_genai.stats import Interval, bootstrap_ratio_interval, median_interval
from pytest_genai.claims.model import (Claim, ClaimsError, MetricDef, claims_by_id, default_metric_info, load_claims,
                                       load_metrics, parse_claims, parse_metrics)

__all__ = [
    "Claim", "ClaimsError", "FAIL", "INCONCLUSIVE", "Interval", "MetricDef", "NOT_APPLICABLE", "PASS", "Verdict",
    "bootstrap_ratio_interval", "check_value", "claims_by_id", "default_metric_info", "median_interval",
    "known_experiments", "load_claims", "load_metrics", "not_applicable", "parse_claims", "parse_metrics",
]


def known_experiments(records: Iterable[Any]) -> set[str]:
    """The experiments ``records`` name and the claims data's (where it loads): those a threshold may name."""
    experiments = {r.experiment for r in records if r.experiment}
    with contextlib.suppress(Exception):  # claims data unavailable: the records' own experiments are still known
        experiments |= {c.experiment for c in load_claims() if getattr(c, "experiment", None)}
    return experiments
