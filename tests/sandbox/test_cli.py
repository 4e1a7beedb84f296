"""`tutor sandbox run FILE --json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bot.sandbox.protocol import ERROR, OK, REFUSED
from tests.conftest import REPO


def tutor_sandbox(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "bot", "sandbox", "run", *args],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


def test_cli_runs_a_file_and_prints_json(tmp_path):
    program = tmp_path / "loop.py"
    program.write_text("import torch\nprint(torch.ones(2).sum().item(), device)\n")
    result = tutor_sandbox(str(program), "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 0
    assert set(report) >= {"status", "exit_code", "stdout", "stderr", "elapsed_ms"}
    assert (report["status"], report["stdout"]) == (OK, "2.0 cpu\n")


def test_cli_refuses_non_utf8_and_reports_errors(tmp_path):
    binary = tmp_path / "blob.py"
    binary.write_bytes(b"\xff\xfe\x00print(1)")
    refused = json.loads(tutor_sandbox(str(binary), "--json").stdout)
    assert refused["status"] == REFUSED and "UTF-8" in refused["stderr"]
    failing = tmp_path / "fail.py"
    failing.write_text("raise ValueError('nope')\n")
    result = tutor_sandbox(str(failing), "--json")
    assert result.returncode == 1 and json.loads(result.stdout)["status"] == ERROR


def test_cuda_falls_back_to_the_cpu_with_a_note(tmp_path):
    program = tmp_path / "gpu.py"
    program.write_text("print(device)\n")
    report = json.loads(tutor_sandbox(str(program), "--device", "cuda", "--json").stdout)
    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("a GPU is present: the CUDA path is covered by test_cuda.py")
    assert report["stdout"] == "cpu\n" and "No GPU" in report["note"]
