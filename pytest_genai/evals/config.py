"""Evaluation settings as frozen dataclasses (validation only in ``__post_init__``), and the presets per
``--genai-scale``."""
from __future__ import annotations

import dataclasses


def _positive_or_none(owner: str, name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{owner}.{name} must be a positive integer or None (no limit), got {value!r}")


@dataclasses.dataclass(frozen=True)
class EvalBudget:
    """How much of each dataset one evaluation reads; None means all of it.

    WikiText: ``wikitext_pages`` pages drawn with ``seed`` (all pages when None), each first cut to its opening
    ``wikitext_page_tokens`` tokens (whole lines; None: whole pages), taken in that seeded order until
    ``wikitext_tokens`` tokens; the page that crosses the cap is cut at a line boundary. HellaSwag / BoolQ: a
    seeded subset of that many examples.
    """

    wikitext_pages: int | None = None
    wikitext_tokens: int | None = None
    wikitext_page_tokens: int | None = None
    hellaswag: int | None = None
    boolq: int | None = None
    seed: int = 1234

    def __post_init__(self) -> None:
        for name in ("wikitext_pages", "wikitext_tokens", "wikitext_page_tokens", "hellaswag", "boolq"):
            _positive_or_none("EvalBudget", name, getattr(self, name))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"EvalBudget.seed must be an integer, got {self.seed!r}")

    @property
    def id(self) -> str:
        def part(tag: str, value: int | None) -> str:
            return f"{tag}{'all' if value is None else value}"

        page_cap = () if self.wikitext_page_tokens is None else (part("wtpt", self.wikitext_page_tokens),)
        return "-".join((part("wtp", self.wikitext_pages), part("wtt", self.wikitext_tokens), *page_cap,
                         part("hs", self.hellaswag), part("bq", self.boolq), f"s{self.seed}"))

    def examples(self, task: str) -> int | None:
        return {"wikitext": self.wikitext_pages, "hellaswag": self.hellaswag, "boolq": self.boolq}[task]


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    """How the model is run: rolling-window length (``max_length``, lm-eval's window for word perplexity), the
    sliding-window ``context`` and ``stride`` of the token perplexity, batch size, CPU threads (None: every core
    this process may use), and the forward-only throughput measurement (a ``throughput_batch`` x
    ``throughput_seq`` batch of WikiText tokens, timed over ``throughput_rounds``: five or more, so the gate's interval
    of a row's tokens/s reaches 90% and can decide; fewer decide nothing). ``rounds``: the timed rounds of the
    side-by-side benchmarks' unjudged speed comparisons (whole evaluations). ``compare_examples``: HellaSwag examples
    (of the selected ones) scored by both this suite and lm-eval in the side-by-side benchmark, timed over
    ``compare_rounds`` interleaved rounds (each round: lm-eval, then this suite)."""

    max_length: int = 2048
    context: int = 2048
    stride: int = 512
    batch_size: int = 8
    threads: int | None = None
    throughput_batch: int = 8
    throughput_seq: int = 2048
    rounds: int = 5
    throughput_rounds: int = 5
    compare_examples: int = 1000
    compare_rounds: int = 5

    def __post_init__(self) -> None:
        for name in ("max_length", "context", "stride", "batch_size", "throughput_batch", "throughput_seq", "rounds",
                     "throughput_rounds", "compare_examples", "compare_rounds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"EvalSettings.{name} must be a positive integer, got {value!r}")
        _positive_or_none("EvalSettings", "threads", self.threads)
        if self.max_length < 2:
            raise ValueError(f"EvalSettings.max_length must be at least 2, got {self.max_length}")
        if self.stride > self.context:
            raise ValueError(f"EvalSettings.stride ({self.stride}) must not exceed context ({self.context}); "
                             "use stride == context for non-overlapping windows")
        if self.context > self.max_length:
            raise ValueError(f"EvalSettings.context ({self.context}) must not exceed max_length ({self.max_length})")

    @property
    def id(self) -> str:
        return f"L{self.max_length}-c{self.context}-s{self.stride}-b{self.batch_size}"


#: ``--genai-scale`` → (data budget, run settings). 'tiny' is what CI runs on two CPU cores.
PRESETS: dict[str, tuple[EvalBudget, EvalSettings]] = {
    # tiny WikiText: the opening ~680 tokens (whole lines) of each of the seeded order's first 3 articles (Bintulu,
    # 2003 Pacific typhoon season, Nerva), 2,048 tokens in all -- not the first 2,048 tokens of one article
    "tiny": (EvalBudget(wikitext_pages=3, wikitext_page_tokens=682, wikitext_tokens=2048, hellaswag=40, boolq=40),
             EvalSettings(max_length=512, context=512, stride=512, batch_size=4, throughput_batch=1,
                          throughput_seq=256, rounds=2, compare_examples=16)),
    "small": (EvalBudget(wikitext_tokens=32768, hellaswag=1000, boolq=1000),
              EvalSettings(max_length=1024, context=1024, stride=512, batch_size=8, throughput_batch=4,
                           throughput_seq=1024, compare_examples=200)),
    "full": (EvalBudget(), EvalSettings(max_length=2048, context=2048, stride=512, batch_size=8)),
}


def preset(scale: str | None, limit: int | None = None) -> tuple[EvalBudget, EvalSettings]:
    """The preset for ``--genai-scale`` (default 'tiny'); ``--genai-limit N`` sets every task's example count to N
    (WikiText: N pages) and keeps the scale's WikiText token cap."""
    scale = (scale or "tiny").strip().lower()
    if scale not in PRESETS:
        raise ValueError(f"--genai-scale {scale!r} is not an evaluation scale; use one of {', '.join(PRESETS)}")
    budget, settings = PRESETS[scale]
    if limit is not None:
        budget = dataclasses.replace(budget, wikitext_pages=limit, hellaswag=limit, boolq=limit)
    return budget, settings
