"""One evaluated question as the study's Markdown report prints it, and back.

``render_record`` writes the exact shape of the reference report (``**Pergunta N**: ...``, the
retrieved segments, the answer, its references, the manual and automated annotations);
``parse_records`` reads one or many such records back, so a report is also a data file.

Missing values print as ``—``; AR and correctness print with two decimals (so a round trip
keeps them to 0.01). Parsed references carry no times (the Markdown only has title and link).

Free text (question, answer, comment, reasoning, transcriptions) is escaped so that nothing in
it reads as a record's structure: a line that starts like a heading (``**Pergunta 96**:``, a
field label), a segment field (``- *Score:*``), a ``---`` rule or a lone ``—`` gets one more
leading backslash, and the parser takes exactly one away. A heading the parser finds twice or
out of order in one record is refused, naming its line, rather than read as text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from corpus.errors import InputError
from corpus.models import Hit
from corpus.render import hit_markdown

MISSING = "—"
HIDDEN_REFERENCE = "Vídeo de referência oculto"
HIDDEN_URL = "oculto"
LABELS = ("C", "PC", "I")


class RecordParseError(InputError):
    """A record of a Markdown report could not be read; the message names record and field."""


_Fail = Callable[[str, str], RecordParseError]


@dataclass(frozen=True)
class Reference:
    """A video an answer cites: title, link, and the cited span in seconds when known."""

    title: str
    url: str
    start: float | None = None
    end: float | None = None


@dataclass
class Record:
    """One question of an evaluation report: retrieval, answer, annotations, judge reasoning."""

    qid: str
    question: str
    segments: list[Hit] = field(default_factory=list)
    answer: str = ""
    references: list[Reference] = field(default_factory=list)
    manual: str | None = None
    ar: float | None = None
    automated: str | None = None
    reasoning: str | None = None
    correctness: float | None = None
    correctness_reasoning: str | None = None
    comment: str | None = None
    """The reviewer's comment on the manual label ("" when the record says there is none,
    None when the record has no comment field)."""
    version: int | None = None
    """The stored annotation's version, so an import can tell a stale file."""


# Labels in the order a record prints them; the parser only accepts them in this order.
_QUESTION = "Pergunta"
_SEGMENTS = "Segmentos recuperados pelo E5"
_ANSWER = "Resposta gerada pelo LLM"
_REFERENCES = "Referências"
_MANUAL = "Anotação manual"
_COMMENT = "Comentário"
_VERSION = "Versão da anotação"
_AR = "Answer Relevance (AR)"
_AUTOMATED = "Anotação automatizada"
_REASONING = "Raciocínio (AR CoT)"
_CORRECTNESS = "Correção"
_CORRECTNESS_REASONING = "Raciocínio (Correção CoT)"
_ORDER = (
    _SEGMENTS,
    _ANSWER,
    _REFERENCES,
    _MANUAL,
    _COMMENT,
    _VERSION,
    _AR,
    _AUTOMATED,
    _REASONING,
    _CORRECTNESS,
    _CORRECTNESS_REASONING,
)
_REQUIRED = (_SEGMENTS, _ANSWER)


def parse_timestamp(value: str | float | int) -> float:
    """Seconds from ``HH:MM:SS``, ``MM:SS`` or a plain number (``"2996"``, ``"2996.5"``)."""
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if re.fullmatch(r"\d+(?:[.,]\d+)?", text):
        return float(text.replace(",", "."))
    match = re.fullmatch(r"(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:[.,]\d+)?)", text)
    if not match:
        raise InputError(f"not a time (HH:MM:SS or seconds): {value!r}")
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds.replace(",", "."))


def _value(value: str | None) -> str:
    return MISSING if value is None or value == "" else value


def _fraction(value: float | None) -> str:
    return MISSING if value is None else f"{value:.2f}"


# A line of free text that the parser could take for structure: a heading or field label, a
# segment field, a rule, the missing-value dash. Leading backslashes are looked through, so
# that escaping (one more backslash) and unescaping (one fewer) undo each other exactly. Any
# blank but a line break counts as a space (a vertical tab too), as the parser's strip does.
_STRUCTURAL_RE = re.compile(
    r"^(?P<indent>[^\S\n]*)(?P<escapes>\\*)(?=\*\*|-[^\S\n]*\*|-{3,}[^\S\n]*$|—[^\S\n]*$)"
)


def normalise_newlines(text: str) -> str:
    """``text`` with every CR LF and every bare CR as LF: the one line ending the records use.
    A bare CR left in would hide a heading from escaping while the parser reads it as a line."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def escape_text(text: str) -> str:
    """``text`` with every line that could read as record structure escaped by a backslash
    (line endings normalised first, as the parser reads them)."""
    return "\n".join(
        _STRUCTURAL_RE.sub(lambda m: m["indent"] + "\\" + m["escapes"], line, count=1)
        for line in normalise_newlines(text).split("\n")
    )


def unescape_text(text: str) -> str:
    """The text :func:`escape_text` escaped."""
    return "\n".join(
        _STRUCTURAL_RE.sub(lambda m: m["indent"] + m["escapes"][1:], line, count=1)
        for line in text.split("\n")
    )


def _free(value: str | None) -> str:
    return MISSING if value is None or value == "" else escape_text(value)


def _one_line(text: str) -> str:
    return " ".join(normalise_newlines(text).split("\n"))


def reference_titles(titles: Sequence[str], numbers: Sequence[Sequence[int]]) -> list[str]:
    """The references' titles as a record lists them: as they are when the answer's citation
    numbers are their places in the list ([1] the first line, [2] the second, ...), else each
    led by its own numbers ("[4] Autovetores e autovalores (00:12:30–00:13:22)"), so that the
    "[4]" of an answer citing the passages 2, 4 and 5 of a summary leads to its line."""
    if all(list(n) == [i + 1] for i, n in enumerate(numbers)):
        return list(titles)
    return [f"[{', '.join(map(str, n))}] {t}" if n else t
            for t, n in zip(titles, numbers, strict=True)]


def render_record(rec: Record, hide_urls: bool = False) -> str:
    """The record in the reference report's Markdown shape, ending with a ``---`` line."""
    question = escape_text(rec.question)
    lines = [f"**{_QUESTION} {rec.qid}**: {question}", "", f"**{_SEGMENTS}**:"]
    for hit in rec.segments:
        shown = replace(hit, score=float(hit.score), text=escape_text(hit.text),
                        url=_one_line(hit.url), title=_one_line(hit.title))
        lines += [hit_markdown(shown, hide_url=hide_urls), ""]
    lines += ["", f"**{_ANSWER}**: {_free(rec.answer)}", "", f"**{_REFERENCES}**:"]
    for ref in rec.references:
        if hide_urls:
            lines.append(f"- [{HIDDEN_REFERENCE}]()")
        else:
            lines.append(f"- [{_one_line(ref.title)}]({_one_line(ref.url)})")
    lines += ["", f"**{_MANUAL}**: {_value(rec.manual)}"]
    if rec.comment is not None or rec.version is not None:
        lines += ["", f"**{_COMMENT}**: {_free(rec.comment)}"]
    if rec.version is not None:
        lines += ["", f"**{_VERSION}**: {rec.version}"]
    lines += [
        "",
        f"**{_AR}**: {_fraction(rec.ar)}",
        "",
        f"**{_AUTOMATED}**: {_value(rec.automated)}",
        "",
        f"**{_REASONING}**: {_free(rec.reasoning)}",
    ]
    if rec.correctness is not None or rec.correctness_reasoning is not None:
        lines += [
            "",
            f"**{_CORRECTNESS}**: {_fraction(rec.correctness)}",
            "",
            f"**{_CORRECTNESS_REASONING}**: {_free(rec.correctness_reasoning)}",
        ]
    lines += ["", "", "---", ""]
    return "\n".join(lines)


def render_records(records: list[Record], hide_urls: bool = False) -> str:
    """A whole report: the records one after another, each closed by its ``---`` line."""
    return "\n".join(render_record(rec, hide_urls=hide_urls) for rec in records)


# The parser reads line by line with string operations, never a backtracking regex over the
# text: a record of any shape is read in time linear in its length.


def _heading(line: str) -> tuple[str, int] | None:
    """``(inner, value_start)`` of a line that starts ``**inner**:`` (no ``*`` in ``inner``):
    the text between the stars and where the value after the colon begins; else None."""
    if not line.startswith("**"):
        return None
    close = line.find("*", 2)
    if close < 0 or not line.startswith("**", close):
        return None
    after = line[close + 2 :].lstrip()
    if not after.startswith(":"):
        return None
    value = after[1:].lstrip(" \t")
    return line[2:close], len(line) - len(value)


def _question_number(inner: str) -> str | None:
    """The number of a ``**Pergunta N**`` heading's inner text; None for another heading."""
    text = inner.lstrip()
    if not text.startswith(_QUESTION) or not text[len(_QUESTION) : len(_QUESTION) + 1].isspace():
        return None
    return text[len(_QUESTION) :].strip()


def _segment_field(line: str) -> tuple[str, int] | None:
    """``(name, value_start)`` of a segment field line, ``- *Name:* value``; else None."""
    if not line.startswith("-"):
        return None
    rest = line[1:].lstrip(" \t")
    if not rest.startswith("*"):
        return None
    close = rest.find("*", 1)
    if close <= 1:
        return None
    name = rest[1:close].rstrip(" \t")
    value = rest[close + 1 :].lstrip(" \t")
    if name.endswith(":"):  # "- *Name:* value"; the colon is in the stars or after them
        name = name[:-1].rstrip(" \t")
    elif value.startswith(":"):
        value = value[1:].lstrip(" \t")
    return name.lstrip(" \t"), len(line) - len(value)


def _is_rule(line: str) -> bool:
    bare = line.strip(" \t")
    return len(bare) >= 3 and not bare.strip("-")


def _without_closing_rules(body: str) -> str:
    """``body`` without the ``---`` lines (and blank lines) that close it."""
    lines = body.split("\n")
    end = len(lines)
    while end > 1 and (_is_rule(lines[end - 1]) or not lines[end - 1].strip()):
        end -= 1
    if any(_is_rule(line) for line in lines[end:]):
        return "\n".join(lines[:end])
    return body


def parse_records(text: str) -> list[Record]:
    """Every record in a Markdown report (one or many; ``---`` separators optional). A record
    whose structure is ambiguous (a field heading twice or out of order, a question number
    seen before) is refused with the line named. Linear in the text's length."""
    text = normalise_newlines(text)
    headers: list[tuple[int, int, int, str]] = []  # line, start, value start, number
    offset = 0
    for number, line in enumerate(text.split("\n"), start=1):
        heading = _heading(line)
        if heading is not None and (qid := _question_number(heading[0])) is not None:
            headers.append((number, offset, offset + heading[1], qid))
        offset += len(line) + 1
    if not headers:
        raise RecordParseError(f"record 1: no '**{_QUESTION} N**:' line found")
    records = []
    first_line: dict[str, int] = {}
    for number, (at, _, value_start, qid) in enumerate(headers, start=1):
        if qid and qid in first_line:
            raise RecordParseError(
                f"line {at}: record {number} (Pergunta {qid}): Pergunta {qid} appears again "
                f"(first at line {first_line[qid]}); a question inside a record must be escaped"
            )
        first_line[qid] = at
        end = headers[number][1] if number < len(headers) else len(text)
        body = _without_closing_rules(text[value_start:end])
        records.append(_parse_record(number, qid, body, at, at - 1))
    return records


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _parse_record(number: int, qid: str, body: str, line: int, body_line: int) -> Record:
    """One record; ``line`` is its header's line and ``body_line`` the newlines before
    ``body`` in the whole text (for error messages)."""

    def fail(label: str, problem: str) -> RecordParseError:
        return RecordParseError(f"record {number} (Pergunta {qid}): {label}: {problem}")

    if not qid:
        raise fail(_QUESTION, "the question has no number")
    question, values = _split_fields(body, lambda offset: body_line + _line_of(body, offset),
                                     f"record {number} (Pergunta {qid})")
    for label in _REQUIRED:
        if label not in values:
            raise fail(label, f"field missing (record starts at line {line})")
    if not question:
        raise fail(_QUESTION, "the question is empty")
    return Record(
        qid=qid,
        question=unescape_text(question),
        segments=_parse_segments(values[_SEGMENTS], fail),
        answer=_free_text(values[_ANSWER]) or "",
        references=_parse_references(values.get(_REFERENCES, ""), fail),
        manual=_label(values.get(_MANUAL), _MANUAL, fail),
        ar=_unit_float(values.get(_AR), _AR, fail),
        automated=_label(values.get(_AUTOMATED), _AUTOMATED, fail),
        reasoning=_free_text(values.get(_REASONING)),
        correctness=_unit_float(values.get(_CORRECTNESS), _CORRECTNESS, fail),
        correctness_reasoning=_free_text(values.get(_CORRECTNESS_REASONING)),
        comment=(_free_text(values[_COMMENT]) or "") if _COMMENT in values else None,
        version=_version(values.get(_VERSION), fail),
    )


_RANK = {label: rank for rank, label in enumerate(_ORDER)}


def _split_fields(
    body: str, line_of: Callable[[int], int], where: str
) -> tuple[str, dict[str, str]]:
    """The question text and each labelled field's raw value. Labels come in print order,
    each at most once; any other heading of a known label makes the record ambiguous (content
    that looks like a heading is escaped when written, so it never gets here)."""
    accepted: list[tuple[str, int, int]] = []
    last = -1
    offset = 0
    for line in body.split("\n"):
        heading = _heading(line)
        label = heading[0].strip() if heading is not None else ""
        if heading is not None and label in _RANK:
            rank = _RANK[label]
            if rank <= last:
                first = next((a[1] for a in accepted if a[0] == label), None)
                problem = (
                    f"appears again (first at line {line_of(first)})" if first is not None
                    else f"comes after '**{accepted[-1][0]}**' at line "
                         f"{line_of(accepted[-1][1])}"
                )
                raise RecordParseError(
                    f"line {line_of(offset)}: {where}: '**{label}**' {problem}; "
                    "the record is ambiguous"
                )
            accepted.append((label, offset, offset + heading[1]))
            last = rank
        offset += len(line) + 1
    question_end = accepted[0][1] if accepted else len(body)
    values = {}
    for i, (label, _, value_start) in enumerate(accepted):
        value_end = accepted[i + 1][1] if i + 1 < len(accepted) else len(body)
        values[label] = body[value_start:value_end]
    return body[:question_end].strip(), values


def _free_text(value: str | None) -> str | None:
    text = _text(value)
    return None if text is None else unescape_text(text)


def _version(value: str | None, fail: _Fail) -> int | None:
    text = _text(value)
    if text is None:
        return None
    if not text.isdigit():
        raise fail(_VERSION, f"{text!r} is not a whole number")
    return int(text)


def _text(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if value in ("", MISSING) else value


def _label(value: str | None, label: str, fail: _Fail) -> str | None:
    text = _text(value)
    if text is None:
        return None
    if text.upper() not in LABELS:
        raise fail(label, f"{text!r} is not one of C, PC, I")
    return text.upper()


def _unit_float(value: str | None, label: str, fail: _Fail) -> float | None:
    text = _text(value)
    if text is None:
        return None
    try:
        number = float(text.replace(",", "."))
    except ValueError:
        raise fail(label, f"{text!r} is not a number") from None
    if not 0.0 <= number <= 1.0:
        raise fail(label, f"{number} is outside 0..1")
    return number


def _parse_references(value: str, fail: _Fail) -> list[Reference]:
    refs = []
    for line in value.strip().split("\n"):
        line = line.strip()
        if not line:
            continue
        link = _reference(line)
        if link is None:
            raise fail(_REFERENCES, f"not a '- [title](url)' line: {line[:80]!r}")
        title, url = link
        if title == HIDDEN_REFERENCE and not url:
            title = ""
        refs.append(Reference(title=title, url=url))
    return refs


def _reference(line: str) -> tuple[str, str] | None:
    """``(title, url)`` of a stripped ``- [title](url)`` line (the last ``](`` splits them)."""
    rest = line[1:].lstrip() if line.startswith("-") else ""
    split = rest.rfind("](")
    if not rest.startswith("[") or split < 1 or not rest.endswith(")") or split + 2 >= len(rest):
        return None
    return rest[1:split].strip(), rest[split + 2 : -1].strip()


def _parse_segments(value: str, fail: _Fail) -> list[Hit]:
    fields: list[tuple[str, int, int]] = []  # name, line start, value start
    offset = 0
    for line in value.split("\n"):
        found = _segment_field(line)
        if found is not None:
            fields.append((found[0], offset, offset + found[1]))
        offset += len(line) + 1
    starts = [i for i, (name, _, _) in enumerate(fields) if name == "Corpus ID"]
    if not starts:
        if _text(value) is not None:
            raise fail(_SEGMENTS, "no '- *Corpus ID:*' line found")
        return []
    bounds = starts + [len(fields)]
    return [
        _parse_segment(value, fields[bounds[i] : bounds[i + 1]],
                       fields[bounds[i + 1]][1] if bounds[i + 1] < len(fields) else len(value),
                       i + 1, fail)
        for i in range(len(starts))
    ]


def _parse_segment(
    value: str, fields: list[tuple[str, int, int]], end: int, index: int, fail: _Fail
) -> Hit:
    """One segment: its field lines (``fields``, in ``value``) up to offset ``end``."""
    raw: dict[str, str] = {}
    for i, (shown_name, _, value_start) in enumerate(fields):
        field_end = fields[i + 1][1] if i + 1 < len(fields) else end
        name = shown_name.strip().lower()
        if name.startswith("transcri"):  # the text runs to the end of the block
            raw[name] = value[value_start:end]
            break
        raw[name] = value[value_start:field_end]

    def field_value(name: str, required: bool = True) -> str:
        for key, text in raw.items():
            if key.startswith(name):
                return text.strip()
        if required:
            raise fail(f"segment {index}", f"field '{name}' missing")
        return ""

    where = f"segment {index}"
    try:
        corpus_id = int(field_value("corpus"))
    except ValueError:
        raise fail(where, f"Corpus ID {field_value('corpus')!r} is not an integer") from None
    try:
        score = float(field_value("score"))
    except ValueError:
        raise fail(where, f"Score {field_value('score')!r} is not a number") from None
    times = []
    for name, shown in (("in", "Início"), ("fim", "Fim")):
        try:
            times.append(parse_timestamp(field_value(name)))
        except ValueError as exc:
            raise fail(where, f"{shown}: {exc}") from None
    url = field_value("url", required=False)
    if url in (HIDDEN_URL, MISSING):
        url = ""
    title, lecture_id = _parse_lecture(field_value("aula", required=False))
    return Hit(
        corpus_id=corpus_id,
        score=score,
        lecture_id=lecture_id,
        title=title,
        url=url,
        start=times[0],
        end=times[1],
        text=unescape_text(field_value("transcri")),
    )


def _parse_lecture(value: str) -> tuple[str, str]:
    """``"Title (lecture_id)"`` as ``corpus.render.hit_markdown`` prints it with the lecture."""
    opening = value.rfind("(")
    title, lecture = value[:opening], value[opening + 1 : -1]
    if (opening > 0 and value.endswith(")") and ")" not in lecture and title[-1].isspace()
            and "\n" not in title.rstrip()):
        return title.strip(), lecture.strip()
    return value, ""
