"""`tutor ...` run as a learner or operator runs it: a fresh process, no token, no database URL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO


def tutor(*args: str, cwd: Path = REPO, stdin: str = "", env: dict[str, str] | None = None,
          timeout: float = 60) -> subprocess.CompletedProcess:
    """`env`: settings of this run's own (SANDBOX_ADDRESS=...), over the environment's;
    `timeout`: more for a run that tries several exercises in the sandbox."""
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DISCORD_TOKEN")}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], input=stdin, capture_output=True, text=True,
        cwd=cwd, env={**base, **(env or {}), "PYTHONPATH": str(REPO)}, timeout=timeout,
    )
