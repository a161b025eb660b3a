"""Questions as students type them, rewritten into the words the transcripts use.

First the chat framing around the question is left out (``strip_framing``: "oi gente, tô com
uma dúvida:", "obrigado!!", "(cai na prova amanhã)", "kkkk"), whose words otherwise pull the
lectures' greetings and exam announcements into the results and sway the evidence gate, and so
are mentions of the lecture or the teacher (``corpus.mentions``: "o prof disse na aula que").
Then three rewrites, all pure and cheap: chat abbreviations expanded ("pq" -> "por que", "vc" ->
"você"), words typed without their accents given back the spelling the lectures use
("funcao" -> "função", "neuronio" -> "neurônio", and "funçao", typed with the cedilla
but not the tilde, as phone keyboards leave it), and misspelt words ("autovetorres",
"exatamnte", "derviada") given the nearest word the lectures use (``Speller``). All three read
off the corpus' own vocabulary so that nothing is guessed from outside it. Each was measured on
the retrieval bench (``bench/retrieval_quality.py``, the spelling one on the bench questions
with typing slips added) and kept because it helped; BM25 folds accents itself and gets the
same rewritten text.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable

from corpus.bm25 import stopwords
from corpus.language import Lang, corpus_language, detect_language, word_counts_shipped
from corpus.mentions import strip_mentions
from corpus.text import fold

_WORD = re.compile(r"\w+", re.UNICODE)
_GLUED = re.compile(r"(?<=\d)(?=(?:sen|cos|tg|tan|ln|det|lim)(?![^\W\d_²³]))")
"""A coefficient typed against a function's name ("2sen²(x)", "3cos(x)", "2ln(x)"): a space
goes between them, so that the name is read as a word and said as the lectures say it."""
_SUPERSCRIPT = re.compile(r"(?<=[^\W\d_])(?=[²³])")
"""A square or cube typed against a word ("sen²x", "x²"): "²" is a word character to the
regex, so "sen²" would be one word and never read as "seno"."""

ABBREVIATIONS: dict[str, str] = {
    "pq": "por que", "pqp": "por que", "porq": "por que", "vc": "você", "vcs": "vocês",
    "q": "que", "oq": "o que", "tb": "também", "tbm": "também", "hj": "hoje", "msm": "mesmo",
    "n": "não", "nao": "não", "td": "tudo", "tds": "todos", "mt": "muito", "mto": "muito",
    "mta": "muita", "mtos": "muitos", "dps": "depois", "qdo": "quando", "qnd": "quando",
    "qndo": "quando", "ngm": "ninguém", "cmg": "comigo", "blz": "beleza", "pra": "para",
    "pro": "para o", "eh": "é", "ta": "está", "tá": "está", "tava": "estava", "ñ": "não",
    "vdd": "verdade", "cm": "como", "qto": "quanto",
    "qts": "quantos", "qtos": "quantos", "fds": "fim de semana", "obg": "obrigado",
    "mds": "meu deus", "sla": "sei lá", "tlgd": "tá ligado", "agr": "agora", "ent": "então",
    "entao": "então", "tmb": "também", "pfv": "por favor", "pls": "por favor",
    "dnv": "de novo", "smp": "sempre", "ctz": "certeza", "qlqr": "qualquer",
    "qualqr": "qualquer", "neh": "né", "qtd": "quantidade", "qtde": "quantidade",
    # how students write functions, and how the lectures say them (3b1b-pt: "seno" 215 times,
    # "sen" 6; "cosseno" 275, "cos" 8; "ln" 9)
    "sen": "seno", "cos": "cosseno", "tg": "tangente", "tan": "tangente",
    "ln": "logaritmo natural", "det": "determinante", "lim": "limite", "theta": "teta",
}
"""Chat spellings of Brazilian students, and the functions they write in notation ("sen x",
"ln 2"), with what the lectures say instead. Only whole words are replaced, and only
lower-case ones, so "Q" in "matriz Q" stays a letter."""


def word_counts(texts: Iterable[str]) -> Counter[str]:
    """How often each lower-case word occurs in ``texts``."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w.lower() for w in _WORD.findall(text))
    return counts


def accent_map(texts: Iterable[str] | Counter[str], min_count: int = 2) -> dict[str, str]:
    """For every accented word of ``texts`` (or of their ``word_counts``): its unaccented
    lower-case form -> the spelling the texts use most. Words seen fewer than ``min_count``
    times (ASR slips) are left out, and so is a form the texts also use without accents more
    often (e.g. "e" vs "é")."""
    counts = texts if isinstance(texts, Counter) else word_counts(texts)
    best: dict[str, tuple[int, str]] = {}
    for word, n in counts.items():
        if n < min_count:
            continue
        key = fold(word)
        if key not in best or n > best[key][0]:
            best[key] = (n, word)
    return {k: w for k, (_, w) in best.items() if w != k}


UNIT_FRACTIONS = {
    "2": "meio", "3": "terço", "4": "quarto", "5": "quinto", "6": "sexto", "7": "sétimo",
    "8": "oitavo", "9": "nono", "10": "décimo", "12": "duodécimo", "100": "centésimo",
    "1000": "milésimo"}
"""How Portuguese says one over a number ("-1/12" -> "menos um duodécimo"). In 3b1b-pt's
sentences "um meio" comes 77 times and "1 sobre 2" 6, "um quarto" 61 and "1 sobre 4" 4,
"um duodécimo" 7 and "1 sobre 12" never: as "1 sobre 12", "pq 1+2+3+4+... = -1/12" found a
quadratic-formula window (two numbers that "somam 7 e multiplicam 12") before the zeta
lecture's "menos um duodécimo"."""


def _unit_fraction(match: re.Match[str]) -> str:
    sign = " menos" if match.group(1) else ""
    return f"{sign} um {UNIT_FRACTIONS[match.group(2)]} "


_NOTATION: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = tuple(
    (re.compile(pattern), spoken) for pattern, spoken in (
        # one over a number, as said: "1/4" -> "um quarto", "-1/12" -> "menos um duodécimo"
        (r"(?:(?:(?<=^)|(?<=[\s(=]))(-)\s*|(?<![\w.,/^-]))1\s*/\s*("
         + "|".join(sorted(UNIT_FRACTIONS, key=len, reverse=True)) + r")(?![\w.,/^])",
         _unit_fraction),
        (r"(?<=\))\s*/\s*", " sobre "),
        # probability as students type it: "P(H|E)", "P(E)"
        (r"\b[Pp]\(([^()|]+)\|([^()|]+)\)", r" probabilidade de \1 dado \2 "),
        (r"\bP\(([^()|]+)\)", r" probabilidade de \1 "),
        # a function of one letter or a named one applied: "f(x)", "s(t)", "seno(x)", "ln(x)"
        # (by then "logaritmo natural(x)")
        (r"\b([a-z]|seno|cosseno|tangente|log|exp|raiz|determinante|limite|natural)"
         r"\(\s*([^()]+?)\s*\)",
         r" \1 de \2 "),
        (r"<=>|⇔", " se e somente se "),
        (r"=>|⇒", " implica "),
        (r"->|→|⟶", " tende a "),
        (r"<=|≤", " menor ou igual a "),
        (r">=|≥", " maior ou igual a "),
        (r"!=|≠", " diferente de "),
        (r"≈|~=", " aproximadamente "),
        (r"<", " menor que "),
        (r">", " maior que "),
        (r"\^\s*\(?\s*2\b\)?|²", " ao quadrado "),
        (r"\^\s*\(?\s*3\b\)?|³", " ao cubo "),
        (r"\^", " elevado a "),
        (r"√|\bsqrt\b", " raiz quadrada de "),
        (r"π", " pi "),
        (r"∫", " integral "),
        (r"∑|Σ", " soma de "),
        (r"∞", " infinito "),
        (r"(?:(?<=\b\w)|(?<=\d))!", " fatorial "),
        (r"θ|ϑ", " teta "),
        (r"λ", " lambda "),
        (r"[δΔ]", " delta "),
        (r"∇", " gradiente de "),
        (r"∂", " derivada parcial de "),
        (r"σ", " sigma "),
        (r"μ", " mu "),
        (r"α", " alfa "),
        (r"β", " beta "),
        (r"[φϕ]", " phi "),
        (r"[ωΩ]", " ômega "),
        (r"[εϵ]", " épsilon "),
        (r"(?<=[\w)\]])\s*\+\s*(?=[\w(.])", " mais "),
        (r"(?<![=<>!])=(?![=>])", " igual a "),
        (r"(?<=\d)\s*/\s*(?=\d)|(?<=\bd\w)/(?=d\w\b)|(?<=\b\w)\s*/\s*(?=\w\b)"
         r"|(?<=\d)\s*/\s*(?=[a-zA-Z]\b)|(?<=\w)\s*/\s*(?=[\d(])", " sobre "),
        (r"(?<=[\w)])\s*[*·×]\s*(?=[\w(])", " vezes "),
        (r"(?:(?<=^)|(?<=[\s(=]))-(?=[\d(])", "menos "),
    ))
"""Formulas as students type them and as the lectures say them ("e^x" -> "e elevado a x",
"x²" -> "x ao quadrado", "1+2+3" -> "1 mais 2 mais 3", "-1/12" -> "menos 1 sobre 12",
"P(H|E)" -> "probabilidade de H dado E", "n!" -> "n fatorial", "x->1" -> "x tende a 1",
"θ" -> "teta"): the transcripts are speech, and in 3b1b-pt's 18,246 sentences "ao quadrado"
comes 607 times and "²" 8, "mais" 3,355 and "+" once, "^" never; "probabilidade de" 160 and
"P(" never, "teta" 264 and "θ" once, "f de x" 48 and "f(x)" never, "fatorial" 28 and "!"
after a letter never, "tende a" 36 and "->" never."""


def _in_formula(match: re.Match[str]) -> bool:
    """Whether a one-letter word stands in a formula ("x^n", "n.x^(n-1)", "2q"), where it is a
    variable, not a chat spelling ("n" -> "não", "q" -> "que")."""
    if len(match.group(0)) > 1:
        return False
    text, a, b = match.string, match.start(), match.end()
    near = (text[a - 1] if a > 0 else " ") + (text[b] if b < len(text) else " ")
    if any(ch in "^_.()-+*/=<>|[]{}'!" or ch.isdigit() for ch in near):
        return True
    before = _WORD.findall(text[:a])
    return bool(before) and before[-1].lower() in _BEFORE_A_VARIABLE


_BEFORE_A_VARIABLE = frozenset(
    "o a os as um uma de do da dos das no na com sem para pra pro sobre".split())
"""Words after which a lone letter is a variable ("o n escolhe 4", "para n grande"), not
"não" or "que" ("eu n sei", "pq q")."""


def spoken_notation(question: str) -> str:
    """``question`` with its formula symbols said in Portuguese words (``_NOTATION``)."""
    for pattern, spoken in _NOTATION:
        question = pattern.sub(spoken, question)
    return " ".join(question.split())


_EN_WORDS = frozenset(
    "the a an is are was were what why how does do did of to in on for with that this it and "
    "or be can you i my when which where there their from by as at not".split())
_PT_WORDS = frozenset(
    "o a os as um uma é são que por porque como qual quais de do da dos das em no na nos nas "
    "para pra com não se eu meu minha quando onde isso esse essa ele ela pq vc q oq".split())


def looks_english(question: str) -> bool:
    """More English function words than Portuguese ones: chat abbreviations are not expanded
    ("n" and "pro" mean other things there)."""
    words = [w.lower() for w in _WORD.findall(question)]
    return sum(w in _EN_WORDS for w in words) > sum(w in _PT_WORDS for w in words)


@functools.lru_cache(maxsize=4)
def dictionary_words(lang: Lang) -> frozenset[str]:
    """The words of ``lang`` and of English (students borrow English terms: "transformer",
    "resistor"), accents folded, from the word lists pyspellchecker ships (417,000 Portuguese
    words, 195,000 English), those of 5 letters or more; read once per process (0.85 s)."""
    words: set[str] = set()
    for code in dict.fromkeys((lang, "en")):
        words.update(fold(w) for w in word_counts_shipped(code)
                     if len(w) >= Speller.MIN_LENGTH)  # shorter words are never corrected
    return frozenset(words)


class Speller:
    """A word that is in neither the lectures nor the dictionary of their language (nor the
    English one), typed by a student, replaced by the word the lectures say that is nearest to
    it: at most one edit away (a letter left out, added, changed, or two letters swapped) for
    words of 5 to 7 letters, two for longer ones, with the same first letter, and said at least
    ``min_count`` times; among several, the nearest, then the most frequent. Shorter words,
    words with digits, and real words the lectures happen not to say ("trocou", "torneira")
    are left alone: the corpus alone would "correct" those into its own words."""

    MIN_LENGTH = 5
    TWO_EDITS_FROM = 8

    def __init__(self, counts: Counter[str], lang: Lang, *, min_count: int = 2) -> None:
        self.lang = lang
        self.known = frozenset(fold(w) for w in counts) | dictionary_words(lang)
        totals: Counter[str] = Counter()
        spelling: dict[str, str] = {}  # folded word -> the lectures' most frequent spelling
        for word, n in counts.items():
            key = fold(word)
            if n < min_count or not key.isalpha() or len(key) < self.MIN_LENGTH - 1:
                continue
            totals[key] += n
            if n > counts.get(spelling.get(key, ""), 0):
                spelling[key] = word
        self._by_initial: dict[str, tuple[list[str], list[int], list[str]]] = {}
        for key in sorted(totals):
            keys, freq, spell = self._by_initial.setdefault(key[0], ([], [], []))
            keys.append(key)
            freq.append(totals[key])
            spell.append(spelling[key])

    def correct(self, word: str) -> str | None:
        """The lectures' word for misspelt ``word``, or None to keep it as typed."""
        from rapidfuzz import process
        from rapidfuzz.distance import OSA

        key = fold(word)
        if len(key) < self.MIN_LENGTH or not key.isalpha() or key in self.known:
            return None
        bucket = self._by_initial.get(key[0])
        if bucket is None:
            return None
        keys, freq, spell = bucket
        limit = 2 if len(key) >= self.TWO_EDITS_FROM else 1
        found = process.extract(key, keys, scorer=OSA.distance, score_cutoff=limit, limit=None)
        if not found:
            return None
        _, _, i = min(found, key=lambda f: (f[1], -freq[f[2]], f[0]))
        return spell[i]


_GREETINGS = (
    "oi oii oiii ola ei eai eae opa salve galera gente pessoal turma colegas amigos "
    "hi hey hello hiya everyone guys folks"
)
_THANKS = (
    "obrigado obrigada obrigados obg brigado brigada brigadao valeu vlw agradeco agradecido "
    "agradecida antecipadamente pfv pfvr pf thanks thank thx ty cheers pls plz please"
)
_STRONG = _GREETINGS + " " + _THANKS + (
    # asking for help, apologising for asking, being lost: never what a question asks
    " socorro ajudem ajude ajudinha salvem alguem duvida duvidas duvidinha perguntinha "
    "rapidinho rapidinha boba bobo besteira burra burro desculpa desculpe desculpem perdao "
    "perdido perdida confuso confusa travado travada travei boiando estudando revisando "
    "cai caiu cair anyone someone somebody dumb silly stupid sorry stuck confused"
)
_WEAK = (
    # framing beside the strong words, but also words a question may ask about
    "bom boa bons boas dia tarde noite prof professor professora grupo desde ja favor ajuda "
    "ajudar sabe sabem saber dizer pode podem poderia consegue explica explicar explique "
    "explicacao jeito simples facil pergunta rapida rapido entendi entendo entender "
    "compreendi direito bem nada consegui estudar revisar materia prova provas amanha hoje "
    "semana passada ai aqui isso ae good morning afternoon evening all advance "
    "appreciated appreciate help could can would explain simple simply easy quick question "
    "lost understand understood get got really studying study reviewing review exam exams "
    "midterm final test tomorrow today week here"
)
STRONG_FRAMING = frozenset(_STRONG.split())
"""Words of a chat message's framing around the question, accents folded, that a course
question itself does not use: greetings, thanks, "tô com uma dúvida", "tô perdido", "cai na
prova". A clause made only of framing and stop words, one of them strong or two of them
weak, is framing."""
FRAMING_WORDS = STRONG_FRAMING | frozenset(_WEAK.split())

_OPENERS = (STRONG_FRAMING - frozenset("alguem anyone someone somebody".split())) | frozenset(
    "ajuda sabe sabem dizer explica explicar explique entendi entendo entender compreendi "
    "pergunta explain understand question help".split())
"""Words after which a framing opening of a clause ends, cut there ("alguém sabe me dizer | o
que é X", "não entendi | a parte de Y"); other framing words may sit inside that opening but
do not end it: not "alguém" ("se alguém descreve um cara quieto"), "saber" ("como saber se"),
"professor", "pode", "bom" ("o professor vai disponibilizar os slides?", "pode usar
calculadora?", "bom learning rate")."""

_THANK_WORDS = frozenset(_THANKS.split())
_TAIL = _THANK_WORDS | frozenset(
    _GREETINGS.split() + "desde ja muito much so in advance alguem ai socorro".split())
"""Words that close a message ("... vlw galera", "desde já agradeço", "alguém aí?"): a run of
them at the very end, with thanks or laughter in it, is cut."""

_LAUGH = re.compile(r"^(?:k{2,}|(?:ha){2,}h?|(?:he){2,}h?|(?:rs){1,}|lol|lmao)$")
_CLAUSES = re.compile(
    r"([.,:;!?()\[\]\n]+|\s+(?:mas|but)\s+"
    # "... autovetor tô perdido": a Portuguese "I am" starts a new clause
    r"|\s+(?=(?:tô|tou|estou|to)\s+(?:com|estudando|revisando|perdid|confus|travad|boiando)))",
    re.IGNORECASE)


def _framing(word: str) -> bool:
    return word in FRAMING_WORDS or bool(_LAUGH.match(word))


def _strong(word: str) -> bool:
    return word in STRONG_FRAMING or bool(_LAUGH.match(word))


def _asks(text: str, stops: frozenset[str]) -> bool:
    """Whether ``text`` has a word that is neither a stop word nor framing."""
    return any(fold(w) not in stops and not _framing(fold(w)) for w in _WORD.findall(text))


def _cut_tail(text: str) -> str:
    """``text`` without a closing run at its end that holds thanks or laughter."""
    words = list(_WORD.finditer(text))
    folded = [fold(m.group(0)) for m in words]
    start = len(words)
    while start > 0 and (folded[start - 1] in _TAIL or _LAUGH.match(folded[start - 1])):
        start -= 1
    tail = folded[start:]
    if 0 < start < len(words) and any(w in _THANK_WORDS or _LAUGH.match(w) for w in tail):
        return text[:words[start].start()].rstrip(" \t,;:-")
    return text


def _strip_once(question: str) -> str:
    """One pass of ``strip_framing``."""
    stops = stopwords()
    parts = _CLAUSES.split(question)
    kept: list[str] = []
    cut_opening = True
    opening = ""
    for i in range(0, len(parts), 2):
        clause, sep = parts[i], parts[i + 1] if i + 1 < len(parts) else ""
        words = [(m, fold(m.group(0))) for m in _WORD.finditer(clause)]
        if not words:  # punctuation between clauses; none before the first kept one
            if any(kept):
                kept.append(clause + sep)
            elif sep.rstrip().endswith("("):  # the bracket a formula opens with: "(a+b)/2"
                opening = "("
            continue
        if (all(w in stops or _framing(w) for _, w in words)
                and (any(_strong(w) for _, w in words)
                     or sum(_framing(w) for _, w in words) >= 2)):
            opening = ""  # an aside's: "(cai na prova) ..."
            continue  # "oi gente", "obrigado!!", "uma pergunta rápida", not "é mais rápido"
        if cut_opening:
            end = 0
            for m, w in words:
                if w in _OPENERS or _LAUGH.match(w):
                    end = m.end()
                elif w not in stops and not _framing(w):
                    break
            if end and _asks(clause[end:], stops):
                clause = clause[end:]
            cut_opening = False
        kept.append(opening + clause + sep)
        opening = ""
    out = "".join(kept).lstrip(" \t\n,;:-").rstrip(" \t\n,;:-(")
    if out.startswith("(") and out.count("(") > out.count(")"):  # left by an aside
        out = out[1:].lstrip()
    # a conjunction left dangling, brackets left empty by a dropped aside (not "f()")
    out = re.sub(r"\s+(?:mas|but)\s*$|(?<!\w)\(\s*\)", "", out, flags=re.IGNORECASE).strip()
    out = _cut_tail(out)
    out = re.sub(r"^(?:mas|but)\s+", "", out, flags=re.IGNORECASE)
    return out if _asks(out, stops) else question


def strip_framing(question: str) -> str:
    """``question`` without the chat framing around it, for searching and for the evidence
    gate: clauses made only of framing and stop words are dropped ("oi gente,", "obrigado!!",
    "(cai na prova amanhã)", "kkkk"), a framing opening is cut from the first clause that
    asks something ("alguém sabe me dizer | o que é um autovetor"), and thanks or laughter
    from the end ("... vlw galera"). A question with nothing else (or nothing but framing) is
    returned as typed. Measured on the retrieval and gate benches with framings written apart
    from these words (``bench/framing.py``).

    Passes are repeated until nothing changes, so that stripping a stripped question changes
    nothing (``/ask`` strips before the gate, and the rewriter again before searching)."""
    for _ in range(4):
        out = _strip_once(question)
        if out == question:
            break
        question = out
    return question


class QueryRewriter:
    """Rewrites a question before it is embedded and searched."""

    def __init__(self, accents: dict[str, str] | None = None, *, abbreviations: bool = True,
                 speller: Speller | None = None, framing: bool = True,
                 mentions: bool = True) -> None:
        self.accents = accents or {}
        self.abbreviations = abbreviations
        self.speller = speller
        self.framing = framing
        self.mentions = mentions
        """Leave out mentions of the lecture, the video or the teacher
        (``corpus.mentions.strip_mentions``: "o prof disse na aula que ...")."""

    @classmethod
    def for_corpus(cls, texts: Iterable[str]) -> QueryRewriter:
        texts = list(texts)
        counts = word_counts(texts)
        return cls(accent_map(counts), speller=Speller(counts, corpus_language(texts)))

    def __call__(self, question: str) -> str:
        if self.framing:
            question = strip_framing(question)
        if self.mentions:
            question = strip_mentions(question)
        expand = self.abbreviations and not looks_english(question)
        speller = (self.speller if self.speller is not None
                   and detect_language(question) == self.speller.lang else None)

        def swap(match: re.Match[str]) -> str:
            word = match.group(0)
            if expand and word in ABBREVIATIONS and not _in_formula(match):
                return ABBREVIATIONS[word]
            lowered = word.lower()
            if lowered != word:  # a name or a variable ("Q", "GPT") stays as typed
                return word
            # "funçao", typed with the cedilla but not the tilde, too
            accented = self.accents.get(fold(lowered))
            if accented is not None:
                return accented
            fixed = speller.correct(word) if speller is not None else None
            return fixed if fixed is not None else word

        if expand:
            question = _SUPERSCRIPT.sub(" ", _GLUED.sub(" ", question))
        question = _WORD.sub(swap, question)
        return spoken_notation(question) if expand else question
