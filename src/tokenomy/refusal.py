"""How the library refuses a user's value: one line that starts with the field's name and says what is allowed.

``InputError`` (a ValueError tied to its field: ``schedule: ...``) is what the doors word for their users: the CLI as
``--schedule: ...`` (exit 2), the web as a 422 naming the field, Python as it is. ``choice`` is the one refusal of a
name outside its allowed set, for the core's checks (a training plan's schedule, recompute, kernels) and the answers'
grammar (answers/inputs.py) alike: ``schedule: 'zigzag' is not a pipeline schedule; allowed: 1f1b, ...``.
Below every layer (as units.py): it imports nothing of the library.
"""

from __future__ import annotations


class InputError(ValueError):
    """A refused user value, tied to the field that carries it ('context: ...')."""

    def __init__(self, field: str, msg: str):
        super().__init__(f"{field}: {msg}")
        self.field, self.msg = field, msg


def choice(name: str, value, allowed, what: str = "allowed"):
    """``value`` where it is one of ``allowed`` (as given: the core compares it as it is), else an InputError naming
    ``name``: "'value' is not <what>; allowed: a, b, c" (the value cut at 40 characters: a web error quotes it)."""
    if value not in tuple(allowed):
        raise InputError(name, f"{str(value)[:40]!r} is not {what}; allowed: {', '.join(map(str, allowed))}")
    return value
