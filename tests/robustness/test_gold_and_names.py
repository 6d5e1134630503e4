"""Gold answers never change silently; annotator names cannot forge listings (issue 26, items 4, 5).

- A gold file giving one pair two answers is refused, naming both lines (it used to load with the
  first answer kept).
- Reloading a gold file that changes an answer is refused unless ``--replace``; with it the
  answer changes, the change is recorded in ``gold_item_events`` and annotators' answers are
  scored against the new answer.
- ``add-annotator`` refuses control characters (newline, tab, ESC); ``judgments annotators``
  escapes whatever a store already holds.
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from fireval.cli import main
from fireval.judging import schema as S
from fireval.judging.store import Store


def _run(args, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def _gold(path, *answers) -> None:
    path.write_text(
        "".join(json.dumps({"caption": c, "video_id": v, "answer": a}) + "\n" for c, v, a in answers)
    )


@pytest.fixture()
def db(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _run(["judgments", "init", "--db", "s.db"], capsys)[0] == 0
    return tmp_path / "s.db"


def test_two_answers_in_one_file_name_both_lines(db, tmp_path, capsys):
    _gold(
        tmp_path / "g.jsonl",
        ("a man", "v1", "relevant"),
        ("a dog", "v2", "relevant"),
        ("A man.", "v1", "irrelevant"),
    )
    code, _, err = _run(["judgments", "load", "--gold", "g.jsonl", "--db", "s.db"], capsys)
    assert code == 2 and "line 1" in err and "line 3" in err and len(err.strip().splitlines()) == 1
    st = Store(str(db), create=False)
    try:
        with st.db.reading() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(S.gold_items)).scalar_one() == 0
    finally:
        st.close()


def test_changed_answer_needs_replace_and_is_audited(db, tmp_path, capsys):
    _gold(tmp_path / "g1.jsonl", ("a man", "v1", "relevant"), ("a dog", "v2", "irrelevant"))
    _gold(tmp_path / "g2.jsonl", ("a man", "v1", "irrelevant"), ("a dog", "v2", "irrelevant"))
    assert _run(["judgments", "load", "--gold", "g1.jsonl", "--db", "s.db"], capsys)[0] == 0
    st = Store(str(db), create=False)
    ann, _ = st.add_annotator("ann")
    with st.db.engine.begin() as conn:  # ann answered the first gold item 'relevant' (right, for now)
        gid = conn.execute(sa.select(S.gold_items.c.id).where(S.gold_items.c.video_id == "v1")).scalar_one()
        conn.execute(
            S.gold_answers.insert().values(
                gold_id=gid,
                annotator_id=ann.id,
                label="relevant",
                correct=True,
                shown_at=sa.func.now(),
                current="relevant",
            )
        )
    st.close()
    code, _, err = _run(["judgments", "load", "--gold", "g2.jsonl", "--db", "s.db"], capsys)
    assert code == 2 and "--replace" in err and "line 1" in err and "'relevant'" in err, err
    code, out, _ = _run(["judgments", "load", "--gold", "g2.jsonl", "--db", "s.db", "--replace"], capsys)
    assert code == 0 and "1 answers replaced" in out
    st = Store(str(db), create=False)
    try:
        with st.db.reading() as conn:
            assert (
                conn.execute(sa.select(S.gold_items.c.answer).where(S.gold_items.c.id == gid)).scalar_one()
                == "irrelevant"
            )
            ev = conn.execute(sa.select(S.gold_item_events)).mappings().all()
            assert [(e["gold_id"], e["action"], e["answer"], e["previous"], e["source"]) for e in ev] == [
                (gid, "replace", "irrelevant", "relevant", "g2.jsonl")
            ]
            assert conn.execute(sa.select(S.gold_answers.c.correct)).scalar_one() is False
    finally:
        st.close()
    code, _, err = _run(["judgments", "load", "pool.jsonl", "--db", "s.db", "--replace"], capsys)
    assert code == 2


@pytest.mark.parametrize(
    "name", ["x\nfake\tadmin\tTOKEN", "x\x1b]0;pwned\x07", "a\tb", "a\rb", "a\u2028b", "a\u202eb"]
)
def test_control_characters_in_names_are_refused(db, capsys, name):
    code, out, err = _run(["judgments", "add-annotator", name, "--db", "s.db"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "\x1b" not in err and out == ""


def test_listing_escapes_names_already_stored(db, capsys):
    st = Store(str(db), create=False)
    with st.db.engine.begin() as conn:  # a store written before names were checked
        conn.execute(
            S.annotators.insert().values(
                name="x\nfake\tadmin\x1b[31m",
                token_hash="0" * 64,
                role="annotator",
                active=True,
                created_at=sa.func.now(),
            )
        )
    st.close()
    code, out, _ = _run(["judgments", "annotators", "--db", "s.db"], capsys)
    assert code == 0
    lines = out.strip().splitlines()
    assert len(lines) == 2 and "\x1b" not in out and lines[1].count("\t") == 4
    assert lines[1].startswith("x\\nfake\\tadmin\\x1b[31m\t")
