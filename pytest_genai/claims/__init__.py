"""The papers' expectations as data (TOML in ``claims/data``) and the pure checks against them."""
from pytest_genai.claims.check import FAIL, NOT_APPLICABLE, PASS, Verdict, check_value, not_applicable
from pytest_genai.claims.model import (
    Claim,
    ClaimsError,
    MetricDef,
    load_claims,
    load_metrics,
    parse_claims,
    parse_metrics,
)

__all__ = [
    "Claim", "ClaimsError", "FAIL", "MetricDef", "NOT_APPLICABLE", "PASS", "Verdict", "check_value",
    "load_claims", "load_metrics", "not_applicable", "parse_claims", "parse_metrics",
]
