"""Analytic work counts of a decoder-block stack: FLOPs and minimal bytes moved, per op and per op class.

Definitions (pure functions of a :class:`~pytest_genai.dabench.config.DecoderConfig`):

* ``flops`` — multiply-accumulate work of matrix products, 2·m·n·k per product, the definition
  ``torch.utils.flop_counter.FlopCounterMode`` uses. For the fused ``sdpa`` attention it is the two S x S products
  at full size, as FlopCounterMode counts them (a causal flash kernel skips about half of that work).
  A test asserts ``matmul_flops`` equals FlopCounterMode's total on the real module.
* ``nominal_flops`` — elementwise work that FlopCounterMode does not count (LayerNorm, GELU, softmax, mask, residual
  adds, bias gradients, the AdamW update), at fixed per-element costs (:data:`NOMINAL_FLOPS_PER_ELEMENT`). These
  are estimates, not counts of instructions; they only place elementwise ops on the roofline.
* ``bytes`` — the minimal traffic of each op on its own: every input read once, every output written once, weights
  read once (the "minimal bytes per op" of a roofline; caches that keep data between ops are not credited).
  Layout copies of the implementation (head split and merge) are not counted.

Backward counts: each matrix product X·W gives two products of the same size (dX and dW); elementwise backward ops
read the upstream gradient and the saved input and write one gradient (3 tensors). The optimizer is AdamW on
states of the parameters' dtype: read p, g, m, v and write p, m, v.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from pytest_genai.dabench.config import DecoderConfig

OP_CLASSES = ("matmul", "attention", "elementwise", "optimizer")

#: Per-element costs for elementwise work FlopCounterMode does not count (estimates, see module docstring).
NOMINAL_FLOPS_PER_ELEMENT: Mapping[str, int] = {
    "layernorm": 8,  # mean, centre, square, variance, rsqrt-scale, affine (2)
    "gelu": 8,  # tanh-approximation polynomial
    "softmax": 5,  # max, subtract, exp, sum, divide
    "mask": 1,
    "scale": 1,
    "add": 1,
    "adamw": 12,
}


@dataclasses.dataclass(frozen=True)
class OpWork:
    """Work of one op: ``flops`` (matrix products, exact), ``nominal_flops`` (elementwise estimate), ``bytes``."""

    name: str
    op_class: str
    flops: int
    bytes: int
    nominal_flops: int = 0

    def __post_init__(self) -> None:
        if self.op_class not in OP_CLASSES:
            raise ValueError(f"OpWork.op_class {self.op_class!r} must be one of {OP_CLASSES}")
        if self.flops < 0 or self.bytes < 0 or self.nominal_flops < 0:
            raise ValueError(f"OpWork {self.name!r}: flops, nominal_flops and bytes must be >= 0")


@dataclasses.dataclass(frozen=True)
class ClassWork:
    flops: int
    nominal_flops: int
    bytes: int

    @property
    def total_flops(self) -> int:
        return self.flops + self.nominal_flops


@dataclasses.dataclass(frozen=True)
class WorkCounts:
    """Totals for one step of the whole stack."""

    ops: tuple[OpWork, ...]

    @property
    def matmul_flops(self) -> int:
        """The FLOPs FlopCounterMode counts (matrix products only)."""
        return sum(op.flops for op in self.ops)

    @property
    def flops(self) -> int:
        """The roofline FLOPs of the step: matrix-product FLOPs (exact). Elementwise estimates are separate."""
        return self.matmul_flops

    @property
    def nominal_flops(self) -> int:
        return sum(op.nominal_flops for op in self.ops)

    @property
    def bytes(self) -> int:
        return sum(op.bytes for op in self.ops)

    def by_class(self) -> dict[str, ClassWork]:
        out: dict[str, ClassWork] = {}
        for cls in OP_CLASSES:
            ops = [op for op in self.ops if op.op_class == cls]
            if ops:
                out[cls] = ClassWork(
                    flops=sum(op.flops for op in ops),
                    nominal_flops=sum(op.nominal_flops for op in ops),
                    bytes=sum(op.bytes for op in ops),
                )
        return out


def _linear(name: str, m: int, k: int, n: int, e: int) -> OpWork:
    """X[m,k] @ W[k,n] + b[n]: read X, W, b; write Y."""
    return OpWork(name, "matmul", 2 * m * k * n, e * (m * k + k * n + n + m * n))


def _linear_backward(name: str, m: int, k: int, n: int, e: int) -> list[OpWork]:
    return [
        # dX = dY @ W^T: read dY, W; write dX.
        OpWork(f"{name}.grad_input", "matmul", 2 * m * k * n, e * (m * n + k * n + m * k)),
        # dW = X^T @ dY: read X, dY; write dW.
        OpWork(f"{name}.grad_weight", "matmul", 2 * m * k * n, e * (m * k + m * n + k * n)),
        # db = sum over rows of dY: read dY, write db.
        OpWork(f"{name}.grad_bias", "elementwise", 0, e * (m * n + n), nominal_flops=m * n),
    ]


def _elementwise(name: str, kind: str, elements: int, reads: int, writes: int, e: int, op_class: str) -> OpWork:
    cost = NOMINAL_FLOPS_PER_ELEMENT[kind]
    return OpWork(name, op_class, 0, e * elements * (reads + writes), nominal_flops=cost * elements)


def _elementwise_backward(op: OpWork, elements: int, e: int) -> OpWork:
    # Read upstream gradient and saved tensor, write the input gradient; twice the forward estimate of work.
    return OpWork(f"{op.name}.grad", op.op_class, 0, 3 * e * elements, nominal_flops=2 * op.nominal_flops)


def layer_forward_ops(cfg: DecoderConfig) -> tuple[OpWork, ...]:
    """The forward ops of one decoder block, in execution order."""
    e = cfg.bytes_per_element
    m, h, f = cfg.tokens, cfg.hidden, cfg.ffn_hidden
    b, s, nh = cfg.batch, cfg.seq_len, cfg.heads
    mh, ss = m * h, b * nh * s * s
    ln_params = 2 * h
    ops: list[OpWork] = [
        OpWork("ln1", "elementwise", 0, e * (2 * mh + ln_params), nominal_flops=8 * mh),
        _linear("qkv", m, h, 3 * h, e),
    ]
    if cfg.attention == "math":
        ops.append(_elementwise("q_scale", "scale", mh, 1, 1, e, "attention"))
        ops.append(OpWork("scores", "attention", 2 * b * s * s * h, e * (2 * mh + ss)))
        if cfg.causal:
            # In-place masked fill: read and write the scores, read the S x S boolean mask (1 byte per element).
            ops.append(OpWork("mask", "attention", 0, 2 * e * ss + s * s, nominal_flops=ss))
        ops.append(_elementwise("softmax", "softmax", ss, 1, 1, e, "attention"))
        ops.append(OpWork("context", "attention", 2 * b * s * s * h, e * (ss + 2 * mh)))
    else:
        ops.append(
            OpWork(
                "sdpa",
                "attention",
                4 * b * s * s * h,
                e * 4 * mh,  # read q, k, v; write the output; S x S stays on chip
                nominal_flops=NOMINAL_FLOPS_PER_ELEMENT["softmax"] * ss,
            )
        )
    ops += [
        _linear("proj", m, h, h, e),
        _elementwise("add1", "add", mh, 2, 1, e, "elementwise"),
        OpWork("ln2", "elementwise", 0, e * (2 * mh + ln_params), nominal_flops=8 * mh),
        _linear("fc1", m, h, f, e),
        _elementwise("gelu", "gelu", m * f, 1, 1, e, "elementwise"),
        _linear("fc2", m, f, h, e),
        _elementwise("add2", "add", mh, 2, 1, e, "elementwise"),
    ]
    return tuple(ops)


def layer_backward_ops(cfg: DecoderConfig) -> tuple[OpWork, ...]:
    """The backward ops of one decoder block (reverse order is not modelled; order is irrelevant to totals)."""
    e = cfg.bytes_per_element
    m, h, f = cfg.tokens, cfg.hidden, cfg.ffn_hidden
    b, s, nh = cfg.batch, cfg.seq_len, cfg.heads
    mh, ss = m * h, b * nh * s * s
    fwd = {op.name: op for op in layer_forward_ops(cfg)}
    ops: list[OpWork] = []
    for name, (k, n) in {"qkv": (h, 3 * h), "proj": (h, h), "fc1": (h, f), "fc2": (f, h)}.items():
        ops += _linear_backward(name, m, k, n, e)
    for name, elements in (("ln1", mh), ("ln2", mh), ("gelu", m * f)):
        ops.append(_elementwise_backward(fwd[name], elements, e))
    # The block input and the mid-block residual each feed two branches: their gradients are summed.
    ops.append(_elementwise("grad_accumulate1", "add", mh, 2, 1, e, "elementwise"))
    ops.append(_elementwise("grad_accumulate2", "add", mh, 2, 1, e, "elementwise"))
    if cfg.attention == "math":
        bmm = 2 * b * s * s * h
        ops += [
            # scores = q_s @ k^T: dq_s = dS @ k, dk = dS^T @ q_s.
            OpWork("scores.grad_q", "attention", bmm, e * (ss + mh + mh)),
            OpWork("scores.grad_k", "attention", bmm, e * (ss + mh + mh)),
            # context = P @ v: dP = dC @ v^T, dv = P^T @ dC.
            OpWork("context.grad_p", "attention", bmm, e * (mh + mh + ss)),
            OpWork("context.grad_v", "attention", bmm, e * (ss + mh + mh)),
            _elementwise_backward(fwd["softmax"], ss, e),
            _elementwise_backward(fwd["q_scale"], mh, e),
        ]
        if cfg.causal:
            ops.append(OpWork("mask.grad", "attention", 0, 2 * e * ss + s * s, nominal_flops=ss))
    else:
        # Fused backward, as FlopCounterMode counts it: recompute q @ k^T, then dP = dO @ v^T, dv = P^T @ dO,
        # dq = dS @ k and dk = dS^T @ q -- five products of the forward product's size (2.5x the forward).
        bmm = 2 * b * s * s * h
        ops.append(
            OpWork(
                "sdpa.grad",
                "attention",
                5 * bmm,
                e * (5 * mh + 3 * mh),  # read q, k, v, out and dout; write dq, dk and dv
                nominal_flops=2 * NOMINAL_FLOPS_PER_ELEMENT["softmax"] * ss,
            )
        )
    return tuple(ops)


def optimizer_ops(cfg: DecoderConfig) -> tuple[OpWork, ...]:
    """One AdamW update of all parameters of the stack."""
    p = cfg.params
    return (_elementwise("adamw", "adamw", p, 4, 3, cfg.bytes_per_element, "optimizer"),)


def layer_ops(cfg: DecoderConfig) -> tuple[OpWork, ...]:
    """One layer's share of a step: forward, plus backward in ``train`` mode (the optimizer is per stack)."""
    ops = layer_forward_ops(cfg)
    if cfg.mode == "train":
        ops += layer_backward_ops(cfg)
    return ops


def stack_counts(cfg: DecoderConfig) -> WorkCounts:
    """Work of one step of the whole stack."""
    ops: list[OpWork] = []
    for i in range(cfg.layers):
        ops += [dataclasses.replace(op, name=f"layer{i}.{op.name}") for op in layer_ops(cfg)]
    if cfg.mode == "train":
        ops += optimizer_ops(cfg)
    return WorkCounts(tuple(ops))


def class_counts(ops: Iterable[OpWork]) -> dict[str, ClassWork]:
    return WorkCounts(tuple(ops)).by_class()
