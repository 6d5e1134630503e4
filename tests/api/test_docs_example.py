"""The training-loop example of docs/api.md runs as written (with a stand-in model and logger)."""

from __future__ import annotations

import contextlib
import re
import types
from pathlib import Path

import numpy as np
import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _example() -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- training-loop.*?-->\s*```python\n(.*?)```", text, re.S)
    assert m, "docs/api.md lost its training-loop example"
    return m.group(1)


def test_training_loop_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = _example()
    assert len(code.strip().splitlines()) <= 10
    try:
        import torch

        to_tensor = torch.from_numpy
    except ImportError:  # the example still runs on numpy arrays; only `torch.no_grad` is needed
        torch = types.SimpleNamespace(no_grad=contextlib.nullcontext)  # type: ignore[assignment]
        to_tensor = np.asarray  # type: ignore[assignment]
    rng = np.random.default_rng(0)
    text = rng.standard_normal((1000, 32)).astype(np.float32)
    logged: list[tuple[dict[str, float], int]] = []

    class Model:
        epoch = 0

    def train_one_epoch(model: Model) -> None:
        model.epoch += 1

    def encode_text(model: Model):  # type: ignore[no-untyped-def]
        return to_tensor(text)

    def encode_videos(model: Model):  # type: ignore[no-untyped-def]
        noise = rng.standard_normal(text.shape).astype(np.float32) * (3.0 / model.epoch)
        return to_tensor(text + noise)  # better each epoch

    logger = types.SimpleNamespace(log=lambda d, step: logged.append((d, step)))
    ns = {
        "epochs": 3,
        "model": Model(),
        "train_one_epoch": train_one_epoch,
        "encode_text": encode_text,
        "encode_videos": encode_videos,
        "logger": logger,
        "torch": torch,
    }
    exec(compile(code, str(DOC), "exec"), ns)
    assert [step for _, step in logged] == [0, 1, 2]
    first, last = logged[0][0], logged[-1][0]
    assert {"t2v/R@1", "t2v/MdR", "v2t/R@10", "both/meanR"} <= set(first)
    assert last["t2v/R@1"] > first["t2v/R@1"]  # the stand-in model improves
    assert all(0 <= v <= 100 for k, v in last.items() if "@" in k)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[0].startswith("epoch 0: t2v R@1 ")
