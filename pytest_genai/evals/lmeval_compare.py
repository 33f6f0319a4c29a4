"""The same evaluations run by lm-evaluation-harness, for a side-by-side check of this suite.

lm-eval's own pieces are used end to end: its ``HFLM`` model class (given the already-loaded model and tokenizer, so
nothing is downloaded), its ``wikitext`` task functions (``wikitext_detokenizer``, ``process_results``) and its
``weighted_perplexity`` / ``bits_per_byte`` aggregations. Only the documents are ours: the same raw pages this suite
scores, passed in as the task's ``{"page": ...}`` documents instead of lm-eval's hub copy. For HellaSwag the same
(query, " " + ending) pairs go through ``HFLM.loglikelihood``, as lm-eval's ``multiple_choice`` tasks send them.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from pytest_genai import progress


class LmEvalUnavailable(ImportError):
    pass


@dataclasses.dataclass(frozen=True)
class LmEvalWikitext:
    word_perplexity: float
    byte_perplexity: float
    bits_per_byte: float
    loglikelihoods: tuple[float, ...]


def _lm_eval() -> Any:
    try:
        import lm_eval  # noqa: F401
        from lm_eval.api.instance import Instance
        from lm_eval.api.metrics import bits_per_byte, weighted_perplexity
        from lm_eval.models.huggingface import HFLM
        from lm_eval.tasks.wikitext import preprocess_wikitext
    except ImportError as exc:
        raise LmEvalUnavailable(f"lm-evaluation-harness is not importable ({exc}); `pip install pytest-genai[lmeval]`") from None
    return Instance, HFLM, preprocess_wikitext, weighted_perplexity, bits_per_byte


def make_hflm(model: Any, tokenizer: Any, *, max_length: int, batch_size: int, device: Any) -> Any:
    """lm-eval's HF model class around an already-loaded model (no download, no second copy)."""
    _, HFLM, *_ = _lm_eval()
    return HFLM(pretrained=model, tokenizer=tokenizer, max_length=max_length, batch_size=batch_size, device=str(device))


def wikitext_requests(pages: Sequence[str]) -> list[Any]:
    """lm-eval ``loglikelihood_rolling`` requests for raw pages, built with the wikitext task's own detokenizer."""
    Instance, _, pre, *_ = _lm_eval()
    return [Instance(request_type="loglikelihood_rolling", doc={"page": page},
                     arguments=(pre.wikitext_detokenizer({"page": page}),), idx=i)
            for i, page in enumerate(pages)]


def rolling_loglikelihoods(hflm: Any, requests: Sequence[Any]) -> list[float]:
    return list(hflm.loglikelihood_rolling(list(requests), disable_tqdm=not progress.bars_enabled()))


def wikitext_metrics(pages: Sequence[str], loglikelihoods: Sequence[float]) -> LmEvalWikitext:
    """Aggregate with lm-eval's ``process_results`` and metric functions."""
    _, _, pre, weighted_perplexity, bits_per_byte = _lm_eval()
    per_doc = [pre.process_results({"page": page}, [ll]) for page, ll in zip(pages, loglikelihoods)]
    return LmEvalWikitext(
        word_perplexity=float(weighted_perplexity([d["word_perplexity"] for d in per_doc])),
        byte_perplexity=float(weighted_perplexity([d["byte_perplexity"] for d in per_doc])),
        bits_per_byte=float(bits_per_byte([d["bits_per_byte"] for d in per_doc])),
        loglikelihoods=tuple(float(x) for x in loglikelihoods),
    )


def loglikelihood_requests(pairs: Sequence[tuple[str, str]]) -> list[Any]:
    """lm-eval ``loglikelihood`` requests for (context, continuation) string pairs."""
    Instance, *_ = _lm_eval()
    return [Instance(request_type="loglikelihood", doc={}, arguments=(ctx, cont), idx=i)
            for i, (ctx, cont) in enumerate(pairs)]


def loglikelihoods(hflm: Any, requests: Sequence[Any]) -> list[float]:
    return [float(ll) for ll, _greedy in hflm.loglikelihood(list(requests), disable_tqdm=not progress.bars_enabled())]
