"""The error type every layer raises for input a user gave that cannot be used.

A failure the user can fix (a bad file, option or setting) raises :class:`InputError` (or a
subclass naming the kind of file), and the CLI prints it as one line. A plain ``ValueError``
is a bug and keeps its traceback. ``InputError`` is a ``ValueError``, so callers that catch
``ValueError`` still catch it.
"""

from __future__ import annotations


class InputError(ValueError):
    """Input a user gave (a file, an option, a setting) cannot be used; the message says which
    and why, in one line."""
