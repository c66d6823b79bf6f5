"""KV blocks held by the decoding requests, in closed form over the simulator's step counter S.

A decode caches one token a step, so decoder r holds K_r = a_r + S tokens (a_r fixed while it decodes) and
ceil(K_r / b) blocks of b tokens. With a_r = b·q_r + m_r (0 <= m_r < b) and S = b·Q + s (0 <= s < b):
    ceil(K_r / b) = q_r + Q + ceil((m_r + s) / b),   ceil((m_r + s)/b) = 0 if m_r + s = 0, 1 up to b, 2 above b
so over the decoders (n of them; h[m] of them with residue m):
    held(S) = Σq + n·Q + (n − h[0]·[s = 0]) + Σ_{m > b − s} h[m]
— O(b) per read, none per step, and the blocks k steps take are held(S + k) − held(S).
"""

from __future__ import annotations


class DecodeBlocks:
    """The decoders' offsets a_r as residue counts (module docstring); ``held_now``: held(S) at the run's current
    step ``S`` (``at``), kept as decoders come and go, so the per-step reads are an attribute."""

    def __init__(self, block_tokens: int):
        self.b = int(block_tokens)
        self.hist = [0] * self.b
        self.sum_q = 0
        self.n = 0
        self.S, self.held_now = 0, 0

    def add(self, a: int) -> None:
        q, m = divmod(a, self.b)
        self.hist[m] += 1
        self.sum_q += q
        self.n += 1
        self.held_now += -(-(a + self.S) // self.b)  # its ceil(K/b) at the current step

    def remove(self, a: int) -> None:
        q, m = divmod(a, self.b)
        self.hist[m] -= 1
        self.sum_q -= q
        self.n -= 1
        self.held_now -= -(-(a + self.S) // self.b)

    def at(self, S: int) -> int:
        """The run is at step S now: held(S), returned (its formula repeated here: one call a step, not two)."""
        b, h = self.b, self.hist
        s = S % b
        held = self.held_now = self.sum_q + self.n * (S // b + 1) + (sum(h[b + 1 - s:]) if s else -h[0])
        self.S = S
        return held

    def held(self, S: int) -> int:
        """Σ_r ceil((a_r + S) / b)."""
        b = self.b
        Q, s = divmod(S, b)
        h = self.hist
        return self.sum_q + self.n * (Q + 1) + (sum(h[b + 1 - s:]) if s else -h[0])

    def steps_within(self, S: int, free: int, k_max: int) -> int:
        """The most steps k <= k_max from S whose new blocks Δ(k) = held(S + k) − held(S) fit in ``free`` (0 where
        none). Step S + t takes h[(−(S + t)) mod b] blocks, the decoders on a block boundary, so b steps take n:
        Δ(k) = n·(k div b) + Σ_{t < k mod b} h[(−(S + t)) mod b] — whole cycles, then the next cycle's steps while
        they fit."""
        b, n = self.b, self.n
        if n * -(-k_max // b) <= free:  # each decoder takes at most ceil(k/b) blocks in k steps
            return k_max
        if free < 0:
            return 0
        c = min(free // n, k_max // b)
        k, left, h = c * b, free - c * n, self.hist
        while k < k_max:
            took = h[-(S + k) % b]
            if took > left:
                break
            left -= took
            k += 1
        return k
