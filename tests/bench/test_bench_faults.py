"""`tutor bench faults` stays runnable: two faults, with the tests' short timings. What each
row says is asserted (a fault of ours costs nothing and shows), never its timings."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers.paths import REPO


def test_bench_faults_reports_what_the_learner_and_the_operator_see():
    result = subprocess.run(
        [sys.executable, "-m", "bot", "bench", "faults", "--json", "--fast",
         "--only", "no_host,redis_down"],
        capture_output=True, text=True, cwd=REPO, timeout=600)
    assert result.stdout, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["benchmark"] == "faults" and report["timing"]["heartbeat_s"] == 0.5
    rows = {row["fault"]: row for row in report["faults"]}
    assert list(rows) == ["no_host", "redis_down"]
    for row in rows.values():
        assert row["learner_sees"].startswith("Your code was not judged: "), row
        assert row["recorded"] is False and row["ok"] is True
        assert row["operator_sees"]["status"] == "degraded" and row["operator_sees"]["log"]
        assert row["recovery_s"] > 0
    assert "no sandbox host in pool cpu" in rows["no_host"]["operator_sees"]["reasons"][0]
    assert rows["redis_down"]["operator_sees"]["reasons"][0].startswith("redis: cannot reach")
    assert report["ok"] is True and result.returncode == 0
