"""Bounded load on loopback: 8 instructors save into the same small queue at once. No
annotation is lost and every conflict is reported: each save is applied and in the history,
or answered 409 with a newer version; the final state is the last change in the history."""

from __future__ import annotations

from collections import Counter

from app.db import store
from app.db.session import Database
from tests.review.annotators import Save, run_annotators
from tests.review.conftest import PASSWORD, Site, add_instructor, seed

ANNOTATORS = 8
SAVES_EACH = 25


def test_eight_annotators_lose_nothing_and_every_conflict_is_reported(site: Site) -> None:
    items = seed(site.db, 4)  # few items: the annotators collide often
    users = [(f"carga{n}", PASSWORD) for n in range(ANNOTATORS)]
    for name, _ in users:
        add_instructor(site.db, name)
    saves, seconds = run_annotators(site.url, users, items, SAVES_EACH)
    applied, conflicts = check_nothing_lost(site.db, items, saves)
    print(f"\n{applied} applied, {conflicts} conflicts (409), "
          f"{len(saves) / seconds:.0f} saves/s with {ANNOTATORS} annotators")


def check_nothing_lost(db: Database, items: list[int], saves: list[Save]) -> tuple[int, int]:
    """Every save applied and in the history or answered 409; the history gapless and the
    final state its last change. Returns (applied, conflicts)."""
    statuses = Counter(s.status for s in saves)
    assert set(statuses) <= {200, 409}, statuses  # no 5xx, no lost write
    assert len(saves) == ANNOTATORS * SAVES_EACH
    applied = [s for s in saves if s.status == 200]
    conflicts = [s for s in saves if s.status == 409]
    assert applied and conflicts, statuses  # the load does collide
    assert all(s.version > s.sent for s in conflicts)  # the 409 shows a newer version

    with db.read() as sess:
        history = {i: store.history(sess, i) for i in items}
        final = {i: store.get_item(sess, i) for i in items}
    changes = {(i, h["version"]): h for i in items for h in history[i]}
    for s in applied:  # every applied save is in the history, exactly as sent
        h = changes[(s.item, s.version)]
        assert (h["user"], h["new_label"], h["new_comment"]) == (s.user, s.label, s.comment)
    assert len(changes) == len(applied)  # and the history holds nothing else
    for i in items:
        versions = [h["version"] for h in history[i]]
        assert versions == list(range(2, 2 + len(versions)))  # no gap, no repeat
        for before, after in zip(history[i], history[i][1:], strict=False):
            assert (after["old_label"], after["old_comment"]) == (
                before["new_label"], before["new_comment"])
        last = history[i][-1] if history[i] else None
        assert final[i]["version"] == 1 + len(history[i])
        if last:
            assert (final[i]["manual"], final[i]["comment"], final[i]["annotated_by"]) == (
                last["new_label"], last["new_comment"], last["user"])
    return len(applied), len(conflicts)
