// Small DOM helpers shared by the student and review pages: an element by id, a clock time
// from seconds (h:mm:ss or m:ss) and an element built from its properties and children.
const $ = (id) => document.getElementById(id);
const ts = (s) => {
  s = Math.max(0, Math.round(s));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), x = s % 60;
  return (h ? h + ":" + String(m).padStart(2, "0") : m) + ":" + String(x).padStart(2, "0");
};
const el = (tag, props = {}, ...kids) => {
  const e = Object.assign(document.createElement(tag), props);
  kids.forEach((k) => e.append(k));
  return e;
};
