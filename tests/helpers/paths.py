from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
# The community deck the Discord tests upload (tensor-basics).
COMMUNITY_DECK = (FIXTURES / "community.yaml").read_text(encoding="utf-8")
