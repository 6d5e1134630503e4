"""The hand-out's SQL: the claim lock key, the claim's "not mine" probe (:data:`NOT_MINE`),
the hot-path statements built once per store (:class:`_Statements`: plain SQL valid on SQLite
and PostgreSQL, run on the driver's cursor) and the PostgreSQL one-round-trip functions
(:data:`PG_SUBMIT_FUNCTION`: the session check, the answer and the next item;
:data:`PG_PEEK_FUNCTION`: the annotation page's prefetch), created in ``pg_temp`` on each new
connection.

The rules they implement (order, claims, serialisation) are described in
:mod:`fireval.judging.handout`, which runs them and re-exports these names.
"""

from __future__ import annotations

from fireval.judging.connections import driver_sql

#: key of the PostgreSQL advisory lock that serialises claims ("fire" in ASCII)
CLAIM_LOCK_KEY = 0x66697265


#: A claim skips items the annotator already has (or had) an assignment for. The cost must not
#: grow with their history: ``id NOT IN (SELECT item_id FROM assignments WHERE annotator_id = ?)``
#: read every assignment they ever had on each claim (PostgreSQL: a hashed subplan; SQLite: a list
#: built per statement), and a plain ``NOT EXISTS`` let PostgreSQL's planner choose a hash anti
#: join over the same rows whenever its estimates favoured it. ``OFFSET 0`` keeps the correlated
#: subquery from being turned into a join (PostgreSQL does not pull up or hash an ``EXISTS`` with
#: an offset; SQLite always runs it per row), so each candidate item costs one probe of the unique
#: (item_id, annotator_id) index, and a claim reads only the candidates it passes over (the
#: annotator's own still-open items) whatever the history (``tests/judging/test_claim_cost.py``).
NOT_MINE = (
    "NOT EXISTS (SELECT 1 FROM assignments m WHERE m.item_id = items.id AND m.annotator_id = {who} "
    "LIMIT 1 OFFSET 0)"
)

#: PostgreSQL: an answer and the next item in one statement, one transaction, one round trip
#: (:meth:`~fireval.judging.handout.Handout.submit_in_session_pg`). A temporary function
#: (``pg_temp``), created on each new connection
#: (:meth:`fireval.judging.engine.Database.session_setup`): no migration, and it always matches the
#: running code. The same rules and order as :meth:`~fireval.judging.handout.Handout.submit` and
#: :meth:`~fireval.judging.handout.Handout._next`: the session check first (an ended session writes
#: nothing), the item's row locked, the answer, the item's slots recounted; then the annotator's
#: open assignment, else a started item, else a fresh one. The claim skips item rows another
#: transaction holds (``SKIP LOCKED``: a claim never waits while this transaction holds the answered
#: item's row, so no deadlock, and concurrent claims take different items instead of queueing on
#: one). Skipping is only a preference: when it leaves nothing (``o_src`` NULL), the caller commits
#: and claims with :meth:`~fireval.judging.handout.Handout.next_item`, which waits for held rows, so
#: "nothing left" is only ever answered by that waiting claim. Errors come back as ``o_status``
#: (nothing written): ``nosession``, ``unknown``, ``unassigned``, ``conflict`` (with ``o_old``).
#: The claim skips the annotator's own items with :data:`NOT_MINE` (see there).
PG_SUBMIT_FUNCTION = """
CREATE OR REPLACE FUNCTION pg_temp.fireval_submit(
    p_token text, p_now timestamptz, p_item integer, p_label text, p_spent integer,
    p_kind text, p_next boolean,
    OUT o_status text, OUT o_label integer, OUT o_annotator integer, OUT o_old text,
    OUT o_src integer, OUT o_item integer, OUT o_caption text, OUT o_video text,
    OUT o_dataset text, OUT o_assignment integer)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    v_double boolean; v_asg integer;
BEGIN
    SELECT a.id INTO o_annotator FROM sessions s JOIN annotators a ON a.id = s.annotator_id
     WHERE s.token_hash = p_token AND s.expires_at > p_now AND a.active = true;
    IF o_annotator IS NULL THEN o_status := 'nosession'; RETURN; END IF;
    SELECT i.is_double, a.id, l.id, l.label INTO v_double, v_asg, o_label, o_old FROM items i
      LEFT JOIN assignments a ON a.item_id = i.id AND a.annotator_id = o_annotator
      LEFT JOIN labels l ON l.item_id = i.id AND l.annotator_id = o_annotator
     WHERE i.id = p_item FOR UPDATE OF i;
    IF NOT FOUND THEN o_status := 'unknown'; RETURN; END IF;
    IF v_asg IS NULL THEN o_status := 'unassigned'; RETURN; END IF;
    IF o_label IS NOT NULL THEN
        IF o_old <> p_label THEN o_status := 'conflict'; RETURN; END IF;
        o_status := 'duplicate';
    ELSE
        -- the answer and its assignment done, in one statement
        WITH fin AS (UPDATE assignments SET done = true, updated_at = p_now WHERE id = v_asg)
        INSERT INTO labels (item_id, annotator_id, assignment_id, label, time_spent_ms, created_at, kind)
        VALUES (p_item, o_annotator, v_asg, p_label, p_spent, p_now, p_kind) RETURNING id INTO o_label;
        -- the item's votes (skips are not), relevant votes and open assignments, and from them
        -- its needed votes (a tie needs one more) and open slots, in one statement
        UPDATE items SET needed = c.nd, open_slots = GREATEST(0, c.nd - c.n - c.act)
          FROM (SELECT v.n, v.act,
                       CASE WHEN v.n >= 2 AND 2 * v.r = v.n THEN v.n + 1 WHEN v_double THEN 2 ELSE 1 END AS nd
                  FROM (SELECT count(*) FILTER (WHERE l.label <> 'skip') AS n,
                               count(*) FILTER (WHERE l.label = 'relevant') AS r,
                               (SELECT count(*) FROM assignments x
                                 WHERE x.item_id = p_item AND x.done = false) AS act
                          FROM labels l WHERE l.item_id = p_item) v) c
         WHERE items.id = p_item;
        o_status := 'created';
    END IF;
    IF NOT p_next THEN RETURN; END IF;
    SELECT i.id, i.caption, i.video_id, i.dataset, a.id
      INTO o_item, o_caption, o_video, o_dataset, o_assignment
      FROM assignments a JOIN items i ON i.id = a.item_id
     WHERE a.annotator_id = o_annotator AND a.done = false
     ORDER BY a.updated_at DESC, a.id DESC LIMIT 1;
    IF FOUND THEN o_src := 0; RETURN; END IF;
    FOR v_src IN 1..2 LOOP
        IF v_src = 1 THEN  -- the partial indexes' predicates, literally (ix_items_started_id)
            SELECT id, caption, video_id, dataset INTO o_item, o_caption, o_video, o_dataset
              FROM items WHERE open_slots > 0 AND open_slots < needed
               AND NOT EXISTS (SELECT 1 FROM assignments m
                                WHERE m.item_id = items.id AND m.annotator_id = o_annotator LIMIT 1 OFFSET 0)
             ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED;
        ELSE  -- ix_items_open_id
            SELECT id, caption, video_id, dataset INTO o_item, o_caption, o_video, o_dataset
              FROM items WHERE open_slots > 0
               AND NOT EXISTS (SELECT 1 FROM assignments m
                                WHERE m.item_id = items.id AND m.annotator_id = o_annotator LIMIT 1 OFFSET 0)
             ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED;
        END IF;
        IF FOUND THEN  -- the row is ours and re-checked: take the slot and record the assignment
            WITH slot AS (UPDATE items SET open_slots = open_slots - 1 WHERE id = o_item AND open_slots > 0
                          RETURNING id)
            INSERT INTO assignments (item_id, annotator_id, done, created_at, updated_at)
            SELECT id, o_annotator, false, p_now, p_now FROM slot RETURNING id INTO o_assignment;
            IF FOUND THEN
                o_src := v_src;
                RETURN;
            END IF;
        END IF;
    END LOOP;
    o_item := NULL; o_caption := NULL; o_video := NULL; o_dataset := NULL;
END
$fn$;
PREPARE fireval_submit_p(text, timestamptz, integer, text, integer, text, boolean) AS
SELECT o_status, o_label, o_annotator, o_old, o_src, o_item, o_caption, o_video, o_dataset, o_assignment
  FROM pg_temp.fireval_submit($1, $2, $3, $4, $5, $6, $7)
"""


#: PostgreSQL, the annotation page's prefetch (``GET /api/peek``):
#: :meth:`~fireval.judging.handout.Handout.peek_in_session_pg_async`, the session check and the
#: reads of :meth:`fireval.judging.store.Store.peek_next`
#: (:meth:`~fireval.judging.handout.Handout.open_items`,
#: :meth:`~fireval.judging.handout.Handout.peek_claimable` and, with gold items mixed in at rate
#: ``p_rate`` > 0, :meth:`fireval.judging.gold.Gold.peek` and
#: :func:`fireval.judging.gold.pool_reopened_first`) in one statement, one round trip, on a
#: connection the event loop drives: the same answer as ``peek_next``, in the same order of rules.
#: Read only: it claims nothing and marks no gold item shown. ``o_annotator`` NULL: the session is
#: not live; ``o_video``: the video of the item the annotator would be given after the one shown now
#: (NULL: they are shown nothing, or nothing would follow), except that when ``o_gold`` is set (an
#: unseen gold item exists) a gold item's video is the answer instead if one is due:
#: :meth:`fireval.judging.gold.Gold.peek_row` decides from ``o_seen``, ``o_votes`` (here: pool
#: captions answered), ``o_since``, ``o_last`` and ``o_next`` (the annotator's gold plan and
#: positions are drawn with a secret, in Python). With ``p_rate`` <= 0 (gold off) the gold reads are
#: skipped.
PG_PEEK_FUNCTION = """
CREATE OR REPLACE FUNCTION pg_temp.fireval_reopened(p_annotator integer, p_except_gold integer,
    p_except_item integer) RETURNS boolean
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    v_since integer;
BEGIN  -- gold.pool_reopened_first, with its except_gold / except_item
    SELECT e.after_event INTO v_since
      FROM gold_events e JOIN gold_answers ga ON ga.id = e.answer_id
     WHERE ga.annotator_id = p_annotator AND ga.current IS NULL AND e.annotator_id = p_annotator
       AND (p_except_gold IS NULL OR ga.gold_id <> p_except_gold)
     ORDER BY e.id DESC LIMIT 1;
    IF v_since IS NULL THEN RETURN false; END IF;
    RETURN EXISTS (
        SELECT 1 FROM label_events l
          JOIN assignments a ON a.item_id = l.item_id AND a.annotator_id = p_annotator
         WHERE l.annotator_id = p_annotator AND l.action = 'withdraw' AND l.id > v_since
           AND a.done = false AND (p_except_item IS NULL OR l.item_id <> p_except_item));
END
$fn$;
CREATE OR REPLACE FUNCTION pg_temp.fireval_peek(p_token text, p_now timestamptz, p_rate double precision,
    OUT o_annotator integer, OUT o_video text, OUT o_gold text, OUT o_shown bigint, OUT o_votes bigint,
    OUT o_last text, OUT o_next text, OUT o_seen integer[], OUT o_since boolean)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    v_open bigint; v_first text; v_second text; v_first_item integer; v_first_cap text; v_second_cap text;
    v_first_norm text; v_g1 integer; v_gold_now text; v_g2 integer; v_gold_then text;
BEGIN
    SELECT a.id INTO o_annotator FROM sessions s JOIN annotators a ON a.id = s.annotator_id
     WHERE s.token_hash = p_token AND s.expires_at > p_now AND a.active = true;
    IF o_annotator IS NULL THEN RETURN; END IF;
    -- the open assignments newest first (the one shown now, then the one after it): open_items
    SELECT count(*), max(CASE WHEN m.k = 1 THEN m.video_id END), max(CASE WHEN m.k = 2 THEN m.video_id END),
           max(CASE WHEN m.k = 1 THEN m.item_id END),
           max(CASE WHEN m.k = 1 THEN m.caption END), max(CASE WHEN m.k = 2 THEN m.caption END),
           max(CASE WHEN m.k = 1 THEN m.norm_caption END)
      INTO v_open, v_first, v_second, v_first_item, v_first_cap, v_second_cap, v_first_norm
      FROM (SELECT i.id AS item_id, i.video_id, i.caption, i.norm_caption,
                   row_number() OVER (ORDER BY a.updated_at DESC, a.id DESC) AS k
              FROM assignments a JOIN items i ON i.id = a.item_id
             WHERE a.annotator_id = o_annotator AND a.done = false
             ORDER BY a.updated_at DESC, a.id DESC LIMIT 2) m;
    IF p_rate > 0 THEN
        -- Gold.peek: the gold items shown and not answered, the newest to become pending first
        SELECT max(CASE WHEN p.k = 1 THEN p.id END), max(CASE WHEN p.k = 1 THEN p.video_id END),
               max(CASE WHEN p.k = 2 THEN p.id END), max(CASE WHEN p.k = 2 THEN p.video_id END)
          INTO v_g1, v_gold_now, v_g2, v_gold_then
          FROM (SELECT g.id, g.video_id, row_number() OVER (ORDER BY q.since DESC, q.id DESC) AS k
                  FROM (SELECT ga.id, ga.gold_id,
                               (SELECT coalesce(max(e.id), 0) FROM gold_events e WHERE e.answer_id = ga.id) AS since
                          FROM gold_answers ga
                         WHERE ga.annotator_id = o_annotator AND ga.current IS NULL) q
                  JOIN gold_items g ON g.id = q.gold_id
                 ORDER BY q.since DESC, q.id DESC LIMIT 2) p;
        IF v_g1 IS NULL AND v_open = 0 THEN RETURN; END IF;  -- shown nothing
        -- Store._peek's rules, in its order
        IF v_g1 IS NOT NULL AND v_open > 0 AND pg_temp.fireval_reopened(o_annotator, NULL, NULL) THEN
            -- an undone vote is shown now; the gold item next, unless another undone one is open
            IF v_open > 1 AND pg_temp.fireval_reopened(o_annotator, NULL, v_first_item) THEN
                o_video := v_second;
            ELSE
                o_video := v_gold_now;
            END IF;
            RETURN;
        END IF;
        IF v_g1 IS NOT NULL AND v_g2 IS NOT NULL THEN  -- a gold item shown now, another pending
            IF v_open > 0 AND pg_temp.fireval_reopened(o_annotator, v_g1, NULL) THEN
                o_video := v_first;
            ELSE
                o_video := v_gold_then;
            END IF;
            RETURN;
        END IF;
        -- the gold item due once that one, or one more vote, is answered: o_gold (an unseen
        -- gold item exists) and what Gold.decide decides with (in Python: the annotator's gold
        -- plan and drawn positions): the gold ids shown in order (o_seen), the pool captions
        -- answered after that answer (o_votes), whether a vote came after the newest gold item
        -- was shown (o_since); o_video is then the answer when no gold item is due; o_last /
        -- o_next: the captions around that place (Store.pool_captions), for gold.caption_boundary
        SELECT g.video_id INTO o_gold FROM gold_items g
         WHERE NOT EXISTS (SELECT 1 FROM gold_answers ga WHERE ga.gold_id = g.id AND ga.annotator_id = o_annotator)
         ORDER BY g.id LIMIT 1;
        IF o_gold IS NOT NULL THEN  -- gold._seen, gold._captions_done, gold._vote_since
            SELECT array_agg(gold_id ORDER BY id) INTO o_seen FROM gold_answers WHERE annotator_id = o_annotator;
            o_shown := coalesce(cardinality(o_seen), 0);
            SELECT count(DISTINCT i.norm_caption) INTO o_votes FROM labels l JOIN items i ON i.id = l.item_id
             WHERE l.annotator_id = o_annotator;
            IF v_g1 IS NULL THEN  -- the pool item shown now answered: its caption counts if new
                IF v_first_norm IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM labels l JOIN items i ON i.id = l.item_id
                     WHERE l.annotator_id = o_annotator AND i.norm_caption = v_first_norm) THEN
                    o_votes := o_votes + 1;
                END IF;
                o_last := v_first_cap;
                o_since := true;
            ELSE
                SELECT i.caption INTO o_last FROM labels l JOIN items i ON i.id = l.item_id
                 WHERE l.annotator_id = o_annotator ORDER BY l.id DESC LIMIT 1;
                o_since := o_shown > 0 AND EXISTS (
                    SELECT 1 FROM label_events l
                     WHERE l.annotator_id = o_annotator AND l.action = 'answer'
                       AND l.id > (SELECT e.after_event FROM gold_events e
                                    WHERE e.annotator_id = o_annotator AND e.action = 'shown'
                                    ORDER BY e.id DESC LIMIT 1));
            END IF;
        END IF;
        IF v_g1 IS NOT NULL THEN  -- the gold item is shown now: the newest open item follows
            o_video := v_first;
            o_next := v_first_cap;
            IF v_open > 0 THEN RETURN; END IF;
        ELSIF v_open <> 1 THEN  -- the next open one follows
            o_video := v_second;
            o_next := v_second_cap;
            RETURN;
        END IF;
    ELSIF v_open <> 1 THEN  -- nothing shown, or the next open one follows
        o_video := v_second;
        RETURN;
    END IF;
    -- peek_claimable: a started item first, else any item with an open slot, in pool order
    SELECT video_id, caption INTO o_video, o_next FROM items WHERE open_slots > 0 AND open_slots < needed
       AND NOT EXISTS (SELECT 1 FROM assignments m
                        WHERE m.item_id = items.id AND m.annotator_id = o_annotator LIMIT 1 OFFSET 0)
     ORDER BY id LIMIT 1;
    IF FOUND THEN RETURN; END IF;
    SELECT video_id, caption INTO o_video, o_next FROM items WHERE open_slots > 0
       AND NOT EXISTS (SELECT 1 FROM assignments m
                        WHERE m.item_id = items.id AND m.annotator_id = o_annotator LIMIT 1 OFFSET 0)
     ORDER BY id LIMIT 1;
END
$fn$;
PREPARE fireval_peek_p(text, timestamptz, double precision) AS
SELECT o_annotator, o_video, o_gold, o_shown, o_votes, o_last, o_next, o_seen, o_since
  FROM pg_temp.fireval_peek($1, $2, $3)
"""


class _Statements:
    """The hot-path statements, built once per store (plain SQL valid on SQLite and PostgreSQL).

    They run on the driver's cursor (:class:`~fireval.judging.engine.Driver`), in its
    paramstyle, with positional parameters. The claim queries repeat the partial indexes'
    predicates literally (``open_slots > 0``, ``open_slots < needed``) so SQLite can use those
    indexes. An answer reads what it needs of the item, the annotator's assignment and label in
    one statement, and an item's votes and open assignments in another.
    """

    def __init__(self, postgres: bool) -> None:
        def q(sql: str) -> str:
            return driver_sql(sql, postgres)

        lock = " FOR UPDATE OF i" if postgres else ""
        # PostgreSQL: one claim at a time (see the module doc); a claim is not an answer, so its
        # commit need not wait for the disk (see Handout.next_item): one round trip for both
        self.serialise_claims = (
            q("SET LOCAL synchronous_commit TO OFF; SELECT pg_advisory_xact_lock(?)") if postgres else None
        )
        self.lock_item = q(f"SELECT i.id, i.is_double FROM items i WHERE i.id = ?{lock}")
        # the item (locked), this annotator's assignment of it and their label, if any
        self.answer_state = q(
            "SELECT i.id, i.is_double, a.id, l.id, l.label FROM items i "
            "LEFT JOIN assignments a ON a.item_id = i.id AND a.annotator_id = ? "
            f"LEFT JOIN labels l ON l.item_id = i.id AND l.annotator_id = ? WHERE i.id = ?{lock}"
        )
        # votes (skips are not votes), relevant votes, open assignments of one item
        self.item_counts = q(
            "SELECT COALESCE(SUM(CASE WHEN label <> 'skip' THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN label = 'relevant' THEN 1 ELSE 0 END), 0), "
            "(SELECT count(*) FROM assignments WHERE item_id = ? AND done = ?) "
            "FROM labels WHERE item_id = ?"
        )
        self.set_slots = q("UPDATE items SET needed = ?, open_slots = ? WHERE id = ?")
        # in one statement, first of: the annotator's open assignment (src 0), an item another
        # annotator started that this one can finish (src 1, ix_items_started_id), any item with
        # an open slot in pool order (src 2, ix_items_open_id); each branch stops at its first row
        claim = (
            "SELECT {src}, id, caption, video_id, dataset, CAST(NULL AS INTEGER) FROM items "
            "WHERE open_slots > 0{extra} "
            f"AND {NOT_MINE.format(who='?')} ORDER BY id LIMIT 1"
        )
        self.next_candidate = q(
            "SELECT * FROM (SELECT 0, i.id, i.caption, i.video_id, i.dataset, a.id FROM assignments a "
            "JOIN items i ON i.id = a.item_id WHERE a.annotator_id = ? AND a.done = ? "
            "ORDER BY a.updated_at DESC, a.id DESC LIMIT 1) AS mine "
            f"UNION ALL SELECT * FROM ({claim.format(src=1, extra=' AND open_slots < needed')}) AS started "
            f"UNION ALL SELECT * FROM ({claim.format(src=2, extra='')}) AS fresh "
            "ORDER BY 1 LIMIT 1"
        )
        # read only, for the page's prefetch (Handout.open_items / Handout.peek_claimable): the
        # annotator's open assignments newest first (next_candidate's src 0 order), and the first
        # item they could claim (its src 1 and 2 branches), without taking anything
        self.open_items = q(
            "SELECT i.id, i.caption, i.video_id, i.dataset, a.id FROM assignments a "
            "JOIN items i ON i.id = a.item_id WHERE a.annotator_id = ? AND a.done = ? "
            "ORDER BY a.updated_at DESC, a.id DESC LIMIT 2"
        )
        self.peek_candidate = q(
            f"SELECT * FROM ({claim.format(src=1, extra=' AND open_slots < needed')}) AS started "
            f"UNION ALL SELECT * FROM ({claim.format(src=2, extra='')}) AS fresh "
            "ORDER BY 1 LIMIT 1"
        )
        # the caption of the annotator's newest answer (gold items come between captions only)
        self.last_answered = q(
            "SELECT i.caption FROM labels l JOIN items i ON i.id = l.item_id "
            "WHERE l.annotator_id = ? ORDER BY l.id DESC LIMIT 1"
        )
        # waits for a transaction holding the row, then re-checks the condition on its result
        self.take_slot = q("UPDATE items SET open_slots = open_slots - 1 WHERE id = ? AND open_slots > 0")
        self.finish_assignment = q("UPDATE assignments SET done = ?, updated_at = ? WHERE id = ?")
        self.insert_label = q(
            "INSERT INTO labels (item_id, annotator_id, assignment_id, label, time_spent_ms, created_at, kind) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id"
        )
        self.insert_assignment = q(
            "INSERT INTO assignments (item_id, annotator_id, done, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?) RETURNING id"
        )
        # PostgreSQL: the whole answer and the next item (PG_SUBMIT_FUNCTION)
        # (a statement each connection prepared: no parsing or planning per answer)
        self.pg_submit = "EXECUTE fireval_submit_p(%s, %s, %s, %s, %s, %s, %s)" if postgres else None
