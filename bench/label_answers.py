"""The blind reading of the answer bench: a sheet to label, and its labels read back.

``python -m bench.label_answers sheet [ITEMS.jsonl]`` writes ``bench/out/label_sheet.jsonl`` from
the last ``answer_quality`` run's answers (or those of ``ITEMS.jsonl``) that have no stored
label: one row per distinct answer, shuffled, with the question, the lecture's words at the gold
span, the reference answer and the answer, and nothing that says which strategy wrote it. A
reader marks each row C (correct: answers what was asked, nothing false), PC (partly: right but
incomplete, or right with a minor wrong detail) or I (incorrect: wrong, off the question, or a
quote that does not answer), in
``{"sheet_id", "label", "why"}`` rows.

``python -m bench.label_answers read LABELS.jsonl`` adds those labels to
``bench/data/answer_labels.jsonl`` under each answer's key; ``answer_quality`` reads a label for
the same text to the same question, whichever strategy gave it.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from bench.answer_quality import LABELS, SETS, stored_labels, text_key
from bench.common import OUT, read_jsonl

SHEET = OUT / "label_sheet.jsonl"
SHEET_KEYS = OUT / "label_sheet_keys.json"
MARKS = ("C", "PC", "I")


def _corpus_file(set_name: str, lecture: str) -> Path:
    corpus = SETS[set_name][1]
    if set_name == "3b1b":
        return corpus / lecture / "portuguese" / "sentence_translations.json"
    return corpus / lecture / "transcript.srt"


def gold_text(set_name: str, lecture: str, start: float, end: float, pad: float = 5.0) -> str:
    """The lecture's words between ``start`` and ``end`` (``pad`` seconds around)."""
    from corpus.readers import read_cues

    _, cues = read_cues(_corpus_file(set_name, lecture))
    return " ".join(c.text.strip() for c in cues
                    if c.end > start - pad and c.start < end + pad and c.text.strip())


def sheet(items: Path = OUT / "answer_quality_items.jsonl") -> int:
    """Write the blind sheet of the unlabelled answers of answerable questions; the count."""
    labels = stored_labels()
    rows = read_jsonl(items)
    by_text: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if not r["answerable"] or not r["answered"] or text_key(r["key"]) in labels:
            continue
        by_text.setdefault((r["set"], r["id"], " ".join(r["answer"].split())), []).append(r)
    out, keys = [], {}
    for n, ((set_name, _qid, _text), group) in enumerate(sorted(by_text.items())):
        r = group[0]
        sid = f"s{n:03d}"
        keys[sid] = [g["key"] for g in group]
        out.append({"sheet_id": sid, "question": r["question"],
                    "lecture": r["gold_lecture"],
                    "gold_text": gold_text(set_name, r["gold_lecture"], r["gold_start"],
                                           r["gold_end"]),
                    "reference": r["reference"], "answer": r["answer"]})
    random.Random(7).shuffle(out)
    SHEET.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in out))
    SHEET_KEYS.write_text(json.dumps(keys, indent=1))
    return len(out)


def read(path: Path, by: str = "blind reading") -> int:
    """Store the labels of a labelled sheet; the count stored."""
    keys: dict[str, list[str]] = json.loads(SHEET_KEYS.read_text())
    stored = read_jsonl(LABELS) if LABELS.exists() else []
    known = {r["key"] for r in stored}
    added = 0
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in MARKS:
            raise SystemExit(f"{path}: line {n}: label must be one of {', '.join(MARKS)}")
        for key in keys.get(row["sheet_id"], []):
            if key not in known:
                stored.append({"key": key, "label": row["label"], "why": row.get("why", ""),
                               "by": by})
                known.add(key)
                added += 1
    tmp = LABELS.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in stored))
    tmp.replace(LABELS)
    return added


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "sheet":
        got = sheet(Path(sys.argv[2])) if len(sys.argv) >= 3 else sheet()
        print(f"{got} answers to label in {SHEET}")
    elif len(sys.argv) >= 3 and sys.argv[1] == "read":
        print(f"{read(Path(sys.argv[2]))} labels stored in {LABELS}")
    else:
        print(__doc__)


if __name__ == "__main__":
    main()
