"""Test-suite configuration.

pytester's in-process runs snapshot and restore ``sys.modules``: a module first imported inside such a run is
dropped afterwards and imported again later, with new classes. torch cannot be imported twice in one process, and
matplotlib's artists then fail isinstance checks against the old classes ("Invalid arguments to set_clip_path, of
type Rectangle"), and SQLAlchemy's compiled cache-key code keeps the first copy's classes ("'InternalTraversal'
object is not callable" when a store test follows one whose inner run imported it first), so all three are imported
once here, before any pytester run, when they are installed.
"""
try:
    import torch  # noqa: F401
except ImportError:  # the plugin itself works without torch
    pass
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
except ImportError:  # plots are optional
    pass
try:
    import sqlalchemy  # noqa: F401
except ImportError:  # the store is optional
    pass


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _no_cpu_pressure(monkeypatch, tmp_path_factory):
    """Verdicts in these tests must not depend on how loaded the machine running them is: the PSI reading
    (pytest_genai.runtime.pressure) is off unless a test points it at a file of its own."""
    from pytest_genai.runtime import pressure

    monkeypatch.setattr(pressure, "PSI_CPU", str(tmp_path_factory.getbasetemp() / "no-psi"))


# -- a tokenizer and a model built here, for the evaluation, composition and quantizer tests (no download) --------
BOS, EOS = "<s>", "</s>"
VOCAB = 260  # 256 byte tokens + specials; the tiny model's vocab_size


def byte_tokenizer(add_bos: bool = False):
    """A real HF fast tokenizer with one token per UTF-8 byte (byte-level BPE, no merges) and BOS/EOS tokens.

    ``add_bos=True`` makes it prepend BOS like a Llama tokenizer; False behaves like SmolLM2's (adds nothing).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    vocab[BOS], vocab[EOS] = len(vocab), len(vocab) + 1
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    if add_bos:
        tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS)


def byte_vocab_llama(seed: int = 0, hidden: int = 32, layers: int = 2):
    """A tiny Llama from a config (no download) over :func:`byte_tokenizer`'s vocabulary, random weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=1024,
                      bos_token_id=256, eos_token_id=257)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # sharper next-token distributions than the tiny default init, so scores differ clearly
        model.lm_head.weight.mul_(20.0)
    return model
