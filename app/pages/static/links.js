// Links to videos, shared by the student and review pages. Only http(s) links reach href;
// anything else (javascript:, a link that does not parse) is no link at all, and never an
// exception that stops a page from rendering.
function webUrl(url) {
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? u : null;
  } catch (err) {
    return null;
  }
}

const safeHref = (url) => { const u = webUrl(url); return u ? u.toString() : null; };

// The video opening at `start` seconds: YouTube gets t=<s>, anything else #t=<s>.
function videoLink(url, start) {
  const u = webUrl(url);
  if (!u) return null;
  const t = String(Math.max(0, Math.floor(start)));
  if (/(^|\.)youtube\.com$|^youtu\.be$/.test(u.hostname)) u.searchParams.set("t", t);
  else u.hash = "t=" + t;
  return u.toString();
}
