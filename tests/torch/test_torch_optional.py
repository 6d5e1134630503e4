"""torch stays optional: importing fireval, fireval.torch and the CLI, and evaluating numpy
scores, load no torch; a tensor is recognised without importing torch."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import json, sys
import numpy as np
import fireval, fireval.torch, fireval.cli
from fireval.torch import is_tensor
ev = fireval.evaluate(np.eye(3), labels=None, collection=fireval.api.load_collection(None).__class__(
    name="t", video_ids=("a", "b", "c"), caption_ids=("x", "y", "z"), captions=("1", "2", "3"),
    caption_video=np.arange(3)))
print(json.dumps({"torch": "torch" in sys.modules, "tensor": is_tensor(np.eye(2)), "r1": ev.value("R@1")}))
"""


def test_no_torch_unless_a_tensor_is_passed() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"torch": False, "tensor": False, "r1": 1.0}
