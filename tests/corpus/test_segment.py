from corpus.models import Cue
from corpus.segment import segment_by_time, segment_by_tokens


def cues(n: int, step: float = 10.0) -> list[Cue]:
    return [Cue(i * step, i * step + step - 1, f"frase {i}") for i in range(n)]


def test_windows_are_about_two_minutes_with_thirty_seconds_overlap() -> None:
    ws = segment_by_time(cues(60), 120, 30)
    assert ws[0].start == 0 and ws[0].end <= 120
    for a, b in zip(ws, ws[1:], strict=False):
        overlap = a.end - b.start
        assert 0 < overlap <= 30, (a, b)
        assert b.end - b.start <= 120
    assert ws[-1].end == cues(60)[-1].end  # nothing dropped at the end


def test_a_cue_is_never_cut() -> None:
    ws = segment_by_time(cues(30), 120, 30)
    texts = {f"frase {i}" for i in range(30)}
    seen = set()
    for w in ws:
        parts = w.text.split(" frase ")
        seen |= {p if p.startswith("frase") else f"frase {p}" for p in parts}
    assert seen == texts


def test_a_cue_longer_than_the_window_is_its_own_segment() -> None:
    long = [Cue(0, 10, "a"), Cue(10, 300, "fala longa"), Cue(300, 310, "b")]
    ws = segment_by_time(long, 120, 30)
    assert any(w.text == "fala longa" for w in ws) or any("fala longa" in w.text for w in ws)
    assert all(w.end - w.start <= 120 or w.text.count(" ") < 3 for w in ws)


def test_token_windows_respect_the_budget() -> None:
    cs = [Cue(i, i + 1, "um dois três") for i in range(50)]
    ws = segment_by_tokens(cs, lambda t: len(t.split()), window_tokens=30, overlap_tokens=6)
    assert all(len(w.text.split()) <= 30 for w in ws)
    assert len(ws) > 5
    assert ws[1].start < ws[0].end  # consecutive windows overlap


def test_no_window_is_a_slice_of_the_one_before_a_long_cue() -> None:
    """Before a cue too long to join (minutes of music in one Whisper segment), the windows
    used to shrink one cue at a time, all ending at the same cue: a few seconds and a few
    words, which then ranked first for short questions."""
    talk = [Cue(i * 4.0, i * 4.0 + 3.5, f"frase {i}") for i in range(8)]  # 0-31.5 s
    music = Cue(32.0, 200.0, "música")
    after = [Cue(200.0 + i * 10, 209.0 + i * 10, f"depois {i}") for i in range(20)]
    ws = segment_by_time([*talk, music, *after], 120, 30)
    for a, b in zip(ws, ws[1:], strict=False):
        assert b.end > a.end, (a, b)  # each window reaches past the one before it
    assert [w.text for w in ws if w.end == talk[-1].end] == [
        " ".join(c.text for c in talk)]  # the talk before the music is one window
    every = " ".join(w.text for w in ws)
    assert all(c.text in every for c in [*talk, music, *after])
