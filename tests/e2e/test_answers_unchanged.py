"""Every HTTP answer is what tests/golden/answers.json recorded: some 300 requests over every
endpoint (tests/support/answer_requests.py), against a default build and a server both run
under a frozen clock (libfaketime), compared by status, headers and body (SHA-256).

It knows nothing of the code's layout (only `python -m pipeline build`, `python -m server`
and HTTP), so it holds across reorganisations and performance work: any answer that changes
by one byte fails it, naming the request.

Re-record after an intended change (and review the diff of the file):
    WEATHERAPI_RECORD_ANSWERS=1 .venv/bin/python -m pytest tests/e2e/test_answers_unchanged.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import answers

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "answers.json"
RECORD = os.environ.get("WEATHERAPI_RECORD_ANSWERS") == "1"


@pytest.fixture(scope="module")
def frozen_server(module_tmp):
    """A server under the frozen clock over a default build made under it (about 45 s)."""
    build_dir = answers.build(module_tmp("golden-build"))
    keys_file = answers.write_keys_file(module_tmp("golden-keys") / "private")
    with answers.server(build_dir, keys_file) as srv:
        # Long enough for numba to compile the kernels should its cache be cold.
        srv.wait_ready(timeout=600)
        yield srv


def test_every_answer_is_the_recorded_one(frozen_server, tmp_path):
    records, bodies = answers.replay(frozen_server.url)
    if RECORD:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(answers.dumps(records))
        pytest.skip(f"recorded {len(records)} answers into {GOLDEN}")
    assert GOLDEN.exists(), "no golden answers: record them with WEATHERAPI_RECORD_ANSWERS=1"
    golden = answers.loads(GOLDEN.read_text())
    changed = answers.differences(golden, records, bodies)
    if changed:
        now = tmp_path / "answers.json"
        now.write_text(answers.dumps(records))
        pytest.fail(
            f"{len(changed)} of {len(records)} answers differ from {GOLDEN.name} "
            f"(these answers: {now}; if intended, re-record as the module docstring "
            "says):\n" + "\n".join(changed),
            pytrace=False,
        )
