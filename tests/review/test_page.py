"""The review page in headless Chromium against the real server and the fake LLM: an
instructor logs in, annotates three answers from the keyboard on a phone, exports them, and the
export runs through ``aula eval``; a second instructor's stale save shows the conflict; a
student gets neither the page nor the API."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest

from app.auth import now as store_now
from app.db import store
from tests.app.test_page import CHROMIUM, FLAGS, wait_for
from tests.eval.test_run_cli import aula
from tests.review.conftest import PASSWORD, QUESTIONS, Site, add_instructor, answer_body

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium not installed"),
]
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def asked(site: Site) -> list[int]:
    """Three questions asked on /ask, as students do; their stored ids."""
    for q in QUESTIONS[:3]:
        r = httpx.post(site.url + "/ask", json={"question": q, "k": 3}, timeout=60)
        assert r.status_code == 200
    with site.db.read() as s:
        rows, _ = store.queue(s, limit=1000)
    return [r["id"] for r in rows if r["question"] in QUESTIONS[:3]]


def login(page, site: Site, name: str = "ana") -> None:  # type: ignore[no-untyped-def]
    page.goto(site.url + "/review")
    page.fill("#name", name)
    page.fill("#password", PASSWORD)
    page.click("#login-button")
    page.wait_for_selector("#item:not([hidden]), #empty:not([hidden])")


def show_lecture(page, lecture: str, answer_id: int) -> None:  # type: ignore[no-untyped-def]
    """Filter the queue by ``lecture`` and wait until item ``answer_id`` is on screen."""
    page.select_option("#f-lecture", lecture)
    page.click("#apply-filters")
    wait_for(page, f"document.getElementById('item-id').textContent === '{answer_id}'")


def saved(page, label: str) -> None:  # type: ignore[no-untyped-def]
    wait_for(page,
        "(l) => document.getElementById('save-status').textContent.startsWith('Salvo: ' + l)",
        arg=label, timeout=15_000)


def test_instructor_annotates_three_by_keyboard_and_the_export_runs_through_eval(
    site: Site, asked: list[int], browser, sample_index, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    ctx = browser.new_context(viewport=PHONE, accept_downloads=True)
    page = ctx.new_page()
    login(page, site)
    assert page.locator("html").get_attribute("lang") == "pt-BR"
    assert page.locator("#queue li").count() == 3
    assert page.inner_text("#question") == QUESTIONS[0]
    href = page.locator("#segments a.video").first.get_attribute("href") or ""
    assert "t=" in href
    wait_for(page, "document.getElementById('auto-label').textContent !== '—'",
                           timeout=30_000)  # the background judge's label arrives
    page.keyboard.press("1")
    saved(page, "C")
    page.keyboard.press("j")
    wait_for(page, f"document.getElementById('question').textContent === {QUESTIONS[1]!r}")
    page.keyboard.press("2")
    assert page.evaluate("document.activeElement.id") == "comment"  # PC needs a comment
    page.keyboard.type("falta dizer o resultado, 2x")
    page.keyboard.press("Enter")
    saved(page, "PC")
    page.keyboard.press("j")
    wait_for(page, f"document.getElementById('question').textContent === {QUESTIONS[2]!r}")
    page.keyboard.press("3")
    page.keyboard.type("confunde com o momento")
    page.keyboard.press("Enter")
    saved(page, "I")
    page.keyboard.press("k")  # back to the second: its saved label is shown
    wait_for(page, f"document.getElementById('question').textContent === {QUESTIONS[1]!r}")
    assert page.locator('#labels button[aria-pressed="true"]').inner_text().startswith("PC")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    with page.expect_download() as dl:
        page.click("#export-csv")
    exported = tmp_path / "anotacoes.csv"
    dl.value.save_as(exported)
    rows = pd.read_csv(exported, dtype=str, keep_default_na=False)
    assert rows["question"].tolist() == QUESTIONS[:3]
    assert rows["manual"].tolist() == ["C", "PC", "I"]
    assert rows["comment"].tolist()[1:] == ["falta dizer o resultado, 2x", "confunde com o momento"]
    ctx.close()

    before = len(site.llm.chat_requests)
    out = tmp_path / "eval"
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": site.llm.base_url,
           "AULA_LLM_MODEL": "fake-model"}
    proc = aula(["eval", str(exported), "--out", str(out), "--json"], env)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    summary = json.loads(stdout)
    assert summary["agreement"]["automated"]["n"] == 3
    asked_llm = site.llm.chat_requests[before:]
    # per item: relevance, coverage, and its one claim read two ways; no answer generated again
    assert len(asked_llm) == 4 * 3
    assert all(any(who in r["messages"][0]["content"] for who in
                   ("grader", "verificador de fatos", "avalia respostas"))
               for r in asked_llm)
    items = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
    assert sorted(i["manual"] for i in items) == ["C", "I", "PC"]


def test_a_stale_save_shows_the_conflict_and_can_be_resaved(
    site: Site, asked: list[int], browser  # type: ignore[no-untyped-def]
) -> None:
    add_instructor(site.db, "bruno")
    first, second = browser.new_context(viewport=PHONE), browser.new_context()
    a, b = first.new_page(), second.new_page()
    for page, name in ((a, "ana"), (b, "bruno")):
        login(page, site, name)
        page.uncheck("#f-unreviewed")
        page.click("#apply-filters")
        wait_for(page,
            f"document.getElementById('item-id').textContent === '{asked[0]}'")
    a.keyboard.press("3")
    a.keyboard.type("errada")
    a.keyboard.press("Enter")
    saved(a, "I")
    b.keyboard.press("2")
    b.keyboard.type("quase")
    b.keyboard.press("Enter")
    b.wait_for_selector("#conflict:not([hidden])")
    text = b.inner_text("#conflict-text")
    assert "ana" in text and "errada" in text and "quase" in text
    with site.db.read() as s:
        assert store.get_item(s, asked[0])["manual"] == "I"  # nothing overwritten unseen
    b.click("#conflict-mine")
    saved(b, "PC")
    with site.db.read() as s:
        it = store.get_item(s, asked[0])
        hist = store.history(s, asked[0])
    assert (it["manual"], it["annotated_by"]) == ("PC", "bruno")
    assert [(h["user"], h["old_label"], h["new_label"]) for h in hist[-2:]] == [
        ("ana", "C", "I"), ("bruno", "I", "PC")]
    first.close()
    second.close()


def test_a_student_gets_no_review_page_and_no_api(site: Site, asked: list[int], browser) -> None:  # type: ignore[no-untyped-def]
    ctx = browser.new_context(viewport=PHONE)
    page = ctx.new_page()
    page.goto(site.url + "/")  # the student page works without an account
    resp = page.goto(site.url + "/review")
    assert resp is not None and resp.status == 401
    assert page.locator("#login-form").is_visible()
    assert QUESTIONS[0] not in page.content()
    codes = page.evaluate("""async (id) => [
        (await fetch('/api/review/items')).status,
        (await fetch('/api/review/items/' + id)).status,
        (await fetch('/api/review/items/' + id + '/annotation', {method: 'PUT',
          headers: {'Content-Type': 'application/json'},
          body: JSON.stringify({label: 'C', version: 1})})).status,
    ]""", asked[0])
    assert codes == [401, 401, 401]
    page.fill("#name", "ana")
    page.fill("#password", "errada")
    page.click("#login-button")
    wait_for(page, "document.getElementById('login-status').textContent.includes('incorretos')")
    ctx.close()


BAD_LINKS = {
    "Esta aula tem um link sem esquema?": "youtube.com/watch?v=semesquema",
    "E esta tem um link javascript?": "javascript:alert(document.cookie)",
}


def test_a_bad_video_link_never_mixes_one_item_with_another(site: Site, browser) -> None:  # type: ignore[no-untyped-def]
    lecture = "links-quebrados"
    with site.db.write() as s:
        before = store.save_answer(s, answer_body("Pergunta do item vizinho?", lecture),
                                   store_now())
        store.annotate(s, before, label="I", comment="anotação do vizinho", version=1,
                       user="ana", now=store_now())
        bad = []
        for question, url in BAD_LINKS.items():
            body = answer_body(question, lecture)
            for part in (*body["segments"], *body["citations"]):
                part["url"] = url
            bad.append(store.save_answer(s, body, store_now()))
    page = browser.new_page(viewport=PHONE)
    login(page, site)
    page.uncheck("#f-unreviewed")
    show_lecture(page, lecture, before)
    assert page.input_value("#comment") == "anotação do vizinho"
    for answer_id, question in zip(bad, BAD_LINKS, strict=True):
        page.keyboard.press("j")
        wait_for(page, f"document.getElementById('item-id').textContent === '{answer_id}'")
        # everything on screen is this item's: its question, its segments, its annotation
        assert page.inner_text("#question") == question
        assert question in page.inner_text("#segments")
        assert "vizinho" not in page.inner_text("#segments")
        assert page.input_value("#comment") == ""
        assert "Sem anotação" in page.inner_text("#current")
        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        assert not [h for h in hrefs if not h.startswith(("http://", "https://"))], hrefs
        page.keyboard.press("1")
        saved(page, "C")
    with site.db.read() as s:
        assert [store.get_item(s, i)["manual"] for i in (before, *bad)] == ["I", "C", "C"]
    page.close()


def test_the_instructor_sees_what_was_searched_for_a_question(site: Site, browser) -> None:  # type: ignore[no-untyped-def]
    typed = "hey, what does the ReLU return? thanks!"
    with site.db.write() as s:
        plain = store.save_answer(s, {**answer_body("O que a ReLU devolve?", "como-digitada"),
                                      "strategy": "gated", "search_query": None}, store_now())
        translated = store.save_answer(
            s, {**answer_body(typed, "traduzida"), "strategy": "gated",
                "search_query": "O que a ReLU devolve?"}, store_now())
    page = browser.new_page(viewport=PHONE)
    login(page, site)
    for lecture, answer_id in (("como-digitada", plain), ("traduzida", translated)):
        show_lecture(page, lecture, answer_id)
        # as typed: nothing to add; translated: the instructor sees what was searched
        if answer_id == plain:
            assert not page.locator("#searched").is_visible()
        else:
            assert page.inner_text("#question") == typed
            assert page.locator("#searched").is_visible()
            assert page.inner_text("#searched") == "Pesquisado como: O que a ReLU devolve?"
    page.close()


def test_the_instructor_sees_why_an_answer_was_declined(site: Site, browser) -> None:  # type: ignore[no-untyped-def]
    why = "course question P=0.91 >= 0.68"
    with site.db.write() as s:
        declined = store.save_answer(
            s, {**answer_body("qnd sai a nota da p2?", "curso"), "covered": False,
                "confidence": 0.91, "strategy": "gated", "reason": why}, store_now())
        answered = store.save_answer(
            s, {**answer_body("O que a ReLU devolve?", "respondida"), "confidence": 0.8,
                "strategy": "gated", "reason": "P(covered)=0.93 (top_score=0.91, term_cov=1.00)"},
            store_now())
    page = browser.new_page(viewport=PHONE)
    login(page, site)
    for lecture, answer_id in (("curso", declined), ("respondida", answered)):
        show_lecture(page, lecture, answer_id)
        if answer_id == declined:
            assert page.inner_text("#auto-confidence") == "91% (recusou: pergunta sobre o curso)"
            assert page.inner_text("#auto-decision") == why
        else:
            assert page.inner_text("#auto-confidence") == "80%"
            assert page.inner_text("#auto-decision").startswith("P(covered)=0.93")
    page.close()


def test_the_instructor_sees_how_sure_the_label_model_was(site: Site, browser) -> None:  # type: ignore[no-untyped-def]
    with site.db.write() as s:
        by_model = store.save_answer(s, answer_body("O que a ReLU devolve?", "rotulo-modelo"),
                                     store_now())
        by_rule = store.save_answer(s, answer_body("O que a ReLU devolve?", "rotulo-regra"),
                                    store_now())
        for answer_id, signals in ((by_model, {"label_by": "model", "label_confidence": 0.716}),
                                   (by_rule, {"label_by": "thresholds", "label_confidence": None})):
            store.set_automated(s, answer_id, ar_score=2, label="PC", reasoning="r",
                                model="fake-model", error=None, now=store_now(), signals=signals)
    page = browser.new_page(viewport=PHONE)
    login(page, site)
    show_lecture(page, "rotulo-modelo", by_model)
    assert page.inner_text("#auto-label") == "PC (confiança do modelo de rótulos: 72%)"
    show_lecture(page, "rotulo-regra", by_rule)
    assert page.inner_text("#auto-label") == "PC"  # a rule's label has no probability
    page.close()


def test_the_instructor_reads_the_least_sure_labels_first(site: Site, browser) -> None:  # type: ignore[no-untyped-def]
    with site.db.write() as s:
        ids = [store.save_answer(s, answer_body(f"Pergunta {n}", "ordem-seguranca"), store_now())
               for n in range(3)]
        for answer_id, sure in zip(ids, (0.93, None, 0.41), strict=True):
            store.set_automated(s, answer_id, ar_score=2, label="PC", reasoning="r",
                                model="fake-model", error=None, now=store_now(),
                                signals={"label_confidence": sure})
    page = browser.new_page(viewport=PHONE)
    login(page, site)
    show_lecture(page, "ordem-seguranca", ids[0])  # oldest first by default
    page.select_option("#f-order", "least_sure")
    page.click("#apply-filters")
    wait_for(page, f"document.getElementById('item-id').textContent === '{ids[2]}'")
    rows = page.eval_on_selector_all("#queue li", "els => els.map(e => e.textContent)")
    assert [r.split()[0] for r in rows] == [f"#{ids[2]}", f"#{ids[0]}", f"#{ids[1]}"]
    assert rows[0].endswith("41%") and rows[1].endswith("93%") and not rows[2].endswith("%")
    page.close()


def test_the_instructor_sees_which_citations_the_post_check_moved(site: Site, browser) -> None:  # type: ignore[no-untyped-def]
    body = answer_body("Qual função de ativação é mais usada?", "citacao-movida")
    body["strategy"] = "gated"
    body["sentences"] = [
        {"text": "A mais usada hoje é a ReLU [1].", "cites": [1], "p": 0.99, "supported": True,
         "moved_from": [2]},
        {"text": "Ela foi inventada na lua [2].", "cites": [2], "p": 0.1, "supported": False,
         "moved_from": None},
        {"text": "Ela zera os negativos [1].", "cites": [1], "p": 0.97, "supported": True,
         "moved_from": []},  # the generator cited nothing there
    ]
    with site.db.write() as s:
        answer_id = store.save_answer(s, body, store_now())
    page = browser.new_page(viewport=PHONE)
    login(page, site)
    show_lecture(page, "citacao-movida", answer_id)
    wait_for(page, "document.getElementById('auto-unsupported').textContent !== '—'")
    assert page.inner_text("#auto-moved") == ("“A mais usada hoje é a ReLU [1].”: [2] → [1] · "
                                              "“Ela zera os negativos [1].”: sem citação → [1]")
    assert page.inner_text("#auto-unsupported") == "“Ela foi inventada na lua [2].” (P=0.10)"
    page.close()


class Held:
    """Requests matching ``pattern`` held back until ``stop``: the network made slow on
    purpose, so that answers arrive after the instructor's next key."""

    def __init__(self, page, pattern: str) -> None:  # type: ignore[no-untyped-def]
        self.page, self.pattern, self.routes = page, pattern, []  # type: ignore[var-annotated]
        page.route(pattern, lambda route: self.routes.append(route))

    def until(self, ending: str) -> None:
        """Wait until a held request's URL ends with ``ending``."""
        # a deadline, not a count of short waits: on a loaded machine each wait runs long
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(r.request.url.endswith(ending) for r in self.routes):
                return
            self.page.wait_for_timeout(50)
        held = [r.request.url for r in self.routes]
        page_state = self.page.evaluate(
            "[document.activeElement && document.activeElement.tagName, state.loading, "
            "state.want, state.index, state.queue.length, state.label, "
            "document.getElementById('save-status').textContent]")
        raise TimeoutError(f"no request to …{ending} was held (held: {held}; focus, loading, "
                           f"want, index, queue, label, status: {page_state})")

    def stop(self) -> None:
        """Let the held requests through, the newest first (answers out of order), and hold
        no more."""
        for route in reversed(self.routes):
            route.continue_()
        self.routes.clear()
        self.page.unroute(self.pattern)


def test_fast_keys_never_show_a_stale_item(site: Site, browser) -> None:  # type: ignore[no-untyped-def]
    with site.db.write() as s:
        queue = [store.save_answer(s, answer_body(f"Pergunta rápida {n}?", "teclas-rapidas"),
                                   store_now()) for n in range(4)]
        other = [store.save_answer(s, answer_body(f"Outra aula {n}?", "teclas-outra"),
                                   store_now()) for n in range(2)]
    page = browser.new_page(viewport=PHONE)
    login(page, site)
    page.select_option("#f-lecture", "teclas-rapidas")
    page.click("#apply-filters")
    wait_for(page, "document.querySelectorAll('#queue li').length === 4")
    wait_for(page, f"document.getElementById('item-id').textContent === '{queue[0]}'")
    # the filtered queue's first item is the one shown (not the first load's), and the keys go
    # to the page, not to the filter form the mouse last touched
    wait_for(page, "state.want === -1 && !state.loading && state.index === 0 && "
                   f"state.item && state.item.id === {queue[0]}")
    page.evaluate("document.activeElement && document.activeElement.blur()")

    def on_screen(answer_id: int, question: str) -> None:
        wait_for(page, f"document.getElementById('item-id').textContent === '{answer_id}'")
        page.wait_for_timeout(300)  # any late answer has arrived by now, and changed nothing
        assert page.inner_text("#item-id") == str(answer_id)
        assert page.inner_text("#question") == question

    # j j before the first item arrives: two items on, whatever order the answers come in
    items = Held(page, "**/api/review/items/*")
    page.keyboard.press("j")
    page.keyboard.press("j")
    items.until(f"/{queue[2]}")
    items.stop()
    on_screen(queue[2], "Pergunta rápida 2?")
    assert page.inner_text("#position").startswith("3 de 4")

    # C, then j before the save is answered: the save lands, the next item stays on screen
    saves = Held(page, "**/annotation")
    page.keyboard.press("1")
    saves.until(f"/{queue[2]}/annotation")
    page.keyboard.press("j")
    wait_for(page, f"document.getElementById('item-id').textContent === '{queue[3]}'")
    saves.stop()
    wait_for(page, "document.getElementById('save-status').textContent.includes('salvo: C')")
    on_screen(queue[3], "Pergunta rápida 3?")
    assert "Sem anotação" in page.inner_text("#current")
    with site.db.read() as s:
        assert store.get_item(s, queue[2])["manual"] == "C"

    # another filter, then k before its queue arrives: the new queue's first item, not the old
    lists = Held(page, "**/api/review/items?*")
    items = Held(page, "**/api/review/items/*")
    page.select_option("#f-lecture", "teclas-outra")
    page.click("#apply-filters")
    lists.until("lecture=teclas-outra")
    page.keyboard.press("k")
    page.wait_for_timeout(200)
    lists.stop()
    items.until(f"/{other[0]}")
    items.stop()
    on_screen(other[0], "Outra aula 0?")
    assert page.inner_text("#position").startswith("1 de 2")
    page.close()
