"""Regressions found by fresh-eyes QA of the readers (TREC field counts, score-matrix messages, DataFrames)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from fireval.core import Collection, InputError
from fireval.formats import read_scores, read_trec_qrels, read_trec_run
from fireval.formats.scores import frame_scores


def _coll(nc: int = 6, nv: int = 3) -> Collection:
    pairs = [(f"c{i}", f"v{i % nv}", f"caption {i}") for i in range(nc)]
    return Collection.from_pairs("x", pairs, video_ids=[f"v{j}" for j in range(nv)])


def _run_lines(coll: Collection) -> list[str]:
    return [
        f"{c} Q0 {v} {r + 1} {1.0 / (r + 1)!r} tag"
        for c in coll.caption_ids
        for r, v in enumerate(coll.video_ids)
    ]


@pytest.mark.parametrize("where", [0, 7])
def test_run_line_with_too_many_fields_is_an_error_naming_it(tmp_path, where) -> None:
    """pandas used to drop the 7th field with a ParserWarning and read the file as valid."""
    coll = _coll()
    lines = _run_lines(coll)
    lines[where] += " extra"
    path = tmp_path / "x.run"
    path.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ParserWarning may leak either
        with pytest.raises(InputError, match=r"expected 6 fields in a run line, found 7") as ei:
            read_trec_run(path, coll)
    assert f"x.run:{where + 1}:" in str(ei.value)


def test_qrels_line_with_too_many_fields_is_an_error(tmp_path) -> None:
    coll = _coll()
    path = tmp_path / "x.qrels"
    path.write_text("c0 0 v0 1\nc1 0 v1 1 oops\n")
    with pytest.raises(InputError, match=r"x\.qrels:2: expected 4 fields in a qrels line, found 5"):
        read_trec_qrels(path, coll)


def test_well_formed_files_still_read(tmp_path) -> None:
    coll = _coll()
    path = tmp_path / "ok.run"
    path.write_text("\n".join(_run_lines(coll)) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = read_trec_run(path, coll)
    assert run.lists is not None and run.lists.docs.size == coll.n_captions * coll.n_videos


def test_transposed_qrels_get_a_hint(tmp_path) -> None:
    coll = _coll()
    path = tmp_path / "v2t.qrels"
    path.write_text("v1 0 c0 1\n")
    with pytest.raises(InputError, match=r"qrels look transposed.*direction='v2t'"):
        read_trec_qrels(path, coll)
    j = read_trec_qrels(path, coll, direction="v2t")
    assert j.matrix("t2v").toarray()[0, 1] == 1


def test_nan_message_counts_the_matrix_and_names_the_rows(tmp_path) -> None:
    """It used to say '1000 bad values in rows 0-999' (the scan chunk) for one NaN row."""
    coll = _coll(6, 3)
    s = np.zeros((6, 3))
    s[2] = np.nan
    np.save(tmp_path / "row.npy", s)
    with pytest.raises(
        InputError, match=r"at row 2 \('c2'\), column 0 \('v0'\); 3 NaN/\+inf values in row 2\."
    ):
        read_scores(tmp_path / "row.npy", coll)
    s = np.zeros((6, 3))
    s[1, 2], s[5, 0] = np.inf, np.nan
    np.save(tmp_path / "two.npy", s)
    with pytest.raises(InputError, match=r"\+inf at row 1 .* 2 NaN/\+inf values in 2 rows between 1 and 5"):
        read_scores(tmp_path / "two.npy", coll)


def test_nan_count_spans_scan_chunks(tmp_path, monkeypatch) -> None:
    import fireval.formats.scores as sc

    monkeypatch.setattr(sc, "_CHUNK_ELEMS", 3)  # one row per chunk
    coll = _coll(6, 3)
    s = np.zeros((6, 3))
    s[0, 0] = s[4, 1] = s[4, 2] = np.nan
    np.save(tmp_path / "s.npy", s)
    with pytest.raises(InputError, match=r"3 NaN/\+inf values in 2 rows between 0 and 4"):
        read_scores(tmp_path / "s.npy", coll)


def test_npz_of_objects_says_how_to_save_ids(tmp_path) -> None:
    coll = _coll()
    np.savez(tmp_path / "o.npz", scores=np.zeros((6, 3)), query_ids=np.array(coll.caption_ids, dtype=object))
    with pytest.raises(InputError, match=r"never unpickles.*dtype=str"):
        read_scores(tmp_path / "o.npz", coll)


def test_npz_ids_of_the_other_side_point_to_the_direction(tmp_path) -> None:
    coll = _coll()
    s = np.arange(18, dtype=np.float64).reshape(3, 6)
    np.savez(
        tmp_path / "t.npz",
        scores=s,
        query_ids=np.array(coll.video_ids),
        doc_ids=np.array(coll.caption_ids),
    )
    with pytest.raises(InputError, match=r"names video ids .* --run-direction v2t"):
        read_scores(tmp_path / "t.npz", coll)
    assert np.array_equal(read_scores(tmp_path / "t.npz", coll, direction="v2t").scores, s.T)


def test_frame_labels_win_over_positions() -> None:
    coll = _coll()
    rng = np.random.default_rng(0)
    s = rng.random((6, 3))
    df = pd.DataFrame(s, index=list(coll.caption_ids), columns=list(coll.video_ids))
    shuffled = df.iloc[[3, 0, 5, 1, 4, 2], [2, 0, 1]]
    assert np.array_equal(frame_scores(shuffled, coll), s)
    assert np.array_equal(frame_scores(df, coll), s)
    # default labels: positions; an integer index that permutes 0..n-1: collection positions
    assert np.array_equal(frame_scores(pd.DataFrame(s), coll), s)
    assert np.array_equal(frame_scores(pd.DataFrame(s).iloc[::-1], coll), s)
    # v2t orientation: rows are videos
    assert np.array_equal(frame_scores(df.T, coll, "v2t"), s.T)


def test_frame_with_wrong_labels_is_refused() -> None:
    coll = _coll()
    df = pd.DataFrame(np.zeros((6, 3)), index=list(coll.caption_ids), columns=list(coll.video_ids))
    with pytest.raises(InputError, match=r"index \(rows\) are video ids .* looks transposed"):
        frame_scores(df.T, coll)
    with pytest.raises(InputError, match=r"unknown caption id 'zz'"):
        frame_scores(df.rename(index={"c3": "zz"}), coll)
    with pytest.raises(InputError, match=r"lists 5 caption ids but the collection has 6"):
        frame_scores(df.iloc[:5], coll)


def test_only_the_1k_a_split_is_named_msrvtt_1ka(tmp_path, shared_data) -> None:
    """Any JSFusion-layout CSV (a subset, a train file) used to be named 'msrvtt-1ka' in every table."""
    from fireval.formats import read_collection

    real = read_collection(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv")
    assert real.name == "msrvtt-1ka"
    path = tmp_path / "sub.csv"
    path.write_text("key,vid_key,video_id,sentence\nret0,msr1,video1,a dog\nret1,msr1,video1,a cat\n")
    sub = read_collection(path)
    assert sub.name == "msrvtt-jsfusion" and sub.shape == (2, 1)
