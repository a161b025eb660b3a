// The cited moment played in place, shared by the student and review pages: a recording Aula
// serves (GET /media/lectures) in an HTML5 <video>/<audio> that seeks with a media fragment
// (#t=), a YouTube lecture in YouTube's embed at start=; anything else stays a link.
// Beside the player, the lecture's sentences around the moment, the cited one highlighted.
const Player = (() => {
  let served = {};
  const ready = fetch("/media/lectures")
    .then((r) => (r.ok ? r.json() : {}))
    .then((m) => { served = m || {}; })
    .catch(() => {});
  let box = null, current = null, cues = [];

  function youtubeId(url) {
    const u = webUrl(url || "");
    if (!u) return null;
    let id = null;
    if (u.hostname === "youtu.be") id = u.pathname.slice(1);
    else if (/(^|\.)youtube\.com$/.test(u.hostname)) {
      id = u.searchParams.get("v") || (u.pathname.match(/^\/(?:embed|live|shorts)\/([^/]+)/) || [])[1];
    }
    return id && /^[A-Za-z0-9_-]{6,20}$/.test(id) ? id : null;
  }

  // The link a citation opens when it cannot play in place (or in a new tab).
  function href(lectureId, url, at) {
    const local = served[lectureId];
    if (local) return local.src + "#t=" + Math.max(0, at).toFixed(2);
    return videoLink(url, at);
  }

  const playable = (lectureId, url) => Boolean(served[lectureId] || youtubeId(url));

  function make(tag, props = {}) { return Object.assign(document.createElement(tag), props); }

  function ensureBox() {
    if (box) return box;
    box = document.getElementById("player-box");
    return box;
  }

  function highlight(at) {
    const list = box.querySelector(".player-cues");
    let mark = null;
    list.querySelectorAll("li").forEach((li, i) => {
      const on = cues[i].start <= at + 0.05 && (i + 1 >= cues.length || at < cues[i + 1].start - 0.05);
      li.classList.toggle("now", on);
      if (on) mark = li;
    });
    if (mark) mark.scrollIntoView({ block: "nearest" });
  }

  async function showCues(lectureId, at) {
    const list = box.querySelector(".player-cues");
    const res = await fetch(`/media/cues/${lectureId.split("/").map(encodeURIComponent).join("/")}` +
      `?start=${Math.max(0, at - 30)}&end=${at + 90}`).catch(() => null);
    cues = res && res.ok ? await res.json() : [];
    list.replaceChildren(...cues.map((c) => {
      const li = make("li", { textContent: c.text, title: ts(c.start) });
      li.dataset.start = c.start;
      li.addEventListener("click", () => play(lectureId, current.url, c.start, current.title));
      return li;
    }));
    highlight(at);
  }

  // Play `lectureId` from `at` seconds in the page's player; false when it cannot.
  async function play(lectureId, url, at, title) {
    await ready;
    if (!ensureBox() || !playable(lectureId, url)) return false;
    const stage = box.querySelector(".player-stage");
    const local = served[lectureId];
    box.hidden = false;
    box.querySelector(".player-title").textContent = `${title || lectureId} — ${ts(at)}`;
    const same = current && current.lectureId === lectureId;
    if (local) {
      let media = stage.querySelector("video, audio");
      if (same && media) {
        media.currentTime = at;
      } else {
        media = make(local.kind === "video" ? "video" : "audio", {
          controls: true, preload: "auto", src: local.src + "#t=" + at.toFixed(2),
        });
        media.setAttribute("playsinline", "");
        media.addEventListener("timeupdate", () => highlight(media.currentTime));
        stage.replaceChildren(media);
      }
      media.play().catch(() => {});
    } else {
      const start = Math.max(0, Math.floor(at));
      const frame = make("iframe", {
        src: `https://www.youtube-nocookie.com/embed/${youtubeId(url)}?start=${start}&autoplay=1`,
        title: title || lectureId, allow: "autoplay; encrypted-media; picture-in-picture",
        referrerPolicy: "strict-origin-when-cross-origin",
      });
      frame.setAttribute("allowfullscreen", "");
      stage.replaceChildren(frame);
    }
    current = { lectureId, url, title };
    box.scrollIntoView({ block: "nearest" });
    await showCues(lectureId, at);
    return true;
  }

  // An <a> that opens the moment: in the page's player when it can, else in a new tab.
  function momentLink(lectureId, url, at, props, label) {
    const target = href(lectureId, url, at);
    if (!target && !playable(lectureId, url)) return el("span", { className: props.className || "" }, label);
    const a = el("a", { href: target || "#", target: "_blank", rel: "noopener", ...props }, label);
    a.dataset.lecture = lectureId;
    a.dataset.at = String(at);
    a.addEventListener("click", (e) => {
      // a modified click (new tab, new window) keeps the link's own behaviour
      if (!playable(lectureId, url) || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      play(lectureId, url, at, props.title || label);
    });
    return a;
  }

  // Stop and hide the player: the page moved on to something the moment is not part of.
  function stop() {
    if (!ensureBox()) return;
    box.querySelectorAll("video, audio").forEach((m) => m.pause());
    box.querySelector(".player-stage").replaceChildren();
    box.querySelector(".player-cues").replaceChildren();
    box.hidden = true;
    current = null;
  }

  return { ready, play, stop, playable, href, momentLink, youtubeId };
})();
