"""`tutor sandbox run FILE --json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bot.sandbox.protocol import ERROR, OK, REFUSED
from tests.helpers.paths import REPO


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


def tutor_check(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "bot", "check", *args], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=120)


def test_check_passes_the_reference_and_names_each_mistake(tmp_path):
    from content.loader import DeckLibrary

    card = DeckLibrary.load().card("gradient-accumulation/train-loop")
    reference = tmp_path / "reference.py"
    reference.write_text(card.reference)
    passed = tutor_check(card.id, str(reference), "--json")
    report = json.loads(passed.stdout)
    assert passed.returncode == 0 and report["passed"] and report["mistakes"] == []
    assert set(report) == {"card", "status", "passed", "mistakes", "feedback", "stdout",
                           "elapsed_ms"}
    buggy = tmp_path / "buggy.py"
    buggy.write_text(card.reference.replace("(i + 1) % accumulation_steps",
                                            "i % accumulation_steps"))
    failed = json.loads(tutor_check(card.id, str(buggy), "--json").stdout)
    assert not failed["passed"] and failed["mistakes"] == ["off_by_one_modulo"]
    assert any("instead of" in line for line in failed["feedback"])  # with its numbers
    assert any(line.startswith("Off-by-one") for line in failed["feedback"])  # the deck's


def test_check_reports_the_learners_crash_with_its_line(tmp_path):
    crash = tmp_path / "crash.py"
    crash.write_text("for batch in dataloader:\n    lossy.backward()\n")
    report = json.loads(tutor_check("gradient-accumulation/train-loop", str(crash),
                                    "--json").stdout)
    assert report["status"] == ERROR and not report["passed"]
    assert report["feedback"][0].startswith("line 2: `NameError")


def test_check_needs_a_code_card(tmp_path):
    program = tmp_path / "x.py"
    program.write_text("pass\n")
    result = tutor_check("gradient-accumulation/purpose", str(program))
    assert result.returncode == 2 and "No code card" in result.stderr
