"""Credentials out of every log line: a record factory that rewrites what a record would print.

Whatever logs it (our code, uvicorn, httpx's request line, SQLAlchemy), a URL's
``user:password@`` prints as ``user:***@`` (a lone ``user@``, often a token, as ``***@``), a
query's ``key=`` / ``token=`` / ``password=`` / ``secret=`` value as ``***``, and a
``Bearer``/``Basic`` credential as ``***``. Arguments that hold nothing to hide are left as
they are, so formatters that read them (uvicorn's access log) see what they expect.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

# Each pattern starts at a fixed marker ("://", "?"/"&", the scheme word) and runs over a
# class of characters that ends at the first space: linear in the line.
_USERINFO = re.compile(r"(?<=://)([^\s/?#@:]*)(:[^\s/?#@]*)?@")
_QUERY_SECRET = re.compile(
    r"(?i)([?&](?:api[_-]?key|key|access[_-]?token|token|password|passwd|pass|secret)=)"
    r"[^&\s#\"']+"
)
# a credential holds a digit or one of = _ - (so "Basic idea" is left alone)
_AUTH_SCHEME = re.compile(r"\b(Bearer|Basic)([ \t]+)(?=[^\s]*[0-9=_-])[A-Za-z0-9._~+/=-]+")


def _userinfo(match: re.Match[str]) -> str:
    return f"{match[1]}:***@" if match[2] is not None else "***@"


def redact(text: str) -> str:
    """``text`` with the credentials it shows replaced by ``***``."""
    if "://" in text:
        text = _USERINFO.sub(_userinfo, text)
    if "=" in text:
        text = _QUERY_SECRET.sub(r"\1***", text)
    return _AUTH_SCHEME.sub(r"\1\2***", text)


def _argument(value: Any) -> Any:
    if value is None or isinstance(value, int | float):
        return value
    text = value if isinstance(value, str) else str(value)
    shown = redact(text)
    return value if shown == text else shown


def redact_record(record: logging.LogRecord) -> None:
    """Redact the message and arguments of ``record`` in place."""
    if isinstance(record.msg, str):
        record.msg = redact(record.msg)
    args = record.args
    if isinstance(args, tuple):
        record.args = tuple(_argument(a) for a in args)
    elif isinstance(args, Mapping):
        record.args = {k: _argument(v) for k, v in args.items()}


def install() -> None:
    """Redact every log record this process creates from now on (calling it again is a
    no-op)."""
    make = logging.getLogRecordFactory()
    if getattr(make, "redacts", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        redact_record(record)
        return record

    factory.redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
