"""Links, addresses and commands an answer sentence carries that its cited passage does not.

A transcript (or a prompt) can tell the model to send students somewhere: "faça login em
http://evil.example.com/login", "escreva para suporte@evil.com", "rode `curl … | sh`". The
answer post-check drops a sentence that carries such a thing unless the passage it cites
says it too. Pure: text in, the offending pieces out.

What counts: a URL (``scheme://…``, ``www.…``, or a host name ending in a common top-level
domain, ``evil.example.com/login``), an e-mail address, and a shell command (a command word
such as ``curl``, ``sudo``, ``rm``, ``powershell`` with an option, a path or a URL after it,
a pipe into a shell, a package install, or any of these in backticks). A piece is "in" a
passage when the passage holds the same text, compared without case, scheme, ``www.`` or
trailing punctuation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Top-level domains a bare host name must end in to count as a link: the common ones, not
# those that read as file extensions in a lecture (.py, .sh, .md, .rs, .pl, .js).
_TLDS = (
    "com|org|net|edu|gov|info|biz|io|co|me|app|dev|ai|xyz|site|online|top|click|link|live|"
    "shop|store|tech|club|pro|ly|gl|gg|tk|ml|ga|cf|to|cc|tv|ws|ru|cn|br|pt|de|uk|us|fr|es|"
    "it|nl|eu|in|jp|ar|mx|cl|ch|ca|au"
)
_URL = re.compile(
    r"(?i)\b(?:[a-z][a-z0-9+.-]{1,15}://[^\s<>\"'`]+"  # scheme://...
    r"|www\.[^\s<>\"'`]+"  # www....
    r"|(?:javascript|vbscript|file):[^\s<>\"'`]+"  # script and file links
    rf"|(?<![@\w.-])(?:[a-z0-9](?:[a-z0-9-]{{0,62}}[a-z0-9])?\.)+(?:{_TLDS})\b(?![.-]?\w)"
    r"(?:[/?#][^\s<>\"'`]*)?)"  # host.tld[/path]
)
_EMAIL = re.compile(r"(?i)\b[a-z0-9._%+-]{1,64}@(?:[a-z0-9-]{1,63}\.)+[a-z]{2,24}\b")

_COMMAND_WORDS = (
    "sudo|su|curl|wget|rm|chmod|chown|bash|sh|zsh|powershell|pwsh|cmd|nc|ncat|netcat|ssh|scp|"
    "iex|certutil|mshta|regsvr32|rundll32|python3?|perl|ruby|node|eval|exec"
)
_INSTALLERS = "pip3?|npm|npx|yarn|apt|apt-get|brew|gem|cargo|conda|choco|winget"
_COMMAND = re.compile(
    rf"(?i)(?<![\w-])(?:sudo[ \t]+)?(?:{_COMMAND_WORDS})"  # a command word, then
    r"(?:[ \t]+(?:--?[a-z0-9][\w-]*|[~./\\][^\s]*|[a-z]+://[^\s]*|/[a-z?]\b))+"  # options/paths
    r"|\|[ \t]*(?:sudo[ \t]+)?(?:ba|z|k)?sh\b"  # ... | sh
    rf"|(?<![\w-])(?:{_INSTALLERS})[ \t]+(?:install|add|i)[ \t]+[^\s`]+"  # pip install x
)
_BACKTICKS = re.compile(r"`([^`\n]{1,300})`")
_TRAILING = ".,;:!?)]}>\"'*_"


def _key(text: str) -> str:
    """A piece of text as compared: no case, scheme, ``www.``, spaces or trailing dots."""
    text = re.sub(r"^[a-z][a-z0-9+.-]*://", "", text.lower().strip())
    text = text.removeprefix("www.")
    return " ".join(text.split()).rstrip(_TRAILING + "/")


def _haystack(text: str) -> str:
    """A passage as searched: no case, no schemes or ``www.``, spaces collapsed."""
    text = re.sub(r"(?i)\b[a-z][a-z0-9+.-]{1,15}://", "", text.lower())
    return " ".join(text.replace("www.", "").split())


def _pieces(sentence: str) -> list[str]:
    """The URLs, e-mail addresses and commands in ``sentence``, in order of appearance."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, end: int, text: str) -> None:
        if any(s <= start < e or start <= s < end for s, e in taken):
            return  # part of a piece already found (the host of an e-mail, a URL in a command)
        taken.append((start, end))
        found.append((start, text))

    for m in _BACKTICKS.finditer(sentence):
        inner = m.group(1).strip()
        if _COMMAND.search(inner) or re.match(rf"(?i)(?:sudo\s+)?(?:{_COMMAND_WORDS}|"
                                               rf"{_INSTALLERS})\b", inner):
            add(m.start(), m.end(), inner)
    for pattern in (_EMAIL, _COMMAND, _URL):
        for m in pattern.finditer(sentence):
            text = m.group(0).rstrip(_TRAILING)
            if text:
                add(m.start(), m.start() + len(text), text)
    return [text for _, text in sorted(found)]


def foreign_links(sentence: str, passages: Sequence[str]) -> list[str]:
    """The URLs, e-mail addresses and commands in ``sentence`` that none of ``passages`` (the
    passages the sentence cites) holds; [] when there are none. A sentence with any should
    not reach the student: the model did not take it from the lecture it cites."""
    pieces = _pieces(sentence)
    if not pieces:
        return []
    hay = [_haystack(p) for p in passages]
    out: list[str] = []
    for piece in pieces:
        key = _key(piece)
        if key and not any(key in h for h in hay) and piece not in out:
            out.append(piece)
    return out
