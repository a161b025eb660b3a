"""``aula users`` and ``aula review`` as a user runs them: accounts, tokens, export, import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from app.auth import now
from app.db import store
from app.db.session import Database, open_database
from tests.conftest import ROOT
from tests.review.conftest import PASSWORD, Site, seed


def run(args: list[str], url: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "AULA_DATABASE_URL": url}
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env,
                          input=stdin, capture_output=True, text=True, timeout=120)


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/aula.db"


def test_users_add_hashes_the_password_and_refuses_a_repeat(url: str) -> None:
    r = run(["users", "add", "ana", "--role", "instructor", "--password-stdin", "--json"],
            url, PASSWORD + "\n")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"name": "ana", "role": "instructor"}
    again = run(["users", "add", "ana", "--password-stdin"], url, PASSWORD + "\n")
    assert again.returncode == 1 and "already exists" in again.stderr
    bad_role = run(["users", "add", "bia", "--role", "aluno", "--password-stdin"], url,
                   PASSWORD + "\n")
    assert bad_role.returncode == 1 and "role" in bad_role.stderr
    listed = run(["users", "list", "--json"], url)
    assert json.loads(listed.stdout) == [{"name": "ana", "role": "instructor"}]


def test_a_token_from_the_cli_opens_the_api(site: Site, tmp_path: Path) -> None:
    r = run(["users", "token", "ana"], site.settings.service.database_url)
    assert r.returncode == 0, r.stderr
    token = r.stdout.strip()
    got = httpx.get(site.url + "/api/review/items",
                    headers={"Authorization": f"Bearer {token}"})
    assert got.status_code == 200
    unknown = run(["users", "token", "zeca"], site.settings.service.database_url)
    assert unknown.returncode == 1 and "zeca" in unknown.stderr


def test_export_then_import_round_trip_and_a_bad_row_changes_nothing(
    url: str, tmp_path: Path
) -> None:
    db: Database = open_database(url)
    ids = seed(db, 3)
    with db.write() as s:
        store.annotate(s, ids[0], label="C", comment=None, version=1, user="ana",
                       now=now())
    out = tmp_path / "export.csv"
    r = run(["review", "export", "--format", "csv", "--out", str(out), "--all", "--json"], url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["items"] == 3
    lines = out.read_text().splitlines()
    header = lines[0].split(",")
    assert header[:4] == ["id", "question", "answer", "manual"]
    # a reviewer fills in the rest in a spreadsheet; one row has a typo
    rows = out.read_text().splitlines()
    rows[2] = rows[2].replace(",,,1,", ",PC,faltou o exemplo,1,", 1)
    rows[3] = rows[3].replace(",,,1,", ",Q,,1,", 1)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(rows) + "\n")
    r = run(["review", "import", str(bad)], url)
    assert r.returncode == 1
    assert "row 3 (id 3): label: unknown label 'Q'" in r.stderr
    with db.read() as s:
        assert store.get_item(s, ids[1])["manual"] is None
    rows[3] = rows[3].replace(",Q,,1,", ",I,não responde,1,", 1)
    good = tmp_path / "good.csv"
    good.write_text("\n".join(rows) + "\n")
    r = run(["review", "import", str(good), "--user", "bia", "--json"], url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"changed": 2, "unchanged": 1}
    with db.read() as s:
        assert [store.get_item(s, i)["manual"] for i in ids] == ["C", "PC", "I"]
        assert store.history(s, ids[2])[-1]["user"] == "bia"
    md = tmp_path / "records.md"
    r = run(["review", "export", "--format", "md", "--out", str(md)], url)
    assert r.returncode == 0 and md.read_text().count("**Pergunta ") == 3
    db.close()


@pytest.mark.parametrize("days", ["1000000000", "3000000"])
def test_a_token_lifetime_past_the_calendar_is_one_clear_line(url: str, days: str) -> None:
    added = run(["users", "add", "bob", "--password-stdin"], url, PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    r = run(["users", "token", "bob", "--days", days], url)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"erro: days: {float(days):g} is outside the lifetime a token may have (more than 0, "
        "at most 36500)"]
    assert r.stdout == ""  # no token was made
