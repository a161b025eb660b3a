"""The cited moment played on the review page, in headless Chromium, by the student page's
player: an instructor clicks a cited passage of a recording Aula serves and it plays in place
from the cited second; a YouTube lecture's passage opens in the embed at its second."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.db.session import open_database
from app.main import create_app
from app.security import CSP
from tests.app.test_media import llm  # noqa: F401  (the fake LLM answering from the recording)
from tests.app.test_page import browser, wait_for  # noqa: F401
from tests.review.conftest import add_instructor
from tests.review.test_page import login
from tests.servers import ServedApp

pytestmark = [
    pytest.mark.slow, pytest.mark.browser,
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium not installed"),
]


class _Site:
    def __init__(self, url: str) -> None:
        self.url = url


@pytest.fixture(scope="module")
def site(media_index, recorded_course, llm, tmp_path_factory) -> Iterator[_Site]:  # type: ignore[no-untyped-def]  # noqa: F811
    """The recorded course served with its recordings and a database holding one student's
    question about the video, answered with a citation of it."""
    url = f"sqlite:///{tmp_path_factory.mktemp('review-media')}/aula.db"
    db = open_database(url)
    add_instructor(db)
    settings = Settings(index_dir=media_index[0].root, llm_base_url=llm.base_url,
                        llm_model="fake-model", media_dirs=str(recorded_course.root),
                        database_url=url, ask_rate_per_minute=0)
    try:
        with ServedApp(create_app(settings)) as srv:
            r = httpx.post(srv.url + "/ask", json={"question": "O que a função sigmoide faz?",
                                                   "k": 10}, timeout=120)
            assert r.status_code == 200, r.text
            assert r.json()["citations"][0]["lecture_id"] == "aula-redes"
            yield _Site(srv.url)
    finally:
        db.close()


def test_a_cited_passage_plays_in_place_from_the_cited_second(
    site: _Site, browser, recorded_course, tmp_path: Path,  # type: ignore[no-untyped-def]  # noqa: F811
) -> None:
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.route("https://www.youtube-nocookie.com/**", lambda route: route.fulfill(
        status=200, content_type="text/html", body="<title>embed</title>ok"))
    login(page, site)  # type: ignore[arg-type]
    assert httpx.get(site.url + "/review").headers["content-security-policy"] == CSP
    cite = page.locator("#segments li.cited a.video[data-lecture='aula-redes']").first
    cited = float(cite.get_attribute("data-at") or "nan")
    assert abs(cited - recorded_course.video.starts[1]) <= 1.5
    assert "/media/file/aula-redes#t=" in (cite.get_attribute("href") or "")
    cite.click()
    page.wait_for_selector("#player-box video")
    wait_for(page, "document.querySelector('#player-box video').readyState >= 1")
    at = page.evaluate("document.querySelector('#player-box video').currentTime")
    assert abs(at - cited) <= 1.0, (at, cited)
    wait_for(page, "document.querySelector('#player-box .player-cues li.now') !== null")
    assert "zero" in page.inner_text("#player-box .player-cues li.now").lower()

    # a passage of a YouTube lecture opens in the embed, in the same place
    yt = page.locator("#segments a.video[data-lecture='derivadas']").first
    second = float(yt.get_attribute("data-at") or "nan")
    yt.click()
    page.wait_for_selector("#player-box iframe")
    assert page.get_attribute("#player-box iframe", "src") == (
        f"https://www.youtube-nocookie.com/embed/aulaDeriv01?start={int(second)}&autoplay=1")
    assert page.locator("#player-box video, #player-box audio").count() == 0
    page.close()
