"""Parse cache (fireval.proxies.cache), deduplicated analysis and the memoised tagger."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from fireval.proxies.cache import DB_NAME, ParseCache, default_cache_dir

pytestmark = pytest.mark.usefixtures("private_cache")  # conftest: a private cache directory


class _NoTagger:
    """Stands in for the tagger when everything must come from the cache."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError("the tagger was used although every caption was cached")


def _captions(msrvtt_captions: dict[str, list[str]], n_videos: int) -> list[str]:
    return [c for v in sorted(msrvtt_captions)[:n_videos] for c in msrvtt_captions[v]]


def test_default_cache_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIREVAL_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("FIREVAL_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "x" / "fireval"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "fireval"


def test_tag_memo_equals_nltk_tag(msrvtt_captions: dict[str, list[str]]) -> None:
    from fireval.proxies.tagger import load_tagger, tag_memo
    from fireval.proxies.text import tokenize

    tagger = load_tagger()
    memo: dict[tuple[str, ...], str] = {}
    texts = _captions(msrvtt_captions, 150)
    n = 0
    for t in texts + texts[:200]:  # the second pass is served by the memo
        toks = tokenize(t)
        assert tag_memo(tagger, toks, memo) == [p for _, p in tagger.tag(toks)]
        n += len(toks)
    assert n > 20_000 and len(memo) > 100
    assert tag_memo(tagger, [], memo) == []


def test_tag_batch_equals_nltk_tag(msrvtt_captions: dict[str, list[str]]) -> None:
    from fireval.proxies.tagger import load_tagger, tag_batch
    from fireval.proxies.text import tokenize

    tagger = load_tagger()
    sents = [tokenize(t) for t in _captions(msrvtt_captions, 300)]
    sents += [[], ["a"], ["New York", "is", "big"], ["1999", "12", "well-known", "dogs"], ["the"] * 3]
    got = tag_batch(tagger, sents)
    assert got == [[p for _, p in tagger.tag(list(s))] if s else [] for s in sents]
    assert sum(len(s) for s in sents) > 40_000


def test_analyse_all_dedupes_and_matches_single(pipeline, wn) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.text import TextPipeline

    texts = ["A man is running!", "a man is running", "dogs play", "", "a man  is running"]
    pl = TextPipeline(wordnet=wn)
    got = pl.analyse_all(texts)
    assert got[0] is got[1] is got[4]  # one parse per distinct normalised text
    assert got[3].tokens == () and got[3].tags == () and got[3].lemmas == ()
    for t, a in zip(texts, got):
        assert a == pipeline.analyse(t)


def test_cache_hit_gives_identical_analyses(wn, msrvtt_captions, private_cache: Path) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.text import TextPipeline, default_parse_cache

    texts = _captions(msrvtt_captions, 40)
    with default_parse_cache() as cache:
        first = TextPipeline(wordnet=wn, cache=cache).analyse_all(texts)
        assert cache.misses > 0 and cache.hits == 0
    assert (private_cache / DB_NAME).is_file()
    with default_parse_cache() as cache:
        again = TextPipeline(wordnet=object(), tagger=_NoTagger(), cache=cache).analyse_all(texts)
        assert cache.misses == 0 and cache.hits == len(set(a.tokens for a in first))
    assert again == first
    uncached = TextPipeline(wordnet=wn).analyse_all(texts)
    assert uncached == first


def test_cached_relevance_is_bit_identical(wn, msrvtt_captions) -> None:  # type: ignore[no-untyped-def]
    from fireval.core.collection import Collection
    from fireval.proxies.relevance import video_relevance
    from fireval.proxies.text import TextPipeline, default_parse_cache

    vids = sorted(msrvtt_captions)[:30]
    caps = [c for v in vids for c in msrvtt_captions[v]]
    cv = np.repeat(np.arange(len(vids)), [len(msrvtt_captions[v]) for v in vids])
    coll = Collection(
        name="t", caption_ids=tuple(f"c{i}" for i in range(len(caps))), video_ids=tuple(vids),
        captions=tuple(caps), caption_video=cv,
    )  # fmt: skip
    for proxy in ("bow", "pos"):
        ref = video_relevance(coll, proxy, "max", pipeline=TextPipeline(wordnet=wn)).grades
        for _ in range(2):  # cold, then warm cache
            with default_parse_cache() as cache:
                got = video_relevance(
                    coll, proxy, "max", pipeline=TextPipeline(wordnet=wn, cache=cache)
                ).grades
            assert got.tobytes() == ref.tobytes()


def test_version_change_invalidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fireval.proxies.cache as cache_mod
    from fireval.proxies.text import pipeline_version

    entry = (("DET", "NOUN"), ("a", "dog"))
    with ParseCache(tmp_path, version="v1") as c:
        c.put_many([("a dog", entry)])
        assert c.get_many(["a dog"]) == {"a dog": entry}
    with ParseCache(tmp_path, version="v2") as c:
        assert c.get_many(["a dog"]) == {}
    v = pipeline_version()
    monkeypatch.setattr(cache_mod, "PIPELINE_CODE_VERSION", "analysis-changed")
    assert pipeline_version() != v


def test_corrupt_file_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / DB_NAME
    db.write_bytes(b"this is not a sqlite database" * 100)
    entry = (("VERB",), ("run",))
    with ParseCache(tmp_path, version="v") as c:
        assert c.get_many(["running"]) == {}
        c.put_many([("running", entry)])
        assert c.get_many(["running"]) == {"running": entry}
    assert (tmp_path / (DB_NAME + ".corrupt")).is_file()
    with ParseCache(tmp_path, version="v") as c:
        assert c.get_many(["running"]) == {"running": entry}


def test_bad_rows_are_ignored_and_reparsed(wn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.text import TextPipeline

    with ParseCache(tmp_path, version="v") as c:
        c.put_many([("a dog", (("DET", "NOUN"), ("a", "dog")))])
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute("UPDATE parse SET value = 'DET\x1fNOUN' WHERE text = 'a dog'")
    con.execute("INSERT INTO parse VALUES ('v', 'a cat', 'DET\x1ea')")  # one tag for two tokens
    con.commit()
    con.close()
    with ParseCache(tmp_path, version="v") as c:
        assert c.get_many(["a dog", "a cat"]) == {}
        got = TextPipeline(wordnet=wn, cache=c).analyse_all(["a dog", "a cat"])
    assert got == TextPipeline(wordnet=wn).analyse_all(["a dog", "a cat"])
    with ParseCache(tmp_path, version="v") as c:  # the bad rows were replaced by the reparse
        assert c.get_many(["a dog", "a cat"]) == {" ".join(a.tokens): (a.tags, a.lemmas) for a in got}


def test_unusable_directory_bypasses_cache(wn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.text import TextPipeline

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with ParseCache(blocker / "sub", version="v") as c:  # cannot mkdir under a file
        got = TextPipeline(wordnet=wn, cache=c).analyse_all(["a dog runs"])
        c.put_many([("x", (("X",), ("x",)))])
        assert c.get_many(["x"]) == {}
    assert got == TextPipeline(wordnet=wn).analyse_all(["a dog runs"])


def _writer(directory: str, start: int, n: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    try:
        with ParseCache(directory, version="v") as c:
            for i in range(start, start + n, 10):  # many small transactions, overlapping keys
                c.put_many([(f"w{j} x", (("NOUN", "X"), (f"w{j}", "x"))) for j in range(i, i + 10)])
                got = c.get_many([f"w{j} x" for j in range(i, i + 10)])
                assert len(got) == 10, got
            assert not c._broken
        out.put("ok")
    except BaseException as exc:  # report to the parent
        out.put(repr(exc))


def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), s, 600, q)) for s in (0, 300)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["ok", "ok"]
    keys = [f"w{j} x" for j in range(900)]
    with ParseCache(tmp_path, version="v") as c:
        got = c.get_many(keys)
    assert got == {k: (("NOUN", "X"), (k.split()[0], "x")) for k in keys}
    con = sqlite3.connect(tmp_path / DB_NAME)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


def test_cli_cache_and_no_cache(tmp_path: Path, private_cache: Path) -> None:
    from tests.cli_helpers import exit_code

    csv = tmp_path / "toy.csv"
    csv.write_text(
        "key,vid_key,video_id,sentence\nr0,m0,video0,a man is riding a horse\n"
        "r1,m1,video1,a woman is cooking pasta\nr2,m2,video2,a man rides a horse\n"
    )

    base = ["proxies", "build", "-c", str(csv), "--proxy", "bow"]
    assert exit_code([*base, "-o", str(tmp_path / "a.npz"), "--no-cache"]) == 0
    assert not (private_cache / DB_NAME).exists()
    assert exit_code([*base, "-o", str(tmp_path / "b.npz")]) == 0
    assert (private_cache / DB_NAME).is_file()
    assert exit_code([*base, "-o", str(tmp_path / "c.npz")]) == 0
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "c.npz") as c:
        assert np.array_equal(a["grades"], c["grades"]) and np.array_equal(a["rows"], c["rows"])


def test_light_morphy_equals_nltk_morphy(wn, msrvtt_captions) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.text import tokenize
    from fireval.proxies.wordnet import load_morphy

    m = load_morphy()
    if m is None:
        pytest.skip("WordNet is NLTK's zipped download: the full reader is used")
    words = sorted({w for caps in msrvtt_captions.values() for c in caps for w in tokenize(c)})
    words += [
        "geese",
        "went",
        "better",
        "best",
        "children",
        "mice",
        "abaci",
        "aardwolves",
        "hardrock",
        "xyzzies",
    ]
    assert len(words) > 10_000
    bad = [(w, p) for w in words for p in "nvar" if m.morphy(w, p) != wn.morphy(w, p)]
    assert bad == []
    # every base form (NLTK's _morphy, whose shortest is WordNetLemmatizer's lemma, Wray's SYN)
    bad_forms = [(w, p) for w in words for p in "nv" if m.base_forms(w, p) != wn._morphy(w, p)]
    assert bad_forms == []
    assert m.morphy("geese", "n") == "goose" and m.morphy("ran", "v") == "run"


def test_lemma_pipeline_without_full_wordnet_matches(wn, msrvtt_captions) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.text import TextPipeline

    texts = _captions(msrvtt_captions, 30)
    light = TextPipeline()  # default: lemmas from the index reader, full WordNet never loaded
    assert light.analyse_all(texts) == TextPipeline(wordnet=wn).analyse_all(texts)
    assert light._wn is None


def _first_opener(directory: str, start: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    c = ParseCache(directory, version="v")
    c.put_many([(f"w{j} x", (("NOUN", "X"), (f"w{j}", "x"))) for j in range(start, start + 10)])
    got = c.get_many([f"w{j} x" for j in range(start, start + 10)])
    out.put((len(got), c._broken))
    c.close()


def test_many_processes_create_the_cache_at_once(tmp_path: Path) -> None:
    """Six processes open a cache that does not exist yet, 50 times: none may fall back to
    "broken" (before the set-up lock, the WAL switch and table creation raced: 5 of 500 such
    rounds had a process get SQLITE_BUSY without waiting)."""
    ctx = mp.get_context("fork")
    failures = []
    for trial in range(50):
        d = tmp_path / f"c{trial}"
        q = ctx.Queue()
        procs = [ctx.Process(target=_first_opener, args=(str(d), 10 * i, q)) for i in range(6)]
        for p in procs:
            p.start()
        results = [q.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        failures += [(trial, r) for r in results if r != (10, False)]
    assert failures == []
