"""Mentions of the lecture, the video or the teacher in a student's question.

Students ask about what they watched: "o prof disse na aula que autovetor não muda de direção,
como assim?", "na aula de redes neurais ele fala de sigmoide, pra que serve?", "lá pelo minuto
7 ele desenha um paralelogramo, pq?", "in the micrograd lecture, what did he mean by a leaf
node?". What they ask about is the eigenvector, the sigmoid, the parallelogram, the leaf node;
"o prof disse", "na aula", "lá pelo minuto 7" are not in what the lecture says there. As typed,
those words pulled the lectures' openings, which talk about videos, classes and students, to
the first place ("na aula, como o professor explica o determinante?" got the opening of the
linear-algebra series), and the evidence gate, which reads the share of the question's words
the retrieved windows say, declined the eigenvector question (``term_cov`` 0.33: "prof",
"disse", "aula" are nowhere in them).

``strip_mentions`` leaves them out of what is searched and of what the gate and the passage
focus read; the answer is still written for the question as typed. It cuts:

- a speaker and a verb of saying or showing: "o professor disse que", "o prof mostrou",
  "ele fala de", "quando ela explica", "o que ele quis dizer com", a capitalised name before
  such a verb ("o Grant falou", "Andrej says"), "the instructor said", "he means by";
- a lecture or a video named as such, with the preposition that joins it to its subject:
  "na aula de" (the subject, "redes neurais", stays), "no vídeo sobre", "nessa aula",
  "in the lecture on", "in this video";
- where in it: "lá pelo minuto 7", "aos 12:30", "no começo do vídeo", "naquela parte em que",
  "around minute 40", "at the end of the video", "in the part where".

Course questions keep these words: the course check reads the question before this (``a aula de
quinta vai ter gravação?`` is about the course, and is declined as one). A question with nothing
else left is returned as typed.
"""

from __future__ import annotations

import re
import unicodedata

from corpus.bm25 import stopwords

__all__ = ["mentioned_time", "strip_mentions"]


def _alts(words: str) -> str:
    """A regex alternation of the space-separated ``words`` (longest first; "_" a space)."""
    items = sorted((w.replace("_", r"\s+") for w in words.split()), key=len, reverse=True)
    return "(?:" + "|".join(items) + ")"


# --- Portuguese (matched on the question with its accents folded, case kept) ---------------

_TEACHER_PT = _alts(
    "professor professora prof profe profa profes professo docente instrutor instrutora "
    "palestrante narrador narradora autor apresentador monitor monitora cara_do_video "
    "moco_do_video moca_do_video youtuber")
_ARTICLE_PT = r"(?:(?:o|a|os|as|nosso|nossa|esse|essa|este|esta|aquele|aquela)\s+)"
_SAY_PT = _alts(
    # said, says, talks, explains, shows, mentions, meant: what a pronoun may do too
    "disse diz dizia dizendo falou fala falava falando falam explicou explica explicava "
    "explicando mostrou mostra mostrava mostrando comentou comenta comentando mencionou "
    "menciona citou cita desenhou desenha desenhando escreveu escreve escrevendo apresentou "
    "apresenta ensinou ensina abordou aborda quis_dizer quer_dizer queria_dizer "
    "tava_falando estava_falando ta_falando fica_falando falou_sobre deu_a_entender "
    "afirmou afirma argumentou argumenta")
_DO_PT = _alts(
    # what a named teacher does on screen (not said of "ele"/"ela": "ela passa pela origem?")
    "usou usa usando fez faz fazendo chamou chama chamava chamando calculou calcula provou "
    "prova demonstrou demonstra definiu define contou conta comparou compara resolveu "
    "resolve derivou deriva introduziu introduz colocou coloca montou monta animou anima "
    "perguntou pergunta deu da")
_ADVERB_PT = _alts("nao n tb tbm tambem ja so sempre meio_que tipo ate")
_AFTER_SAY_PT = _alts(
    "que q sobre de do da dos das com a_respeito_de a_respeito_do a_respeito_da isso:")
_NAME = r"(?-i:[A-Z][a-z]{2,}(?:\s+[A-Z][a-z]{2,})?)"
"""A capitalised name (accents folded): the teacher, after an article and before a verb of
saying or doing ("o Grant falou"); in English before a verb of saying ("Andrej says")."""

_MEDIA_PT = _alts(
    # not "gravação": "tenho uma gravação com um apito no fundo" asks about one
    "video_aula videoaula videoaulas aula aulas video videos palestra palestras live lives "
    "episodio lecture clip")
_MEDIA_ARTICLE_PT = _alts(
    "naquela naquele nessa nesse nesta neste numa num na no nas nos da do das dos dessa desse "
    "desta deste daquela daquele a o as os essa esse esta este aquela aquele uma um em")
_MEDIA_WHICH_PT = _alts(
    "anterior passada seguinte de_hoje de_ontem de_semana_passada da_semana_passada "
    "\\d+ 1a 2a 3a primeira segunda terceira ultima ultimo")
_MEDIA_JOIN_PT = _alts(
    "de do da dos das sobre que_fala_de que_fala_sobre que_ele_fala_de que_ele_fala_sobre "
    "em_que onde")

_CLOCK = r"\d{1,2}(?:[:h]\d{2}){1,2}"
_NUM = r"\d{1,3}(?:\s*(?:-|a|ou|/)\s*\d{1,3})?"
"""A number of minutes, or a range of them ("3-4", "10 ou 11")."""
_MIN_WORD = r"(?:minutos|minuto|mins|min|minutes|minute|m)"
_MINUTES_PT = (
    r"(?:(?:la\s+|ali\s+|tipo\s+|por\s+volta\s+|mais\s+ou\s+menos\s+)?"
    r"(?:(?:pelo|pelos|pro|pros|no|nos|aos|ao|perto\s+do|perto\s+dos|depois\s+dos?|"
    r"antes\s+dos?|a\s+partir\s+dos?|volta\s+do|volta\s+dos|uns|umas|tipo|~)\s*"
    rf"(?:(?:minuto|minutos|min|mins)\s*(?:{_CLOCK}|{_NUM})"
    rf"|{_CLOCK}(?:\s*{_MIN_WORD})?"
    rf"|{_NUM}\s*{_MIN_WORD}(?:\s*(?:e\s*)?\d+\s*(?:s|seg|segundos)|\s+e\s+meio)?)"
    # "em 5 min" is as often how long something takes: "em" only before a clock or "minuto"
    rf"|em\s+(?:(?:o\s+)?minuto\s*(?:{_CLOCK}|{_NUM})|{_CLOCK})))\b"
    rf"(?:\s+(?:do|da|de)\s+{_MEDIA_PT})?")
_PART_PT = (
    # "no começo do vídeo", not "no meio de dois polarizadores" or "no fim do semestre"
    r"(?:(?:(?:la|ali|bem|logo|quase|perto|mais)\s+)?(?:no|ao|do|pro|pelo)\s+"
    r"(?:comeco|comecinho|inicio|final|finalzinho|fim|fimzinho|meio)"
    rf"\s+(?:do|da|de)\s+{_MEDIA_PT}"
    r"|(?:naquela|nessa|na|numa)\s+parte\s+(?:em\s+que|em\s+q|que|q|onde|do|da|de|sobre|com)?)")

_SPEAKER_SAY_PT = (
    rf"(?:(?:quando|qnd|qdo|qndo|onde|e)\s+)?"
    rf"(?:(?:{_ARTICLE_PT}?{_TEACHER_PT}|(?:o|a)\s+{_NAME})\s+(?:{_ADVERB_PT}\s+)?"
    rf"(?:{_SAY_PT}|{_DO_PT})|(?:ele|ela)\s+(?:{_ADVERB_PT}\s+)?{_SAY_PT})"
    rf"(?:\s+{_AFTER_SAY_PT})?")
_MEDIA_REF_PT = (
    rf"(?:{_MEDIA_ARTICLE_PT}\s+)?{_MEDIA_PT}(?:\s+{_MEDIA_WHICH_PT})?"
    rf"(?:\s+{_MEDIA_JOIN_PT})?")

# --- English ---------------------------------------------------------------------------------

_TEACHER_EN = _alts(
    "professor prof instructor lecturer teacher speaker presenter narrator author guy tutor")
_SAY_EN = _alts(
    "says said mentions mentioned explains explained shows showed talks_about talked_about "
    "talks talked claims claimed means meant describes described draws drew writes wrote "
    "goes_over went_over points_out pointed_out states stated notes noted is_saying "
    "was_saying was_talking_about is_talking_about refers_to referred_to argues argued")
_DO_EN = _alts(
    "uses used does did calls called defines defined builds built codes coded implements "
    "implemented introduces introduced computes computed derives derived demonstrates "
    "demonstrated gets got runs ran trains trained")
_AFTER_SAY_EN = _alts("that about by with when:")
_MEDIA_EN = _alts("video videos lecture lectures talk lesson clip")
"""Not "class", "session", "stream": "the class probabilities", "a data stream"."""
_MEDIA_ARTICLE_EN = (
    r"(?:(?:in|on|from|at|during|throughout)\s+)?"
    r"(?:the|this|that|his|her|a|one|last|previous|earlier|first|second|\w+'s)")
_MEDIA_JOIN_EN = _alts("on about where when that_covers covering for")
_MINUTES_EN = (
    r"(?:(?:at|around|about|near|after|before|by|from|~)\s+(?:the\s+)?"
    rf"(?:(?:minute|min)\s*(?:{_CLOCK}|{_NUM})|{_CLOCK}|{_NUM}\s*{_MIN_WORD}\b)"
    r"(?:\s+(?:mark|in|into))?(?:\s+(?:of|in|into)\s+the\s+(?:video|lecture|talk))?"
    rf"|{_NUM}\s*(?:minutes|mins|min)\s+in(?:to\s+the\s+(?:video|lecture|talk))?\b)")
_PART_EN = (
    # "at the end of the video", not "in the middle" of a network
    r"(?:(?:at|near|towards|toward|in)\s+the\s+(?:start|beginning|end|middle)"
    r"\s+of\s+the\s+(?:video|lecture|talk)"
    r"|(?:in\s+)?the\s+part\s+(?:where|when|about|on)?)")
_SPEAKER_SAY_EN = (
    rf"(?:(?:when|where)\s+)?"
    rf"(?:(?:did|does|do|is|was)\s+(?:(?:the\s+)?{_TEACHER_EN}|he|she|{_NAME})\s+"
    rf"(?:mean|say|explain|show|talk\s+about|mention|claim|draw|write|use|do|call)"
    rf"(?:\s+{_AFTER_SAY_EN})?|"
    rf"(?:(?:the\s+)?{_TEACHER_EN}\s+(?:{_SAY_EN}|{_DO_EN})"
    rf"|(?:he|she|{_NAME})\s+{_SAY_EN})(?:\s+{_AFTER_SAY_EN})?)")
_MEDIA_REF_EN = rf"(?:{_MEDIA_ARTICLE_EN}\s+){_MEDIA_EN}(?:\s+{_MEDIA_JOIN_EN})?"


def _compile(*parts: str) -> re.Pattern[str]:
    # any case, but a name's capital (``_NAME``) is read as typed
    body = "|".join(f"(?:{p})" for p in parts)
    return re.compile(rf"(?<![\w'])(?:{body})(?![\w'])", re.IGNORECASE)


_LONE_MEDIA = r"(?:aula|aulas|video|videos|videoaula|videoaulas|lecture|lectures)"
"""The lecture named after its subject ("a aula 3 de cálculo", "the micrograd lecture"):
the noun goes, the subject stays."""

_TEACHER_ALONE_PT = rf"{_ARTICLE_PT}{_TEACHER_PT}"
"""The teacher named without a verb next to it ("o prof no vídeo da X fala de ...")."""

_PT = _compile(_SPEAKER_SAY_PT, _MINUTES_PT, _PART_PT, _MEDIA_REF_PT, _LONE_MEDIA,
               _TEACHER_ALONE_PT)
_EN = _compile(_SPEAKER_SAY_EN, _MINUTES_EN, _PART_EN, _MEDIA_REF_EN, _LONE_MEDIA,
               rf"the\s+{_TEACHER_EN}")
_WORD = re.compile(r"\w+")


def _fold_keep_length(text: str) -> str:
    """``text`` without accents, one character for one (case kept), so that a match on it
    cuts the same span of ``text``."""
    return "".join(unicodedata.normalize("NFD", c)[0] for c in text)


def _asks(text: str) -> bool:
    stops = stopwords()
    return any(w.lower() not in stops and not w.isdigit() for w in _WORD.findall(text))


_MOMENT = re.compile(rf"(?<![\w'])(?:{_MINUTES_PT}|{_MINUTES_EN})(?![\w'])", re.IGNORECASE)
_CLOCK_PARTS = re.compile(r"(\d{1,2})[:h](\d{2})(?:[:h](\d{2}))?")
_NUMBERS = re.compile(r"\d+")


def mentioned_time(question: str) -> tuple[float, float] | None:
    """The moment of the video ``question`` points at, in seconds from its start, as a
    (first, last) pair: "lá pelo minuto 7" (420, 480), "uns 10-11 min" (600, 720), "aos
    12:30" (750, 750), "around 1:25:00" (5100, 5100); None when it names none."""
    m = _MOMENT.search(_fold_keep_length(question))
    if m is None:
        return None
    text = m.group(0)
    clock = _CLOCK_PARTS.search(text)
    if clock is not None:
        a, b, c = clock.groups()
        if c is not None:  # h:mm:ss
            at = int(a) * 3600 + int(b) * 60 + int(c)
        elif "h" in clock.group(0).lower():  # 1h25
            at = int(a) * 3600 + int(b) * 60
        else:  # m:ss
            at = int(a) * 60 + int(b)
        return float(at), float(at)
    nums = [int(n) for n in _NUMBERS.findall(text)]
    if not nums:
        return None
    first = nums[0]
    last = nums[1] if len(nums) > 1 and nums[1] > first and not re.search(
        r"\d\s*(?:s|seg|segundos)\b", text) else first
    return first * 60.0, last * 60.0 + 60.0


def strip_mentions(question: str) -> str:
    """``question`` without its mentions of the lecture, the video, the teacher or a moment in
    them (see the module docstring); as typed when nothing is left that asks."""
    folded = _fold_keep_length(question)
    spans = [m.span() for pat in (_PT, _EN) for m in pat.finditer(folded) if m.end() > m.start()]
    if not spans:
        return question
    keep, last = [], 0
    for a, b in sorted(spans):
        if a < last:
            a = last
        if b <= a:
            continue
        keep.append(question[last:a])
        last = b
    keep.append(question[last:])
    out = " ".join("".join(keep).split())
    out = re.sub(r"\s+([,.;:!?])", r"\1", out)
    out = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", out)
    out = out.strip(" ,;:-")
    # "o prof disse na aula que autovetor ..." leaves the "que" that joined them
    out = re.sub(r"^(?:que|q|that)\s+", "", out, flags=re.IGNORECASE)
    return out if _asks(out) else question
