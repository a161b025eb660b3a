// Student page: asks /ask/stream and renders the answer as it streams, then the citations.
// $, ts and el come from dom.js.
const form = $("ask-form"), q = $("question"), statusEl = $("status"), count = $("count");
const answerBox = $("answer-box"), answerEl = $("answer"), citesEl = $("citations");
const segBox = $("segments-box"), segsEl = $("segments");
const momBox = $("moments-box"), momEl = $("moments"), searchedEl = $("searched");

q.addEventListener("input", () => { count.textContent = q.value.length + " / 2000"; });
q.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) form.requestSubmit();
});

function renderSegments(hits) {
  segsEl.replaceChildren();
  hits.forEach((h, i) => {
    const at = h.answer_start == null ? h.start : h.answer_start;
    const video = Player.momentLink(h.lecture_id, h.url, at, {},
      `${h.title || h.lecture_id} — ${ts(h.start)}–${ts(h.end)}`);
    // the moment's few sentences; the whole window on demand
    const text = el("details", { className: "text" },
      el("summary", {}, excerpt(h.text, 220)), el("p", {}, h.text));
    segsEl.append(el("li", { id: "seg-" + (i + 1) }, video,
      el("span", { className: "muted" }, ` (score ${h.score.toFixed(3)})`), text));
  });
  segBox.hidden = hits.length === 0;
}

const excerpt = (text, n) => (text.length <= n ? text
  : text.slice(0, text.lastIndexOf(" ", n) > n / 2 ? text.lastIndexOf(" ", n) : n) + "…");

// The best moments of the question being answered: a citation [n] without a placed sentence
// opens where its moment answers.
let shownMoments = [];

function renderMoments(moments) {
  // the best moments, before the answer: title, time (link at the answering second), snippet
  shownMoments = moments;
  momEl.replaceChildren(...moments.map((m, i) => {
    const label = `${m.title || m.lecture_id} — ${ts(m.answer_start)}`;
    return el("li", { id: "moment-" + (i + 1) },
      Player.momentLink(m.lecture_id, m.url, m.answer_start, { className: "moment" }, label),
      el("div", { className: "snippet" }, m.snippet));
  }));
  momBox.hidden = moments.length === 0;
}

function renderSearched(query) {
  // what was searched when it is not the question as typed: its translation, or the question
  // without the greeting and thanks around it
  searchedEl.textContent = query ? "Pesquisado como: " + query : "";
  searchedEl.hidden = !query;
}

function withCites(text, byN, at) {
  // [n] markers become links to the cited second of the video: where the sentence's own
  // words are said when the server placed them (at), else where the passage answers
  const out = [];
  let last = 0;
  for (const m of text.matchAll(/\[(\d+)\]/g)) {
    out.push(text.slice(last, m.index));
    const n = Number(m[1]);
    const c = byN[n];
    const own = at && at.n === n && at.at != null;
    out.push(c
      ? Player.momentLink(c.lecture_id, (own && at.url) || c.url, own ? at.at : citedAt(c, n),
          { className: "cite", title: `${c.title} ${ts(c.start)}–${ts(c.end)}` }, m[0])
      : m[0]);
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  return out;
}

function citedAt(c, n) {
  // where citation c opens: its link's t=, else its moment's answering second, else its start
  const u = webUrl(c.url || "");
  const t = u && (u.searchParams.get("t") || (u.hash.match(/t=([\d.]+)/) || [])[1]);
  if (t) return Number(t);
  const m = shownMoments[n - 1];
  return m && m.lecture_id === c.lecture_id ? m.answer_start : c.start;
}

function renderAnswer(text, citations, sentences) {
  const byN = {};
  citations.forEach((c) => c.n.forEach((n) => { byN[n] = c; }));
  answerEl.replaceChildren();
  // each checked sentence's marker opens where its words are said; sentences the cited
  // passage does not confirm are marked
  let rest = text;
  for (const x of sentences || []) {
    const i = rest.indexOf(x.text);
    if (i < 0) continue;
    answerEl.append(...withCites(rest.slice(0, i), byN));
    const own = withCites(x.text, byN, x.url || x.at != null
      ? { n: (x.cites || [])[0], url: x.url, at: x.at } : null);
    if (x.supported === false) {
      answerEl.append(el("mark", { className: "unsupported",
        title: "Esta frase não foi confirmada pelo trecho citado" }, ...own),
        el("span", { className: "flag" }, " (não confirmada)"));
    } else {
      answerEl.append(...own);
    }
    rest = rest.slice(i + x.text.length);
  }
  answerEl.append(...withCites(rest, byN));
  citesEl.replaceChildren();
  citations.forEach((c) => {
    const label = `${c.title || c.lecture_id}, ${ts(c.start)}–${ts(c.end)}`;
    citesEl.append(el("li", {}, `[${c.n.join(", ")}] `,
      Player.momentLink(c.lecture_id, c.url, citedAt(c, c.n[0]), { className: "ref" }, label)));
  });
}

// The question being answered; a new one asked meanwhile replaces it: the old stream is
// aborted (the server stops its work when the connection closes) and paints nothing more.
let running = null;

form.addEventListener("submit", async (e) => {
  e.preventDefault();
  const question = q.value.trim();
  if (!question) { statusEl.textContent = "Escreva uma pergunta."; return; }
  if (running) running.abort();
  const mine = running = new AbortController();
  const current = () => mine === running;
  statusEl.className = "";
  statusEl.textContent = "Buscando nos trechos das aulas…";
  answerEl.textContent = ""; citesEl.replaceChildren(); answerBox.hidden = true;
  momEl.replaceChildren(); momBox.hidden = true; renderSearched(null);
  let text = "";
  try {
    const res = await fetch("/ask/stream", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ question, k: 8 }), signal: mine.signal,
    });
    if (!res.ok) {
      const err = await res.json().catch(() => ({}));
      throw new Error(err.detail || ("HTTP " + res.status));
    }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done || !current()) break;
      buf += dec.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i); buf = buf.slice(i + 2);
        let ev = "message", data = "";
        block.split("\n").forEach((line) => {
          if (line.startsWith("event:")) ev = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
        });
        if (!data) continue;
        const payload = JSON.parse(data);
        if (ev === "segments") {
          renderSegments(payload);
          statusEl.textContent = "Procurando o momento que responde…";
        } else if (ev === "moments") {
          renderMoments(payload.moments || []);
          renderSearched(payload.search_query);
          if (payload.covered === false) {
            statusEl.textContent = "As aulas não parecem cobrir esta pergunta.";
          } else {
            statusEl.textContent = "Escrevendo a resposta…";
            answerBox.hidden = false;
          }
        } else if (ev === "delta") {
          answerBox.hidden = false;
          text += payload; answerEl.textContent = text;
        } else if (ev === "done") {
          if (payload.moments) renderMoments(payload.moments);
          renderSearched(payload.search_query);
          if (payload.answer == null) {
            answerBox.hidden = true;
            statusEl.className = "note";
            statusEl.textContent = payload.note || "Não foi possível escrever a resposta.";
          } else if (payload.covered === false) {
            answerBox.hidden = true;
            statusEl.textContent = payload.answer;
          } else {
            answerBox.hidden = false;
            renderAnswer(payload.answer, payload.citations || [], payload.sentences);
            statusEl.textContent = "";
          }
        } else if (ev === "error") {
          renderSegments(payload.segments || []);
          throw new Error(payload.error || "falha ao gerar a resposta");
        }
      }
    }
  } catch (err) {
    if (!current()) return;  // replaced by a newer question: nothing of this one is shown
    statusEl.className = "error";
    statusEl.textContent = "Não foi possível responder: " + err.message +
      ". Os trechos encontrados estão abaixo.";
  } finally {
    if (current()) running = null;
  }
});
