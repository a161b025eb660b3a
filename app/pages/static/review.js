// Instructor review page: the filtered queue, one item at a time, C/PC/I and a comment set
// from the keyboard, saved with the item's version (409 shows the other instructor's save).
// $, ts and el come from dom.js.
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const state = { queue: [], index: -1, item: null, label: null, conflict: null,
  want: -1, loading: false };
// Each queue load and each move gets a number; an answer that arrives after a newer request
// was made is dropped, so fast keys (j j, 1 then j, a filter then j) never show a stale item.
let loadSeq = 0, showSeq = 0;

const badge = (label, title) =>
  el("span", { className: "badge " + (label || ""), title }, label || "—");
const when = (iso) => iso ? new Date(iso).toLocaleString("pt-BR") : "";

async function api(method, path, body) {
  const opts = { method, headers: { "X-CSRF-Token": csrf } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  let r;
  try { r = await fetch(path, opts); } catch (err) { return { status: 0, body: {} }; }
  const data = await r.json().catch(() => ({}));
  return { status: r.status, body: data };
}

function setStatus(text, error = false) {
  $("save-status").textContent = text;
  $("save-status").className = error ? "error" : "";
}

function failure(res) {
  if (res.status === 0) return "Sem conexão com o servidor; nada foi salvo.";
  if (res.status === 401) return "Sua sessão expirou: entre de novo (recarregue a página).";
  if (res.status === 503) return "Banco de dados indisponível agora; nada foi salvo. Tente de novo.";
  return res.body.detail || "Erro " + res.status;
}

// --- queue --------------------------------------------------------------------------------
function filterQuery() {
  const p = new URLSearchParams();
  if ($("f-unreviewed").checked) p.set("unreviewed", "1");
  for (const [id, key] of [["f-manual", "manual"], ["f-automated", "automated"],
    ["f-ar-min", "ar_min"], ["f-ar-max", "ar_max"], ["f-lecture", "lecture"],
    ["f-from", "from"], ["f-to", "to"], ["f-order", "order"]]) {
    if ($(id).value) p.set(key, $(id).value);
  }
  return p.toString();
}

async function loadQueue(keepId) {
  const mine = ++loadSeq;
  state.loading = true;  // moves wait for the new queue
  const res = await api("GET", "/api/review/items?limit=1000&" + filterQuery());
  if (mine !== loadSeq) return;  // a newer filter was applied meanwhile: its answer counts
  state.loading = false;
  if (res.status !== 200) { $("queue-count").textContent = failure(res); return; }
  state.queue = res.body.items;
  $("queue-count").textContent = `(${res.body.total})`;
  const sel = $("f-lecture"), chosen = sel.value;
  sel.replaceChildren(el("option", { value: "" }, "todas"),
    ...res.body.lectures.map((l) => el("option", { value: l, selected: l === chosen }, l)));
  renderQueue();
  const at = state.queue.findIndex((q) => q.id === keepId);
  if (state.queue.length === 0) { $("item").hidden = true; $("empty").hidden = false; return; }
  $("empty").hidden = true;
  await show(at >= 0 ? at : 0);
}

function renderQueue() {
  $("queue").replaceChildren(...state.queue.map((q, i) => {
    const li = el("li", { className: i === state.index ? "current" : "" },
      `#${q.id} ${q.question.slice(0, 80)}`, badge(q.manual, "manual"),
      q.automated ? badge(q.automated, "automatizada") : "",
      q.automated && q.label_confidence != null
        ? el("span", { className: "muted sure", title: "confiança do modelo de rótulos" },
          ` ${Math.round(q.label_confidence * 100)}%`) : "");
    li.dataset.id = q.id;
    li.addEventListener("click", () => show(i));
    return li;
  }));
}

// --- one item -----------------------------------------------------------------------------
async function show(i) {
  if (i < 0 || i >= state.queue.length) return;
  const mine = ++showSeq, queue = state.queue;
  state.want = i;
  const res = await api("GET", "/api/review/items/" + queue[i].id);
  if (mine !== showSeq || queue !== state.queue) return;  // a later move or queue won
  state.want = -1;
  if (res.status !== 200) { setStatus(failure(res), true); return; }
  render(res.body, i);
  renderQueue();
  setStatus("");
}

// j / k step from the item being fetched, so two quick presses move two items
function move(step) {
  if (state.loading) return;
  show((state.want >= 0 ? state.want : state.index) + step);
}

function segmentItems(item) {
  const cited = {};
  (item.citations || []).forEach((c) => (c.n || []).forEach((n) => { cited[n] = true; }));
  return (item.segments || []).map((h, k) => {
    const label = `${h.title || h.lecture_id} — ${ts(h.start)}–${ts(h.end)}`;
    // played in place by the student page's player (player.js), at the cited second
    const link = Player.momentLink(h.lecture_id, h.url, citedAt(item, h, k + 1),
      { className: "video", title: label }, label);
    return el("li", { className: cited[k + 1] ? "cited" : "" }, link,
      el("span", { className: "muted" },
        ` (score ${Number(h.score).toFixed(3)}${cited[k + 1] ? ", citado" : ""})`),
      el("div", { className: "text" }, h.text));
  });
}

function citedAt(item, h, n) {
  // where passage [n] opens: where an answer sentence citing it is said, else where the
  // passage answers (its moment), else where it starts
  const ev = item.evidence || {};
  const said = (ev.sentences || []).find((x) => (x.cites || [])[0] === n && x.at != null);
  if (said) return said.at;
  const m = (ev.moments || []).find((x) => x.corpus_id === h.corpus_id &&
    x.lecture_id === h.lecture_id);
  if (m) return m.answer_start;
  return h.answer_start == null ? h.start : h.answer_start;
}

function render(item, index = state.index) {
  // built before anything on screen changes: an item is shown whole or not at all, never its
  // question over another item's segments and annotation
  const segments = segmentItems(item);
  if (!state.item || state.item.id !== item.id) Player.stop();  // another answer's moment
  state.index = index;
  state.item = item;
  state.label = item.manual;
  state.conflict = null;
  $("conflict").hidden = true;
  $("item").hidden = false;
  $("item-id").textContent = item.id;
  $("item-date").textContent = when(item.created_at);
  $("position").textContent = `${state.index + 1} de ${state.queue.length}`;
  $("question").textContent = item.question;
  const searched = item.evidence && item.evidence.search_query;  // translated or unframed
  $("searched").textContent = searched ? `Pesquisado como: ${searched}` : "";
  $("searched").hidden = !searched;
  $("answer").textContent = item.answer || "—";
  $("segments").replaceChildren(...segments);
  const reason = (item.evidence && item.evidence.reason) || "";
  const course = reason.startsWith("course question");
  $("auto-confidence").textContent = item.confidence == null ? "—"
    : `${Math.round(item.confidence * 100)}%` + (item.covered !== false ? ""
      : course ? " (recusou: pergunta sobre o curso)" : " (recusou: não coberta)");
  $("auto-decision").textContent = reason || "—";
  const sents = (item.evidence && item.evidence.sentences) || [];
  const weak = sents.filter((x) => x.supported === false);
  $("auto-unsupported").textContent = sents.length === 0 ? "—"
    : weak.length === 0 ? `nenhuma (${sents.length} verificadas)`
    : weak.map((x) => `“${x.text}” (P=${Number(x.p).toFixed(2)})`).join(" · ");
  // sentences whose cited passage did not confirm them, moved to the passage that does
  const moved = sents.filter((x) => x.moved_from);
  $("auto-moved").textContent = moved.length === 0 ? "—"
    : moved.map((x) => `“${x.text}”: ${x.moved_from.length ? `[${x.moved_from.join(", ")}]`
      : "sem citação"} → [${x.cites.join(", ")}]`)
      .join(" · ");
  $("auto-ar").textContent = item.ar == null ? "—" : item.ar.toFixed(2);
  const sure = (item.judge_signals || {}).label_confidence;  // the label model's P of its label
  $("auto-label").textContent = !item.automated ? (item.judge_error ? "erro" : "—")
    : item.automated + (sure == null ? "" : ` (confiança do modelo de rótulos: ${Math.round(sure * 100)}%)`);
  $("auto-reasoning").textContent = item.reasoning || item.judge_error || "—";
  $("comment").value = item.comment || "";
  $("current").textContent = item.manual
    ? `Salva: ${item.manual} por ${item.annotated_by}, ${when(item.annotated_at)} (versão ${item.version})`
    : `Sem anotação (versão ${item.version})`;
  $("history").replaceChildren(...(item.history || []).map((h) => el("li", {},
    `${when(h.at)} — ${h.user}: ${h.old_label || "—"} → ${h.new_label || "—"}` +
    (h.new_comment !== h.old_comment ? ` · “${h.old_comment || ""}” → “${h.new_comment || ""}”` : "") +
    ` (versão ${h.version}, ${h.source})`)));
  pressLabel();
}

function pressLabel() {
  document.querySelectorAll("#labels button").forEach((b) => {
    b.setAttribute("aria-pressed", String(b.dataset.label === state.label));
  });
}

function choose(label) {
  if (!state.item) return;
  state.label = label;
  pressLabel();
  if (label !== "C" && !$("comment").value.trim()) {
    $("comment").focus();
    setStatus(`${label}: escreva um comentário (o que falta ou está errado) e tecle Enter.`);
    return;
  }
  save();
}

async function save(version) {
  if (!state.item) return;
  if (!state.label) { setStatus("Escolha C, PC ou I (teclas 1, 2, 3).", true); return; }
  const id = state.item.id;
  setStatus("Salvando…");
  const res = await api("PUT", `/api/review/items/${id}/annotation`, {
    label: state.label, comment: $("comment").value,
    version: version ?? state.item.version,
  });
  if (state.item?.id !== id) {  // moved on meanwhile: the item on screen stays
    const q = state.queue.find((x) => x.id === id);
    if (res.status === 200 && q) { q.manual = res.body.manual; q.version = res.body.version; }
    renderQueue();
    if (res.status === 200) setStatus(`#${id} salvo: ${res.body.manual}.`);
    else setStatus(`#${id} não foi salvo: ` + (res.status === 409
      ? "outra pessoa salvou antes; volte a ele para escolher." : failure(res)), true);
    return;
  }
  if (res.status === 200) {
    const keep = { label: state.label };
    render(res.body);
    state.label = keep.label;
    pressLabel();
    const q = state.queue.find((x) => x.id === id);
    if (q) { q.manual = res.body.manual; q.version = res.body.version; }
    renderQueue();
    setStatus(`Salvo: ${res.body.manual} (versão ${res.body.version}).`);
    document.activeElement && document.activeElement.blur();
    return;
  }
  if (res.status === 409) { showConflict(res.body.current); return; }
  if (res.status === 422 && res.body.field === "comment") $("comment").focus();
  setStatus(failure(res), true);
}

function showConflict(current) {
  state.conflict = current;
  const by = current.annotated_by ? ` por ${current.annotated_by}` : "";
  $("conflict-text").textContent =
    `Outra pessoa salvou este item antes de você: ${current.manual || "sem rótulo"}${by}` +
    (current.comment ? ` — “${current.comment}”` : "") +
    ` (versão ${current.version}). Sua escolha: ${state.label}` +
    ($("comment").value.trim() ? ` — “${$("comment").value.trim()}”` : "") + ".";
  $("conflict").hidden = false;
  setStatus("Conflito: nada foi sobrescrito. Escolha qual anotação fica.", true);
}

$("conflict-mine").addEventListener("click", () => {
  const current = state.conflict;
  if (!current) return;
  state.item.version = current.version;
  $("conflict").hidden = true;
  save(current.version);
});
$("conflict-theirs").addEventListener("click", () => {
  if (state.conflict) render(state.conflict);
  setStatus("Mantida a anotação salva.");
});

// --- controls -----------------------------------------------------------------------------
document.querySelectorAll("#labels button").forEach((b) => {
  b.addEventListener("click", () => choose(b.dataset.label));
});
$("save").addEventListener("click", () => save());
$("prev").addEventListener("click", () => move(-1));
$("next").addEventListener("click", () => move(1));
$("filters").addEventListener("submit", (e) => { e.preventDefault(); loadQueue(); });
$("logout").addEventListener("click", async () => {
  await api("POST", "/review/logout");
  location.reload();
});

const KEYS = { "1": "C", c: "C", "2": "PC", p: "PC", "3": "I", i: "I" };
$("comment").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); save(); }
  if (e.key === "Escape") { e.preventDefault(); $("comment").blur(); }
});
document.addEventListener("keydown", (e) => {
  const t = e.target;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement ||
      t instanceof HTMLSelectElement) return;
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (KEYS[key]) { e.preventDefault(); choose(KEYS[key]); }
  else if (key === "m") { e.preventDefault(); $("comment").focus(); }
  else if (key === "j" || key === "ArrowRight") { e.preventDefault(); move(1); }
  else if (key === "k" || key === "ArrowLeft") { e.preventDefault(); move(-1); }
  else if (key === "Enter" && t === document.body) { e.preventDefault(); save(); }
});

Player.ready.then(() => loadQueue());  // which lectures play in place, before the first item
