"""`make check`'s choice of tests (tools/changed_tests.py, issue 60 §6)."""

from __future__ import annotations

import pytest

from tools.changed_tests import EDGE, SCHEMA
from tools.changed_tests import tests_for as pick  # (not collected as a test)

pytestmark = pytest.mark.any_model


def test_a_change_picks_the_tests_that_touch_it() -> None:
    assert pick({"tests/test_answers.py"}) == ["tests/test_answers.py"]
    picked = pick({"py_client/hipocampo/db/tenant_copy.py"})
    assert "tests/test_tenant_copy.py" in picked and "tests/test_answers.py" not in picked
    assert pick({"supabase/functions/ask/index.ts"}) == sorted(EDGE)
    assert pick({"supabase/schemas/10_answers_1_evidence.sql"}) == sorted(SCHEMA)
    assert pick({"README.md"}) == []
