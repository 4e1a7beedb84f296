"""What crosses between the bot, the sandbox worker and its children: JSON lines.

A submission is {"id", "code", "mode": "run"|"check", "checker", "device"}; a result
is {"id", "status", "exit_code", "stdout", "stderr", "elapsed_ms", ...}. Statuses are
DESIGN.md's: ok, error, timeout, memory, output_limit, refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

OK, ERROR, TIMEOUT, MEMORY, OUTPUT_LIMIT, REFUSED = (
    "ok", "error", "timeout", "memory", "output_limit", "refused")
STATUSES = (OK, ERROR, TIMEOUT, MEMORY, OUTPUT_LIMIT, REFUSED)
LEARNER_FILE = "<your code>"


@dataclass(frozen=True)
class Limits:
    """Per-submission limits. Memory is a cgroup limit where cgroups exist, and an
    RLIMIT_DATA allowance above the forked image everywhere."""

    wall_s: float = 10.0
    cpu_s: int = 12  # above wall_s: a busy loop meets the wall-clock limit first
    memory_mb: int = 768
    data_mb: int = 384
    pids: int = 32
    file_mb: int = 8
    open_files: int = 64
    tmpfs_mb: int = 16
    output_keep_bytes: int = 16_384
    output_max_bytes: int = 1_048_576
    code_max_bytes: int = 65_536
    gpu_memory_fraction: float = 0.25


def encode(message: dict) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> dict:
    return json.loads(line)


def refused(reason: str) -> dict:
    return {"status": REFUSED, "exit_code": None, "stdout": "", "stderr": reason,
            "elapsed_ms": 0.0}
