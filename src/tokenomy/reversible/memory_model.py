"""Analytical activation memory of transformer training under four recompute strategies.

Per layer, no recomputation (Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", sec. 4.1, 16-bit activations, 1-byte dropout
masks, no tensor/sequence parallelism):

    A_layer = s b h (34 + 5 a s / h)                                    bytes

Written per element so other widths work: e = bytes per activation element, m = bytes
per dropout-mask element (1 with dropout, 0 without),

    A_layer = e (16 s b h + 2 a s^2 b) + m (2 s b h + a s^2 b)          (e=2, m=1: sec. 4.1)

Strategies (stored = kept from forward to backward, grows with depth L; working = one
layer's transient activations while it is recomputed in backward):
    none        stored/layer = A_layer
    selective   stored/layer = e 16 s b h + m 2 s b h  (34 s b h; Korthikanti sec. 5)
    full        stored/layer = n e s b h  (layer input, n streams); working = A_layer
    reversible  stored/layer = 0; stored once = n e s b h (final outputs); working = A_layer
                (Gomez et al. 2017: inputs rebuilt from outputs, memory O(1) in L)

Pure arithmetic: every argument may be a float or a numpy array (results broadcast).
No torch import, so the training-memory model can use it without the [torch] extra.
"""

from __future__ import annotations

from dataclasses import dataclass

STRATEGIES = ("none", "selective", "full", "reversible")


def _check(strategy: str) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r}; allowed: {', '.join(STRATEGIES)}")


def layer_activation_bytes(seq_len, batch_size, hidden_size, num_attention_heads,
                           bytes_per_element=2, dropout=True):
    """A_layer = e(16sbh + 2as^2 b) + m(2sbh + as^2 b); Korthikanti 2022 sec. 4.1 at e=2, m=1."""
    s, b, h, a = seq_len, batch_size, hidden_size, num_attention_heads
    m = 1 if dropout else 0
    return bytes_per_element * (16 * s * b * h + 2 * a * s * s * b) + m * (2 * s * b * h + a * s * s * b)


def activation_bytes_per_layer(strategy, seq_len, batch_size, hidden_size, num_attention_heads,
                               bytes_per_element=2, dropout=True, streams=1):
    """Bytes each layer keeps from its forward to its backward (the slope in depth L).

    ``streams`` is the number of residual streams of width ``hidden_size`` entering a
    layer: 1 for a standard transformer, 2 for a two-stream reversible/coupled one.
    """
    _check(strategy)
    s, b, h = seq_len, batch_size, hidden_size
    e, m = bytes_per_element, (1 if dropout else 0)
    if strategy == "none":
        return layer_activation_bytes(s, b, h, num_attention_heads, e, dropout)
    if strategy == "selective":
        return e * 16 * s * b * h + m * 2 * s * b * h
    if strategy == "full":
        return streams * e * s * b * h
    return 0 * s * b * h  # reversible: nothing per layer (keeps the input's array shape)


@dataclass(frozen=True)
class ActivationMemory:
    """Activation bytes of an L-layer stack: stored_bytes + working_bytes = total_bytes."""

    strategy: str
    per_layer_bytes: object  # float or array: stored per layer, slope in L
    stored_bytes: object  # L * per_layer (+ final outputs for reversible)
    working_bytes: object  # one layer's activations during its recomputation
    total_bytes: object
    formula: str


def activation_memory(strategy, num_hidden_layers, seq_len, batch_size, hidden_size,
                      num_attention_heads, bytes_per_element=2, dropout=True,
                      streams=1) -> ActivationMemory:
    """Peak activation bytes of training one micro-batch through L layers (see module doc)."""
    _check(strategy)
    L, s, b, h, e = num_hidden_layers, seq_len, batch_size, hidden_size, bytes_per_element
    per_layer = activation_bytes_per_layer(strategy, s, b, h, num_attention_heads, e, dropout,
                                           streams)
    layer = layer_activation_bytes(s, b, h, num_attention_heads, e, dropout)
    stored = L * per_layer
    working = 0 * layer
    formula = "L * A_layer"
    if strategy == "selective":
        formula = "L * (16e + 2m) s b h"
    if strategy == "full":
        working = layer
        formula = "L * n e s b h + A_layer"
    if strategy == "reversible":
        stored = stored + streams * e * s * b * h
        working = layer
        formula = "n e s b h + A_layer  (independent of L)"
    return ActivationMemory(strategy, per_layer, stored, working, stored + working, formula)


def reversible_saving_vs_checkpoint_bytes(num_hidden_layers, batch_size, seq_len, d_stream,
                                          bytes_per_element):
    """Memory a reversible stack saves over per-block checkpointing: L x 2 x B x T x d x e.

    Per-block checkpointing keeps each block's input, two streams of B x T x d_stream
    elements; the reversible stack keeps none of them.
    """
    return num_hidden_layers * 2 * batch_size * seq_len * d_stream * bytes_per_element
