"""Text rules of lm-evaluation-harness's ``wikitext`` task, restated: the detokenizer applied before scoring, and the
word and byte counts its word perplexity and bits per byte divide by (counted on the page *before* detokenizing)."""
from __future__ import annotations

import re

# (kind, pattern, replacement), applied in order; same rules and order as lm-eval's wikitext_detokenizer.
_RULES: tuple[tuple[str, str, str], ...] = (
    ("str", "s '", "s'"),                             # contractions
    ("re", r"/' [0-9]/", r"/'[0-9]/"),
    ("str", " @-@ ", "-"),                            # number separators
    ("str", " @,@ ", ","),
    ("str", " @.@ ", "."),
    ("str", " : ", ": "),                             # punctuation
    ("str", " ; ", "; "),
    ("str", " . ", ". "),
    ("str", " ! ", "! "),
    ("str", " ? ", "? "),
    ("str", " , ", ", "),
    ("re", r"\(\s*([^\)]*?)\s*\)", r"(\1)"),          # brackets and quotes hug their contents
    ("re", r"\[\s*([^\]]*?)\s*\]", r"[\1]"),
    ("re", r"{\s*([^}]*?)\s*}", r"{\1}"),
    ("re", r"\"\s*([^\"]*?)\s*\"", r'"\1"'),
    ("re", r"'\s*([^']*?)\s*'", r"'\1'"),
    ("str", "= = = =", "===="),                        # headings
    ("str", "= = =", "==="),
    ("str", "= =", "=="),
    ("str", " \u00b0 ", "\u00b0"),                     # degree sign
    ("str", " \n", "\n"),
    ("str", "\n ", "\n"),
    ("str", " N ", " 1 "),
    ("str", " 's", "'s"),
)


def detokenize_wikitext(page: str) -> str:
    """Undo WikiText's tokenisation (``@-@``, spaced punctuation, spaced brackets) the way lm-eval does before
    computing the rolling log-likelihood of a page."""
    for kind, pattern, replacement in _RULES:
        page = page.replace(pattern, replacement) if kind == "str" else re.sub(pattern, replacement, page)
    return page


def count_words(page: str) -> int:
    """lm-eval's word count for word perplexity: ``len(re.split(r"\\s+", page))`` on the raw page (so leading and
    trailing whitespace each add an empty 'word', exactly as lm-eval counts)."""
    return len(re.split(r"\s+", page))


def count_bytes(page: str) -> int:
    """UTF-8 bytes of the raw page: the denominator of lm-eval's byte perplexity and bits per byte."""
    return len(page.encode("utf-8"))
