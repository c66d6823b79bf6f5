"""A small deterministic text corpus for the training demo (generated, nothing downloaded).

A toy English grammar with number agreement and a few long-range constraints, so a
small language model has something to learn beyond character frequencies:

    sentence := subject verb object [place] [clause] "."
    subject  := det adj? noun     (singular or plural; the verb agrees with it)
    clause   := "because" pronoun verb object   (pronoun agrees with the subject)
"""

from __future__ import annotations

import random

_NOUNS = (("cat", "cats"), ("dog", "dogs"), ("sailor", "sailors"), ("child", "children"),
          ("farmer", "farmers"), ("bird", "birds"), ("teacher", "teachers"),
          ("fox", "foxes"), ("miller", "millers"), ("queen", "queens"))
_VERBS = (("sees", "see"), ("likes", "like"), ("follows", "follow"), ("finds", "find"),
          ("carries", "carry"), ("watches", "watch"), ("paints", "paint"))
_OBJECTS = ("a red ball", "the old boat", "a small house", "the green hill", "a loaf of bread",
            "the silver key", "a paper kite", "the tall tree", "a bowl of soup")
_ADJECTIVES = ("old", "young", "quiet", "clever", "tired", "happy", "brave")
_PLACES = ("near the river", "in the garden", "at the market", "by the sea",
           "under the bridge", "on the road")
_PRONOUNS = ("it", "they")


def sentence(rng: random.Random) -> str:
    """One sentence of the grammar above, drawn with ``rng``."""
    plural = rng.random() < 0.4
    noun = rng.choice(_NOUNS)[plural]
    det = "the" if plural else rng.choice(("the", "a"))
    adj = f"{rng.choice(_ADJECTIVES)} " if rng.random() < 0.5 else ""
    if det == "a" and adj and adj[0] in "aeiou":
        det = "an"
    words = [f"{det} {adj}{noun}", rng.choice(_VERBS)[plural], rng.choice(_OBJECTS)]
    if rng.random() < 0.5:
        words.append(rng.choice(_PLACES))
    if rng.random() < 0.3:
        words += ["because", _PRONOUNS[plural], rng.choice(_VERBS)[plural],
                  rng.choice(_OBJECTS)]
    return " ".join(words) + " ."


def generate_corpus(n_chars: int = 100_000, seed: int = 0) -> str:
    """About ``n_chars`` characters of sentences, the same for the same seed."""
    rng = random.Random(seed)
    parts, total = [], 0
    while total < n_chars:
        s = sentence(rng)
        parts.append(s)
        total += len(s) + 1
    return "\n".join(parts)[:n_chars]


class CharTokenizer:
    """Characters <-> integer ids over the sorted alphabet of a text."""

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        return [self.index[c] for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)
