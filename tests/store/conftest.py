"""Fixtures of the store's tests: ``db``, a database path in the test's directory, and
``store``, the store open on it (closed at teardown)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.store import DB_NAME, Store


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / DB_NAME


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with Store(db) as s:
        yield s
