from corpus.models import Cue
from corpus.segment import (
    MIN_WINDOW_WORDS,
    SPOKEN_SECONDS_PER_WORD,
    believable_ends,
    segment_by_time,
    segment_by_tokens,
)


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


def test_a_sentence_stretched_to_the_end_of_a_stream_ends_when_its_words_do() -> None:
    """3b1b-pt's Lockdown Math captions end with one sentence lasting to the end of the
    stream (74 words from 18:47 to 1:22:10, the rest untranslated): its window spanned an hour,
    and a citation of it linked the hour."""
    talk = [Cue(i * 5.0, i * 5.0 + 4.5, "uma frase com oito palavras de fala normal")
            for i in range(40)]  # 0-199.5 s, 1.6 words a second
    last = Cue(200.0, 3600.0, " ".join(["palavra"] * 20))
    kept, stretched = believable_ends([*talk, last])
    assert stretched == [last]
    assert kept[:-1] == talk  # cues at a speaking pace are left as they are
    assert kept[-1].start == 200.0 and kept[-1].end == 200.0 + 20 * SPOKEN_SECONDS_PER_WORD
    windows = segment_by_time(kept, 120, 30, MIN_WINDOW_WORDS)
    assert max(w.end for w in windows) == kept[-1].end
    assert all(w.end - w.start <= 120 for w in windows)


def test_a_slow_cue_that_is_still_speech_is_kept() -> None:
    """A long Whisper segment at a slow pace (40 s, 25 words) is believable."""
    cue = Cue(10.0, 50.0, " ".join(["devagar"] * 25))
    assert believable_ends([cue]) == ([cue], [])


def test_a_greeting_alone_between_minutes_of_silence_joins_the_talk_after_it() -> None:
    """A greeting before ten minutes of music was a window of its own: 7 words that ranked
    first for questions they do not answer ('🎵Música🎵 Bem-vindo de volta ao Lockdown
    Math.')."""
    greeting = Cue(0.0, 5.0, "🎵Música🎵 Bem-vindo de volta ao Lockdown Math.")
    talk = [Cue(600.0 + i * 5, 604.5 + i * 5, "hoje vamos falar sobre logaritmos e bases")
            for i in range(60)]
    plain = segment_by_time([greeting, *talk], 120, 30)
    assert plain[0].text == greeting.text  # alone, without the join
    windows = segment_by_time([greeting, *talk], 120, 30, MIN_WINDOW_WORDS)
    assert all(len(w.text.split()) >= MIN_WINDOW_WORDS for w in windows)
    assert windows[0].start == 0.0 and windows[0].text.startswith(greeting.text)
    assert windows[0].text.count(greeting.text) == 1
    assert windows[1:] == plain[2:]  # the windows after the join are as before
    every = " ".join(w.text for w in windows)
    assert every.count("Bem-vindo") == 1


def test_a_short_last_window_joins_the_one_before_without_repeating_its_cues() -> None:
    talk = [Cue(i * 10.0, i * 10.0 + 9, f"frase numero {i} com sete palavras aqui")
            for i in range(12)]  # 0-119 s
    tail = Cue(400.0, 403.0, "obrigado")
    windows = segment_by_time([*talk, tail], 120, 30, MIN_WINDOW_WORDS)
    assert windows[-1].end == 403.0
    assert all(len(w.text.split()) >= MIN_WINDOW_WORDS for w in windows)
    every = " ".join(w.text for w in windows)
    assert every.count("obrigado") == 1 and every.count("frase numero 0 ") == 1
