from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


@pytest.fixture
def lesson_path() -> Path:
    return SCENARIOS / "lesson.yaml"


@pytest.fixture
def race_text() -> str:
    return (SCENARIOS / "race.yaml").read_text(encoding="utf-8")
