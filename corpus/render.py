"""Plain-text renderings of hits shared by the CLI and the reports."""

from __future__ import annotations

from corpus.models import Hit


def fmt_ts(seconds: float) -> str:
    """Seconds as HH:MM:SS, the way the reports print times."""
    s = max(0, int(round(seconds)))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def hit_markdown(hit: Hit, *, hide_url: bool = False, with_lecture: bool = False) -> str:
    """One retrieved segment in the reference report's list shape."""
    lines = [f"- *Corpus ID:* {hit.corpus_id}", f"- *Score:* {hit.score!r}"]
    if with_lecture:
        lines.append(f"- *Aula:* {hit.title or hit.lecture_id} ({hit.lecture_id})")
    lines += [
        f"- *URL:* {'oculto' if hide_url else (hit.url or '—')}",
        f"- *Início:* {fmt_ts(hit.start)}",
        f"- *Fim:* {fmt_ts(hit.end)}",
    ]
    if with_lecture and hit.answer_start is not None:
        lines.append(f"- *Resposta a partir de:* {fmt_ts(hit.answer_start)}")
    lines += [
        f"- *Transcrição:* {hit.text}",
    ]
    return "\n".join(lines)
