""" "Undo my last answer" sent several times at once by one annotator (issue 13 follow-up).

Each undo must choose the newest current answer and withdraw it in one transaction, after the
annotator's other undos: ``N`` undos at once over ``K`` answers (gold and pool mixed) withdraw
exactly the ``min(N, K)`` newest answers, each once, newest first, and touch nothing else
(no other answer of the annotator, nothing of another annotator); the other ``N - K`` undos
find nothing (``None``).

The oracle is the test's own log of what the annotator answered, in order (an answer given
again after an undo moves to the end), not the store's history. The order of the withdrawals
is read from the audit trails: ``label_events`` (votes) and ``gold_events`` (gold answers), a
gold event placed after the vote event its ``after_event`` names.

Two schedules, on SQLite and PostgreSQL:

- *interleaved* (deterministic, barriers/events only): undo ``j + 1`` is started only once undo
  ``j`` has chosen its answer (a listener on the statement that reads the newest gold answer,
  which every "undo my last answer" runs once), and undo ``j`` goes on only once undo ``j + 1``
  has entered the store's write path. The code before this fix chose in a read transaction and
  withdrew in a second one, so under this schedule every undo chose the same answer (one
  withdrawal, ``N - 1`` ``None``); now undo ``j + 1`` waits in the write path (the SQLite writer,
  the PostgreSQL advisory lock) until undo ``j`` has committed.
- *simultaneous*: ``N`` threads released by one barrier.

Each also without gold items: pool-only undos were already one transaction, which SQLite's
single writer made right, but on PostgreSQL two of them read the same newest label before
either deleted it (both reported the same item; one answer withdrawn).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from fireval.judging import schema as S
from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store

WAIT = 60  # seconds: a safety net that fails the test if a step never happens, not a schedule


def _build(st: Store, k: int, gold: bool = True) -> tuple[int, list[int]]:
    """A store where annotator ``a`` has ``k`` current answers, gold and pool alternating (gold
    rate 0.5; pool answers only without ``gold``), the oldest of each kind given again after an
    undo (so the newest answers are not the newest rows), and annotator ``b`` has answers on
    the same items in between. Returns ``a``'s id and the items of its current answers, oldest
    first (the test's own log)."""
    st.add_items([PoolItem(f"pool {i}", [f"c{i}"], f"v{i}", {"RUN": 1}, True) for i in range(2 * k + 4)], "T")
    if gold:
        st.gold.load(
            [GoldPair(f"gold {i}", f"g{i}", ("relevant", "irrelevant")[i % 2]) for i in range(k + 2)]
        )
        st.gold.rate = 0.5
    a = st.add_annotator("a")[0].id
    b = st.add_annotator("b")[0].id
    log: list[int] = []
    labels = ("relevant", "irrelevant", "skip")
    while len(log) < k:
        for who in (a, b) if len(log) % 2 else (a,):
            it = st.next_item(who)
            assert it is not None
            st.submit(who, it.id, labels[(len(log) + who) % 3])
            if who == a:
                log.append(it.id)
    pool = [i for i in log if i < GOLD_BASE]
    golds = [i for i in log if i > GOLD_BASE]
    assert pool and bool(golds) == gold
    for item in (pool[0], *golds[:1]):  # answered again after an undo: now the newest answers
        assert st.undo(a, item) == item
        st.submit(a, item, "relevant")
        log.remove(item)
        log.append(item)
    assert (log[-1] > GOLD_BASE) == gold  # with gold, the newest answer is gold (the old code broke it)
    return a, log


def _state(st: Store) -> dict[str, set[tuple[Any, ...]]]:
    """Every row the hand-out and the answers keep (audit trails aside)."""
    out = {}
    with st.db.reading() as conn:
        for t in (S.labels, S.assignments, S.items, S.gold_answers, S.gold_current):
            cols = [c for c in t.c if c.name not in ("updated_at",)]
            out[t.name] = {tuple(r) for r in conn.execute(sa.select(*cols))}
    return out


def _withdrawals(st: Store, annotator: int) -> list[int]:
    """The items of the annotator's withdrawals, in the order they happened (vote and gold
    audit events merged by ``after_event``)."""
    L, G = S.label_events.c, S.gold_events.c
    with st.db.reading() as conn:
        votes = conn.execute(
            sa.select(L.id, L.item_id).where(L.annotator_id == annotator, L.action == "withdraw")
        ).all()
        golds = conn.execute(
            sa.select(G.id, G.after_event, G.gold_id).where(
                G.annotator_id == annotator, G.action == "withdraw"
            )
        ).all()
    keyed = [((int(v.id), 0, 0), int(v.item_id)) for v in votes]
    keyed += [((int(g.after_event), 1, int(g.id)), GOLD_BASE + int(g.gold_id)) for g in golds]
    return [item for _, item in sorted(keyed)]


def _check(st: Store, a: int, log: list[int], before: dict, withdrawn_before: list[int], got: list) -> None:
    n = len(got)
    m = min(n, len(log))
    newest = log[::-1][:m]
    assert sorted(x for x in got if x is not None) == sorted(newest)  # each once
    assert got.count(None) == n - m
    assert _withdrawals(st, a)[len(withdrawn_before) :] == newest  # newest first
    # nothing else touched: the rows of the withdrawn answers changed as an undo changes them
    after = _state(st)
    gone_pool = {i for i in newest if i < GOLD_BASE}
    gone_gold = {i - GOLD_BASE for i in newest if i > GOLD_BASE}
    lab_before = {r for r in before["labels"] if not (r[1] in gone_pool and r[2] == a)}
    assert after["labels"] == lab_before
    assert len(before["labels"]) - len(lab_before) == len(gone_pool)
    asg_cols = [c.name for c in S.assignments.c if c.name != "updated_at"]
    i_item, i_ann, i_done = (asg_cols.index(c) for c in ("item_id", "annotator_id", "done"))
    mine_reopened = {r for r in after["assignments"] if r[i_item] in gone_pool and r[i_ann] == a}
    assert all(not r[i_done] for r in mine_reopened) and len(mine_reopened) == len(gone_pool)
    assert after["assignments"] - mine_reopened == {
        r for r in before["assignments"] if not (r[i_item] in gone_pool and r[i_ann] == a)
    }
    items_cols = [c.name for c in S.items.c]
    i_id = items_cols.index("id")
    assert {r for r in after["items"] if r[i_id] not in gone_pool} == {
        r for r in before["items"] if r[i_id] not in gone_pool
    }
    ga_cols = [c.name for c in S.gold_answers.c]
    g_gid, g_ann, g_cur = (ga_cols.index(c) for c in ("gold_id", "annotator_id", "current"))

    def undone(r: tuple) -> bool:
        return r[g_gid] in gone_gold and r[g_ann] == a

    assert {r for r in after["gold_answers"] if not undone(r)} == {
        r for r in before["gold_answers"] if not undone(r)
    }
    assert all(r[g_cur] is None for r in after["gold_answers"] if undone(r))
    assert len(before["gold_current"]) - len(after["gold_current"]) == len(gone_gold)
    # the first gold answers (accuracy) are untouched: checked with gold_answers above
    assert [h.item_id for h in st.history.recent(a, 200)] == log[::-1][m:]


@pytest.mark.parametrize(("n", "k", "gold"), [(3, 6, True), (6, 4, True), (4, 5, False)])
def test_undos_interleaved_at_the_choice_withdraw_distinct_answers_in_order(
    store: Store, n: int, k: int, gold: bool
) -> None:
    a, log = _build(store, k, gold)
    before, withdrawn_before = _state(store), _withdrawals(store, a)
    started = [threading.Event() for _ in range(n + 1)]
    entered_write = [threading.Event() for _ in range(n + 1)]
    chose = [0]
    mark = threading.Lock()
    me = threading.local()
    failures: list[BaseException] = []

    def after_choice(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        # the statement every "undo my last answer" runs once to find the newest gold answer
        if "FROM gold_events JOIN gold_answers" not in statement:
            return
        with mark:
            j = chose[0]
            chose[0] += 1
        if j + 1 < n:
            started[j + 1].set()  # undo j has chosen: start undo j + 1 ...
            if not entered_write[j + 1].wait(WAIT):  # ... and go on once it is in the write path
                failures.append(AssertionError(f"undo {j + 1} never reached the write path"))

    write = store.db.write

    def write_marked(op: Callable[[Any], Any]) -> Any:
        j = getattr(me, "j", None)
        if j is not None:
            entered_write[j].set()
        return write(op)

    engines = {store.db.engine, store.db.read_engine}
    for eng in engines:
        sa.event.listen(eng, "after_cursor_execute", after_choice)
    store.db.write = write_marked  # type: ignore[method-assign]
    got: list[Any] = [None] * n

    def undo(j: int) -> None:
        me.j = j
        try:
            if j > 0 and not started[j].wait(WAIT):
                raise AssertionError(f"undo {j} was never started")
            got[j] = store.undo(a)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)
            for e in (*started, *entered_write):  # let the others finish
                e.set()

    threads = [threading.Thread(target=undo, args=(j,)) for j in range(n)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT * (n + 1))
    finally:
        for eng in engines:
            sa.event.remove(eng, "after_cursor_execute", after_choice)
        del store.db.write
    assert not any(t.is_alive() for t in threads)
    assert not failures, failures
    assert chose[0] == n  # every undo chose once
    _check(store, a, log, before, withdrawn_before, got)


@pytest.mark.parametrize(("n", "k", "gold"), [(4, 7, True), (8, 5, True), (8, 5, False)])
def test_simultaneous_undos_withdraw_the_newest_answers_each_once(
    store: Store, n: int, k: int, gold: bool
) -> None:
    a, log = _build(store, k, gold)
    before, withdrawn_before = _state(store), _withdrawals(store, a)
    start = threading.Barrier(n)
    got: list[Any] = [None] * n
    failures: list[BaseException] = []

    def undo(j: int) -> None:
        try:
            start.wait(WAIT)
            got[j] = store.undo(a)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=undo, args=(j,)) for j in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 2)
    assert not any(t.is_alive() for t in threads)
    assert not failures, failures
    _check(store, a, log, before, withdrawn_before, got)
