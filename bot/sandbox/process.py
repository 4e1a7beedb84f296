"""What every process of the sandbox is started with: where the project lies (its working
directory and import path) and an environment built from nothing. The bot's client starts
the service with these, the service its zygote and checker processes."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def service_environment() -> dict[str, str]:
    """Built from nothing: no token or other secret of the bot reaches the service."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(PROJECT_ROOT),
        "PYTHONUNBUFFERED": "1",
        "PYTHONWARNINGS": "ignore",
        "OMP_NUM_THREADS": "1",
    }
