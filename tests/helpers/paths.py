from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
# The community deck the tests upload (tensor-basics), an example deck of the project's.
COMMUNITY_DECK_FILE = REPO / "content" / "examples" / "tensor-basics.yaml"
COMMUNITY_DECK = COMMUNITY_DECK_FILE.read_text(encoding="utf-8")
