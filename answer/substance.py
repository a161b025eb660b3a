"""Does an answer say anything the question did not? And the lecture's own words when it doesn't.

The embedded 1.5B generator often hands the question back with a citation and nothing else:
"O número de colisões dos blocos dá os dígitos de pi é [1].", "A resposta é [1, 2]." On 37
questions of the answer bench's fitting half and a dozen new ones, 11 answers carried fewer than
four content words beyond the question's (``bench/answer_quality.py`` prints the share). The
passages had the answer; the student got nothing. So, pure functions over plain text:

- a last sentence the generator left unfinished (it stopped at its token limit mid-word:
  "Portanto, a probabilidade de Steve ser bibliotec [1]") goes when a finished one precedes it;
- a sentence that adds no content word to the question's, or says again what an earlier one
  said, is dropped, and one that loops (the same five words a third time) is cut there (a
  connective left hanging before the citation, ", pois [1].", goes too); so is
  a third sentence opening or closing with the same five words as two before it (the loop
  across sentences: "Se Steve é bibliotecário, a probabilidade de Steve ser bibliotecário é
  1/2 [2]. Se Steve não é ..., a probabilidade de Steve ser bibliotecário é 1/2 [2]. ...").
  A passage heading copied from the prompt ("Aula: TÍTULO (09:41–10:08)") goes too. A
  sentence cut at an ellipsis ("x^x^x^... converge") is judged whole, and a citation
  written before its sentence ("[1] O log ...") moves to its end;
- when what is left adds fewer than ``MIN_NEW_WORDS``, the answer gets the first passage
  quoted, with its citation: the lecture's own words, which the claim checker can confirm and
  the link opens at. The first is the one the answerer trusts most (the retriever's best of
  those that passed the evidence check); the marker on an answer that says nothing is no
  guide. Quoting the cited passage instead put the student at another minute of the lecture
  for 1 of the 11 quoted answers on the answer bench's fitting questions (``questions_3b1b_dev``
  and the fitting half of ``answers_3b1b``: the marker said [2], the first passage held the
  gold span) and gained none.

Content words are the search's: Portuguese stems, accents folded, stop words dropped
(``corpus.bm25.tokenize``), so "autovetores" in the answer and "autovetor" in the question match.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from answer.citations import MARKER_RE, cite_also, cited_numbers, sentence_spans
from corpus.bm25 import tokenize
from corpus.context import cut, squash
from corpus.text import fold

MIN_NEW_WORDS = 4
"""Content words beyond the question's an answer needs to count as saying something (chosen on
the fitting half of the answer bench and new questions, never on its test half)."""

QUOTE_CHARS = 500
"""At most this much of the passage is quoted."""

_META = ("resposta responder pergunta trecho trechos aula aulas video vídeo explicado explica "
         "answer question excerpt passage lecture lectures explained")
"""Words about the answer rather than the subject ("A resposta é [1].") add nothing."""

_POLARITY = frozenset({"nao", "sim", "nunca", "jamais", "nenhum", "nenhuma", "yes", "not",
                       "never", "none"})
"""Stop words that answer a yes/no question ("Não é comutativa."): they count as content."""

_LEAD = {
    "pt": "Trecho da aula que responde: “{text}” [{n}]",
    "en": "The lecture passage that answers (in the lecture's words): “{text}” [{n}]",
}


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` quotes, between “ and ” (``with_substance``'s quote of the lecture,
    ``answer.locate``'s): the lecture's own words, which no post-check should mark unconfirmed."""
    return [m.span() for m in re.finditer(r"“[^”]*”", text)]


@dataclass(frozen=True)
class Substance:
    """What was made of an answer: its text, how many content words it adds to the question,
    how many restating sentences were dropped and whether a passage was quoted."""

    text: str
    new_words: int
    dropped: int = 0
    quoted: int | None = None
    """The passage number quoted (1-based), None when the answer stood on its own."""


@lru_cache(maxsize=1)
def _meta() -> frozenset[str]:
    return frozenset(tokenize(_META))


def _words(text: str) -> list[str]:
    """Content words (stems) once each, in order: yes/no words count, words about the answer
    itself do not."""
    text = MARKER_RE.sub(" ", text)
    meta = _meta()
    polar = [w for w in (fold(x) for x in re.findall(r"\w+", text)) if w in _POLARITY]
    return [w for w in dict.fromkeys([*polar, *tokenize(text)]) if w not in meta]


def _starts_sentence(text: str) -> bool:
    return text[:1].isupper() or text[:1] in "[“\"'(" or text[:1].isdigit()


def new_words(text: str, question: str) -> list[str]:
    """The answer's content words (stems) the question does not have, in order, once each."""
    asked = set(_words(question))
    return [w for w in _words(text) if w not in asked]


LOOP_WORDS = 5
"""A run of this many words said a third time in one sentence is a loop (greedy decoding's
failure: "R0 é a probabilidade de uma pessoa infectada por outra, dividida pela probabilidade
de uma pessoa infectada por outra, dividida pela ..."); twice can be a comparison."""


def _loop_word(word: str) -> str:
    """A word as the loop checks compare it: folded, its trailing punctuation dropped."""
    return fold(word).strip(",.;:")


def unloop(sentence: str, n: int = LOOP_WORDS) -> str:
    """``sentence`` cut where a run of ``n`` words starts for the third time (back to the comma
    before it), its citation markers kept."""
    words = list(re.finditer(r"\S+", sentence))
    seen: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(words) - n + 1):
        key = tuple(_loop_word(w.group(0)) for w in words[i : i + n])
        starts = seen.setdefault(key, [])
        if starts and i - starts[-1] < n:
            continue  # overlapping itself ("a a a a a a"): not a new occurrence
        starts.append(i)
        if len(starts) == 3:
            head = sentence[: words[i].start()]
            clause = head.rfind(",", words[starts[1] + n - 1].end())
            head = (head[:clause] if clause > 0 else head).rstrip(" ,;:")
            marks = " ".join(m.group(0) for m in MARKER_RE.finditer(sentence[words[i].start():]))
            return f"{head}…" + (f" {marks}" if marks else "")
    return sentence


def _sentences(text: str, lang: str) -> list[str]:
    """The answer's sentences, a chunk cut at an ellipsis or an abbreviation ("1 + 1/4 + ...
    da pi²/6") joined to the rest of its sentence, a citation written before the sentence
    ("[1] O log de ...") moved to its end, or named as a passage when it is the sentence's
    subject ("[1] explica que ..." -> "O trecho [1] explica que ...")."""
    out: list[str] = []
    for a, b in sentence_spans(text):
        chunk = text[a:b]
        if out and not _starts_sentence(chunk):
            out[-1] = f"{out[-1]} {chunk}"
        else:
            out.append(chunk)
    for k, sentence in enumerate(out):
        lead = _LEADING_MARKERS_RE.match(sentence)
        if lead and sentence[lead.end():].strip():
            rest = sentence[lead.end():]
            if rest[:1].islower():
                out[k] = f"{_SUBJECT.get(lang, _SUBJECT['pt'])} {sentence.lstrip()}"
                continue
            numbers = [*cited_numbers(lead.group(0)), *cited_numbers(rest)]
            out[k] = cite_also(MARKER_RE.sub("", rest), list(dict.fromkeys(numbers)))
    return out


_DANGLING_RE = re.compile(
    # not "e": the number e ends sentences ("... é a base e [1].")
    r"[,;:]?\s+(?:pois|porque|que|como|onde|quando|ou|mas|é|são|de|do|da|dos|das|por|para|"
    r"since|because|that|as|and|or|but|is|are|of|the|to)"
    rf"(?=(?:\s*{MARKER_RE.pattern})*\s*[.!?…]?\s*$)", re.IGNORECASE)


def undangle(sentence: str) -> str:
    """``sentence`` without a connective left hanging before its citation, where the
    generator stopped mid-clause: "A derivada de e^x é ela mesma, pois [1]." -> "A derivada
    de e^x é ela mesma [1]."."""
    return _DANGLING_RE.sub("", sentence, count=1)


_CLOCK = r"\d{1,2}:\d{2}(?::\d{2})?"
_HEADER_RE = re.compile(
    rf"(?:\[\d+\]\s*)?\b(?:Aula|Lecture):\s[^\n]{{1,160}}?\s\({_CLOCK}\s*[–-]\s*{_CLOCK}\)"
    rf"\s*(?:{MARKER_RE.pattern})?\s*"
    # or a line of its own without the span: "Aula: Autovetores e autovalores | Capítulo 14 [4]"
    rf"|^[ \t]*(?:\[\d+\]\s*)?(?:Aula|Lecture):[ \t][^\n.!?]{{1,160}}?"
    rf"(?:[ \t]*{MARKER_RE.pattern})?[ \t]*(?:\n+|$)", re.M)


def unheader(text: str) -> str:
    """``text`` without the passages' own headings the generator copied from its prompt
    ("Aula: O problema mais difícil (09:41–10:08) [1] A resposta é ..." -> "A resposta é
    ..."): the citation already names the lecture and the moment."""
    return _HEADER_RE.sub("", text).strip()


_SUBJECT = {"pt": "O trecho", "en": "Passage"}
_LEADING_MARKERS_RE = re.compile(rf"^(?:\s*{MARKER_RE.pattern})+\s*")


def _ends(sentence: str, n: int = LOOP_WORDS) -> list[tuple[str, ...]]:
    """The ``n`` words opening ``sentence`` and the ``n`` closing it, each tagged with its
    end; none for a sentence shorter than ``n`` words. The full stop a citation leaves alone
    ("derivada [1]." -> "derivada .") is no word: it made a cited sentence's close differ from
    the same close uncited, and a loop of three went whole."""
    words = [w for w in (_loop_word(w) for w in MARKER_RE.sub(" ", sentence).split()) if w]
    return [("open", *words[:n]), ("close", *words[-n:])] if len(words) >= n else []


_FINISHED_RE = re.compile(r"[.!?…:;”\"')\]]$")


def unfinished(sentence: str) -> bool:
    """Whether ``sentence``, its citation markers aside, stops without a final punctuation
    mark: where the generator ran out of tokens ("... de Steve ser bibliotec [1]")."""
    return not _FINISHED_RE.search(MARKER_RE.sub(" ", sentence).rstrip())


def with_substance(text: str, question: str, passages: Sequence[str], lang: str,
                   *, min_new: int = MIN_NEW_WORDS, quote_chars: int = QUOTE_CHARS) -> Substance:
    """``text`` without the sentences that only restate ``question`` or an earlier sentence
    (a loop inside a sentence cut off), and with the first passage quoted when what is left
    adds fewer than ``min_new`` content words. ``passages``: the texts the answer's ``[n]``
    markers number (1-based), best first."""
    text = unheader(text)
    asked = set(_words(question))
    kept: list[str] = []
    said: list[set[str]] = []
    seen: Counter[tuple[str, ...]] = Counter()
    dropped = 0
    sentences = _sentences(text, lang)
    if len(sentences) > 1 and unfinished(sentences[-1]):
        sentences, dropped = sentences[:-1], 1  # cut at the token limit: the rest stands
    for sentence in (undangle(unloop(s)) for s in sentences):
        words = set(_words(sentence))
        again = next((j for j, before in enumerate(said) if words <= before), None)
        # the same five words opening or closing a third sentence: the loop, across sentences
        ends = _ends(sentence)
        looping = any(seen[e] >= 2 for e in ends)
        seen.update(ends)
        if words - asked and again is None and not looping:
            kept.append(sentence)
            said.append(words)
            continue
        dropped += 1
        if again is not None:  # the claim stands once, cited by every passage that made it
            kept[again] = cite_also(kept[again], cited_numbers(sentence))
    body = " ".join(kept)
    changed = dropped or body != " ".join(text[a:b] for a, b in sentence_spans(text))
    added = len(new_words(body, question))
    if added >= min_new or not passages:
        return Substance(body if changed else text.strip(), added, dropped)
    spoken = without_boilerplate(passages[0])  # the best passage, whatever the marker said
    if not spoken:  # nothing but a greeting or a sponsor's thanks: no quote is better
        return Substance(body if changed else text.strip(), added, dropped)
    quote = _LEAD.get(lang, _LEAD["pt"]).format(text=cut(spoken, quote_chars), n=1)
    return Substance(f"{body} {quote}".strip(), added, dropped, 1)


_CUE_RE = re.compile(r"🎵[^🎵]{0,20}🎵|🎵|\[(?:música|music|aplausos|applause|risos|laughter)\]",
                     re.IGNORECASE)
_BOILERPLATE_RE = re.compile(
    r"patreon|patrocinad|patrocinador|sponsor|inscrev|subscribe|bem-vindos? de volta|"
    r"welcome back|^\W*(?:obrigad[oa]s?|thanks?(?: you)?)\W*$", re.IGNORECASE)


def without_boilerplate(passage: str) -> str:
    """``passage`` without the sentences a video says around its subject (music cues, a
    greeting, a sponsor's or the supporters' thanks, a plea to subscribe): a quote of "🎵Música🎵
    Bem-vindo de volta ao Lockdown Math." answers nothing."""
    text = squash(_CUE_RE.sub(" ", passage))
    kept = [text[a:b] for a, b in sentence_spans(text)
            if not _BOILERPLATE_RE.search(text[a:b])]
    return " ".join(kept)
