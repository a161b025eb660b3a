// Review login: posts JSON (a cross-site form cannot), then reloads into the queue.
const form = document.getElementById("login-form");
const statusEl = document.getElementById("login-status");
form.addEventListener("submit", async (e) => {
  e.preventDefault();
  statusEl.textContent = "Entrando…";
  try {
    const r = await fetch("/review/login", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: document.getElementById("name").value.trim(),
        password: document.getElementById("password").value }),
    });
    if (r.ok) { location.reload(); return; }
    const body = await r.json().catch(() => ({}));
    statusEl.textContent = r.status === 401 ? "Usuário ou senha incorretos."
      : "Não foi possível entrar: " + (body.detail || r.status);
  } catch (err) {
    statusEl.textContent = "Sem conexão com o servidor.";
  }
});
