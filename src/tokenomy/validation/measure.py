"""Measure the machine this runs on with PyTorch, then time real decode steps and compare with the model.

1. matmul FLOP/s (square GEMMs) and memory bandwidth (a large copy: read + write);
2. a small decoder built from a catalog config (scaled down: fewer layers, narrower), random weights, real
   attention over a preallocated KV cache, timed one decode step at a time for several batches and contexts;
3. the prediction for each point: the engine (core/engine.py) on one chip with the measured FLOP/s and bandwidth
   as its peaks (the roofline set), and a calibrated one, t = o_step + t_weights/η_w + t_KV/η_kv, whose three terms are fitted
   by least squares on the other points only (leave-one-out), so every printed error is held out.
torch is imported inside functions only (an optional dependency). CPU by default, the GPU when one is present.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core import engine
from tokenomy.core.coeffs import shape_of
from tokenomy.core.layout import Layout
from tokenomy.specs import Chip, Level, LinkSpec, Topology

DENSE_TYPES = ("llama", "mistral", "qwen2", "qwen3")


@dataclass(frozen=True)
class Machine:
    device: str
    dtype: str
    threads: int
    flops_per_s: float  # best of the square GEMMs
    bytes_per_s: float  # copy bandwidth, read + write counted


def _sync(torch, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _best(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure_machine(size: int = 1024, copy_bytes: float = 2.56e8, repeats: int = 5,
                    device: str | None = None) -> Machine:
    import torch

    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dt = torch.bfloat16 if dev == "cuda" else torch.float32
    a = torch.randn(size, size, device=dev, dtype=dt)
    b = torch.randn(size, size, device=dev, dtype=dt)

    def mm():
        torch.matmul(a, b)
        _sync(torch, dev)

    flops = 2.0 * size ** 3 / _best(mm, repeats)
    n = int(copy_bytes // 4)
    src = torch.empty(n, device=dev, dtype=torch.float32).uniform_()
    dst = torch.empty_like(src)

    def cp():
        dst.copy_(src)
        _sync(torch, dev)

    bw = 2.0 * n * 4 / _best(cp, repeats)
    return Machine(dev, "bf16" if dt == torch.bfloat16 else "fp32", torch.get_num_threads(), flops, bw)


def small_config(name: str, layers: int, divisor: int, vocab: int) -> dict:
    """A catalog config (dense, llama-like), with fewer layers and every width divided by ``divisor``."""
    try:
        cfg = loader.config_dict(name)
    except loader.CatalogError:
        raise ValueError(f"--model: {name!r} is not a catalog model; e.g. llama-3.2-1b") from None
    if cfg.get("model_type") not in DENSE_TYPES:
        raise ValueError(f"--model: {name} is {cfg.get('model_type')}; calibrate builds dense llama-like models "
                         f"({', '.join(DENSE_TYPES)})")
    heads = max(cfg["num_attention_heads"] // divisor, 1)
    kv = max(min(cfg.get("num_key_value_heads", heads), heads) // max(divisor // 2, 1), 1)
    while heads % kv:
        kv -= 1
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    out = {k: v for k, v in cfg.items() if k not in ("quantization_config", "rope_scaling", "sliding_window",
                                                      "layer_types", "max_window_layers", "use_sliding_window")}
    out.update(num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim,
               hidden_size=heads * head_dim, intermediate_size=max(cfg["intermediate_size"] // divisor, 64),
               vocab_size=vocab, torch_dtype="float32", tie_word_embeddings=False)
    return out


def machine_topology(m: Machine) -> Topology:
    """This machine as a one-chip topology (no links are used by a one-chip pass)."""
    none = LinkSpec(bytes_per_s=1.0, latency_s=0.0)
    chip = Chip(m.device, m.device, {m.dtype: m.flops_per_s}, 1e15, m.bytes_per_s, none, none, 0.0, 0.0)
    return Topology(m.device, chip, Level("scale-up", 1.0, 1.0, 0.0), Level("scale-out", float("inf"), 1.0, 0.0), 1)


def build_decoder(cfg: dict, max_batch: int, max_ctx: int, device: str):
    """A llama-style decoder with random weights and a preallocated KV cache; returns step(tokens, pos)."""
    import torch

    torch.manual_seed(0)
    D, H, K = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, F, L, V = cfg["head_dim"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    f32 = dict(device=device, dtype=torch.float32)
    w = lambda *s: torch.randn(*s, **f32) * 0.02  # noqa: E731
    emb, head = w(V, D), w(D, V)
    layers = [dict(q=w(D, H * hd), k=w(D, K * hd), v=w(D, K * hd), o=w(H * hd, D), g=w(D, F), u=w(D, F),
                   d=w(F, D)) for _ in range(L)]
    kc = torch.zeros(L, max_batch, K, max_ctx, hd, **f32)
    vc = torch.zeros_like(kc)

    def rms(x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    @torch.inference_mode()
    def decode(tokens, pos: int):
        B = tokens.shape[0]
        x = emb[tokens]  # [B, D]
        for i, lw in enumerate(layers):
            h = rms(x)
            q = (h @ lw["q"]).view(B, H, 1, hd)
            kc[i, :B, :, pos] = (h @ lw["k"]).view(B, K, hd)
            vc[i, :B, :, pos] = (h @ lw["v"]).view(B, K, hd)
            a = torch.nn.functional.scaled_dot_product_attention(
                q, kc[i, :B, :, : pos + 1], vc[i, :B, :, : pos + 1], enable_gqa=True)
            x = x + a.reshape(B, H * hd) @ lw["o"]
            h = rms(x)
            x = x + (torch.nn.functional.silu(h @ lw["g"]) * (h @ lw["u"])) @ lw["d"]
        return rms(x) @ head

    return decode


def loo_fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares by dropping negative coefficients (3 columns: small enough to enumerate)."""
    cols = list(range(x.shape[1]))
    while cols:
        coef, *_ = np.linalg.lstsq(x[:, cols], y, rcond=None)
        if (coef >= 0).all():
            out = np.zeros(x.shape[1])
            out[cols] = coef
            return out
        cols.pop(int(np.argmin(coef)))
    return np.zeros(x.shape[1])


@dataclass(frozen=True)
class Point:
    batch: int
    context: int
    measured_s: float
    roofline_s: float
    calibrated_s: float  # overhead + weight and KV streaming at efficiencies fitted on the other points
    bound: str

    @property
    def error(self) -> float:
        return self.calibrated_s / self.measured_s - 1.0

    @property
    def roofline_error(self) -> float:
        return self.roofline_s / self.measured_s - 1.0


def time_decode(decode, batch: int, context: int, steps: int, device: str) -> float:
    """Fastest of ``steps`` decode steps after ``context`` cached positions (the minimum resists other load)."""
    import torch

    tokens = torch.zeros(batch, dtype=torch.long, device=device)
    decode(tokens, context)  # warm-up at this shape
    times = []
    for i in range(steps):
        _sync(torch, device)
        t0 = time.perf_counter()
        decode(tokens, context + i)
        _sync(torch, device)
        times.append(time.perf_counter() - t0)
    return float(np.min(times))


@dataclass(frozen=True)
class Setup:
    """What is measured: the catalog ``model`` scaled down (``layers``, widths / ``divisor``, ``vocab`` tokens), the
    decode grid (``batches`` x ``contexts``, the fastest of ``steps`` timed steps at each) and the machine's probes
    (square GEMMs of ``matmul_size``, a copy of ``copy_bytes``; ``device`` None: the GPU when one is present)."""

    model: str = "llama-3.2-1b"
    layers: int = 2
    divisor: int = 4
    vocab: int = 8192
    batches: tuple = (1, 4, 16)
    contexts: tuple = (128, 512)
    steps: int = 5
    matmul_size: int = 1024
    copy_bytes: float = 2.56e8
    device: str | None = None


def run(setup: Setup = Setup()) -> tuple[Machine, list[Point], dict]:
    """The machine, one Point per batch x context (module docstring) and the scaled config.json measured."""
    u = setup
    m = measure_machine(u.matmul_size, u.copy_bytes, device=u.device)
    cfg = small_config(u.model, u.layers, u.divisor, u.vocab)
    arch = loader.model_from_dict(cfg, f"{u.model} (scaled: {u.layers} layers, widths / {u.divisor})")
    shape = shape_of(arch)
    decode = build_decoder(cfg, max(u.batches), max(u.contexts) + u.steps + 2, m.device)
    topo, peaks = machine_topology(m), engine.Peaks(m.flops_per_s, m.bytes_per_s, 1e15)
    fp32 = engine.Precision(4.0, 4.0, 4.0, 4.0, 4.0)
    rows = []
    for c in u.contexts:
        for b in u.batches:
            meas = time_decode(decode, b, c, u.steps, m.device)
            st = engine.times(engine.work(shape, topo, Layout(), fp32, engine.Pass(b, c + 1, 1)), topo, peaks)
            kv_s = float(st.kv_s)
            rows.append((b, c, meas, float(st.step_s), float(st.memory_s) - kv_s, kv_s,
                         ("compute", "memory")[int(st.memory_s > st.compute_s)]))
    meas = np.array([r[2] for r in rows])
    design = np.array([[1.0, r[4], r[5]] for r in rows])  # overhead, weight streaming, KV streaming
    out = []
    for i, (b, c, ms, rs, _, _, bound) in enumerate(rows):
        coef = loo_fit(np.delete(design, i, 0), np.delete(meas, i))
        out.append(Point(b, c, ms, rs, float(design[i] @ coef), bound))
    return m, out, cfg
