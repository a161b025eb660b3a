"""The cited moment played on the student page, in headless Chromium: a recording Aula serves
seeks to the cited second in place; a YouTube lecture opens in the embed at that second."""

from __future__ import annotations

import shutil

import pytest

from tests.app.test_media import llm, site  # noqa: F401  (the served course)
from tests.app.test_page import browser, wait_for  # noqa: F401

pytestmark = [
    pytest.mark.slow, pytest.mark.browser,
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium not installed"),
]


def ask(chromium, base: str, question: str):  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1000, "height": 900})
    page.route("https://www.youtube-nocookie.com/**", lambda route: route.fulfill(
        status=200, content_type="text/html", body="<title>embed</title>ok"))
    page.goto(base + "/")
    page.fill("#question", question)
    page.click("#ask-button")
    page.wait_for_selector("#citations li a.ref", timeout=120_000)
    return page


def test_a_citation_plays_the_recording_from_the_cited_second(
    site: str, browser, recorded_course,  # type: ignore[no-untyped-def]  # noqa: F811
) -> None:
    page = ask(browser, site, "O que a função sigmoide faz?")
    cite = page.locator("#answer a.cite").first
    assert cite.get_attribute("data-lecture") == "aula-redes"
    cited = float(cite.get_attribute("data-at") or "nan")
    assert abs(cited - recorded_course.video.starts[1]) <= 1.5
    assert "/media/file/aula-redes#t=" in (cite.get_attribute("href") or "")
    cite.click()
    page.wait_for_selector("#player-box video")
    wait_for(page, "document.querySelector('#player-box video').readyState >= 1")
    at = page.evaluate("document.querySelector('#player-box video').currentTime")
    assert abs(at - cited) <= 1.0, (at, cited)
    # the sentence being cited is highlighted beside the player
    wait_for(page, "document.querySelector('#player-box .player-cues li.now') !== null")
    assert "zero" in page.inner_text("#player-box .player-cues li.now").lower()
    # another citation of the same lecture seeks the same player
    page.evaluate("document.querySelector('#player-box video').dataset.first = 'yes'")
    ref = page.locator("#citations a.ref[data-lecture='aula-redes']").first
    again = float(ref.get_attribute("data-at") or "nan")
    ref.click()
    wait_for(page, f"Math.abs(document.querySelector('#player-box video').currentTime - {again})"
                   " <= 1.0")
    assert page.evaluate("document.querySelector('#player-box video').dataset.first") == "yes"
    assert page.locator("#player-box video").count() == 1
    page.close()


def test_a_youtube_lecture_opens_in_the_embed_at_the_second(
    site: str, browser, recorded_course,  # type: ignore[no-untyped-def]  # noqa: F811
) -> None:
    page = ask(browser, site, "O que é a derivada de uma função?")
    link = page.locator("#moments a.moment[data-lecture='derivadas']").first
    at = float(link.get_attribute("data-at") or "nan")
    assert (link.get_attribute("href") or "").startswith(recorded_course.YOUTUBE)
    link.click()
    page.wait_for_selector("#player-box iframe")
    src = page.get_attribute("#player-box iframe", "src") or ""
    assert src == (f"https://www.youtube-nocookie.com/embed/aulaDeriv01?start={int(at)}"
                   "&autoplay=1")
    assert page.locator("#player-box video, #player-box audio").count() == 0
    page.close()
