"""The papers' expectations as data (TOML in ``claims/data``) and the pure checks against them."""
from pytest_genai.claims.check import FAIL, INCONCLUSIVE, NOT_APPLICABLE, PASS, Verdict, check_value, not_applicable
from pytest_genai.stats import Interval, bootstrap_ratio_interval, median_interval
from pytest_genai.claims.model import (Claim, ClaimsError, MetricDef, claims_by_id, default_metric_info, load_claims,
                                       load_metrics, parse_claims, parse_metrics)

__all__ = [
    "Claim", "ClaimsError", "FAIL", "INCONCLUSIVE", "Interval", "MetricDef", "NOT_APPLICABLE", "PASS", "Verdict",
    "bootstrap_ratio_interval", "check_value", "claims_by_id", "default_metric_info", "median_interval",
    "load_claims", "load_metrics", "not_applicable", "parse_claims", "parse_metrics",
]
