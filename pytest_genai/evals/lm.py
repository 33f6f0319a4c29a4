"""A causal LM prepared for evaluation: tokenization with lm-eval's rules, and scoring through ``scoring``."""
from __future__ import annotations

from typing import Any, Sequence

from pytest_genai.evals.scoring import ScoreRun, score_requests
from pytest_genai.evals.windows import Window


def prefix_token_id(tokenizer: Any) -> int | None:
    """lm-eval HFLM's prefix token: BOS if the tokenizer has one, else EOS."""
    bos = getattr(tokenizer, "bos_token_id", None)
    return bos if bos is not None else getattr(tokenizer, "eos_token_id", None)


def encode_text(tokenizer: Any, text: str) -> list[int]:
    """lm-eval HFLM ``tok_encode`` with default settings: the tokenizer's own special tokens, none added when the
    text already starts with the prefix token."""
    prefix_id = prefix_token_id(tokenizer)
    prefix = tokenizer.decode([prefix_id]) if prefix_id is not None else ""
    kwargs = {"add_special_tokens": False} if prefix and text.startswith(prefix) else {}
    return list(tokenizer.encode(text, **kwargs))


class EvalLM:
    """A model and its tokenizer, with the settings every evaluation of one run shares.

    Tokenization follows lm-eval's ``HFLM`` defaults: the tokenizer's own special-token behaviour (a Llama
    tokenizer adds BOS, SmolLM2's adds nothing), skipped when the text already starts with the prefix token; the
    prefix token that conditions a document's first token is BOS, else EOS.
    """

    def __init__(self, model: Any, tokenizer: Any, *, max_length: int = 2048, batch_size: int = 8, device: Any = None):
        if max_length < 2:
            raise ValueError(f"max_length must be at least 2 tokens, got {max_length}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device if device is not None else next(model.parameters()).device
        if self.prefix_token_id is None:
            raise ValueError("the tokenizer has neither a BOS nor an EOS token to condition a document's first token on")

    @property
    def prefix_token_id(self) -> int | None:
        return prefix_token_id(self.tokenizer)

    @property
    def pad_token_id(self) -> int:
        pad = getattr(self.tokenizer, "pad_token_id", None)
        return pad if pad is not None else int(self.prefix_token_id)

    def encode(self, text: str) -> list[int]:
        return encode_text(self.tokenizer, text)

    def encode_pair(self, context: str, continuation: str) -> Window:
        """lm-eval's ``_encode_pair``: trailing spaces of the context move to the continuation; the continuation's
        tokens are those of ``context + continuation`` after the context's own tokens. An empty context is lm-eval's
        ``loglikelihood`` rule: the continuation without special tokens, after the prefix token (or split after its
        own first token when that is the prefix token)."""
        if not context:
            tokens = list(self.tokenizer.encode(continuation, add_special_tokens=False))
            if tokens and tokens[0] == self.prefix_token_id:
                return Window(tuple(tokens[:1]), tuple(tokens[1:]))
            return Window((int(self.prefix_token_id),), tuple(tokens))
        n_spaces = len(context) - len(context.rstrip())
        if n_spaces:
            continuation = context[-n_spaces:] + continuation
            context = context[:-n_spaces]
        whole = self.encode(context + continuation)
        ctx = self.encode(context)
        return Window(tuple(ctx), tuple(whole[len(ctx):]))

    def score(self, requests: Sequence[Window]) -> ScoreRun:
        return score_requests(self.model, requests, max_length=self.max_length, batch_size=self.batch_size,
                              device=self.device, pad_token_id=self.pad_token_id)
