"""Every JSON Lines file a user hands us (questions, gold sets, labelled sets) fails the same
way on a bad line: one error naming the file and the line."""

from pathlib import Path

import pytest

from answer.course import read_labelled
from answer.evidence import read_questions
from corpus.errors import InputError
from eval.questions import load_questions
from eval.retrieval import read_gold

GOOD = ('{"id": "q1", "question": "o que é um autovetor?", "answerable": true, '
        '"gold_lecture": "2016/eigenvalues", "gold_start": 1, "gold_end": 9, "kind": "subject"}')
READERS = [read_labelled, read_questions, load_questions, read_gold]


@pytest.mark.parametrize("read", READERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("bad", "says"), [("{oops", "not JSON"),
                                            ('["q2", "um vetor"]', "expected a JSON object")])
def test_a_bad_line_is_named_by_file_and_line(tmp_path: Path, read, bad: str,
                                              says: str) -> None:
    f = tmp_path / "perguntas.jsonl"
    f.write_text(f"{GOOD}\n\n{bad}\n{GOOD.replace('q1', 'q3')}\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read(f)
    assert str(info.value).startswith(f"{f}: line 3: {says}")


@pytest.mark.parametrize("read", READERS, ids=lambda f: f.__name__)
def test_blank_lines_are_skipped(tmp_path: Path, read) -> None:
    f = tmp_path / "perguntas.jsonl"
    f.write_text(f"\n{GOOD}\n   \n", encoding="utf-8")
    assert len(read(f)) == 1
