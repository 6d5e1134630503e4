"""``fireval serve --video-url-template`` says at start that annotators can see video ids.

The blind video tokens (:mod:`fireval.judging.blinding`) cover only the app's own ``/videos``
route (``--video-dir``); a URL template puts the dataset's video id in every annotator's video
URL. The server itself is stubbed (``fireval.web.workers.serve``), as in tests/web.
"""

from __future__ import annotations

import pytest

from fireval.judging.store import Store


def _start(monkeypatch, capsys, tmp_path, *extra: str) -> str:
    import fireval.web.workers as workers
    from fireval.cli import main

    got: dict[str, object] = {}
    monkeypatch.setattr(workers, "serve", lambda cfg, *a: got.setdefault("cfg", cfg))
    db = f"sqlite:///{tmp_path / 's.db'}"
    Store(db).close()
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["serve", "--db", db, "--port", "0", *extra])
    assert not done.value.code and "cfg" in got
    return capsys.readouterr().err


def test_url_template_warns_once(monkeypatch, capsys, tmp_path) -> None:
    err = _start(monkeypatch, capsys, tmp_path, "--video-url-template", "https://cdn.example/{video_id}.mp4")
    lines = [ln for ln in err.splitlines() if "video ids" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: --video-url-template"), err
    assert "blind judging needs --video-dir" in lines[0]
    assert err.index("video ids") < err.index("fireval serving")  # at start, before serving


@pytest.mark.parametrize("video_dir", [False, True])
def test_video_dir_or_no_videos_is_silent(monkeypatch, capsys, tmp_path, video_dir: bool) -> None:
    extra = ["--video-dir", str(tmp_path)] if video_dir else []
    err = _start(monkeypatch, capsys, tmp_path, *extra)
    assert "video ids" not in err and "fireval serving" in err, err
