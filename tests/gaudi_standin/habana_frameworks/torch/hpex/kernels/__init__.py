"""Stand-in for ``habana_frameworks.torch.hpex.kernels``: ``FusedSDPA`` computes torch's scaled-dot-product
attention on the CPU (the card's fused kernel, its softmax modes and recompute are not modelled)."""
from __future__ import annotations

import torch

#: calls so far: the leg checks that Flash Attention on really reached this kernel, and off never did
CALLS = [0]


class FusedSDPA:
    @staticmethod
    def apply(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, softmax_mode="None",
              recompute_mode=None, valid_sequence_lengths=None, padding_side="left"):
        CALLS[0] += 1
        if attn_mask is not None and is_causal:  # torch refuses both; the causal part is in the mask the caller built
            is_causal = False
        # fewer key/value heads than query heads (grouped-query attention) go in as they are, as callers pass them
        gqa = query.shape[-3] != key.shape[-3]
        return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask,
                                                                dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                                                                enable_gqa=gqa)
