"""A service's reply read at the client's edge: typed, and never a crash, whatever it holds
(an older service, or a hostile one)."""

from __future__ import annotations

import pytest

from bot.sandbox.protocol import (
    ERROR,
    OK,
    CheckReport,
    Malformed,
    RaisedError,
    RunResult,
    ServiceInfo,
    busy,
    failed,
    refused,
)


def test_a_checked_result_reads_as_attributes():
    result = RunResult.from_wire({
        "status": ERROR, "exit_code": 1, "stdout": "hi\n", "stderr": "", "elapsed_ms": 5.5,
        "error": "ValueError: x", "line": 2, "note": "No GPU", "device": "cpu",
        "report": {"status": "error", "passed": False, "mistakes": ["m"], "feedback": ["f"],
                   "error": {"type": "ValueError", "message": "x", "line": 2}}})
    assert result == RunResult(ERROR, 1, "hi\n", "", 5.5, "ValueError: x", 2, "No GPU", "cpu",
                               False, CheckReport("error", False, ("m",), ("f",),
                                                  RaisedError("ValueError", "x", 2)))


def test_what_the_service_builds_reads_back_the_same():
    assert RunResult.from_wire(refused("no")) == RunResult("refused", stderr="no")
    assert RunResult.from_wire(failed("down", "crash")) == RunResult(ERROR, stderr="down",
                                                                  unjudged="crash")
    assert RunResult.from_wire(busy("wait")).busy is True


def test_missing_fields_take_their_defaults():
    result = RunResult.from_wire({"status": OK, "report": {}})
    assert (result.stdout, result.stderr, result.exit_code, result.elapsed_ms) == (
        "", "", None, 0.0)
    assert result.report == CheckReport(OK, False, (), (), None)


@pytest.mark.parametrize("reply", [
    {}, {"status": "won"}, {"status": OK, "stdout": 3}, {"status": OK, "exit_code": "0"},
    {"status": OK, "line": True}, {"status": OK, "report": "passed"},
    {"status": OK, "report": {"feedback": "all good"}},
    {"status": OK, "report": {"mistakes": [1]}}, {"status": OK, "report": {"error": "x"}},
    {"status": OK, "elapsed_ms": "fast"}, {"status": ["ok"]}])
def test_a_reply_of_the_wrong_shape_is_an_error_that_says_so(reply):
    result = RunResult.from_wire(reply)
    assert result.status == ERROR and result.report is None
    assert result.error.startswith("the sandbox sent a result this bot cannot read")


def test_the_service_info_is_typed_and_an_older_service_keeps_the_defaults():
    info = ServiceInfo.from_wire({"gpu": True, "cgroups": "v2", "limits": {"cgroup": "v2"},
                                  "memory_limited": True, "runs_code": True, "slots": 4,
                                  "pid": 10, "zygote_pid": 11})
    assert (info.gpu, info.cgroups, info.slots, info.pid, info.runs_code) == (
        True, "v2", 4, 10, True)
    assert ServiceInfo.from_wire({}) == ServiceInfo()  # says nothing: it runs code, no GPU
    assert ServiceInfo.from_wire({"runs_code": False}).runs_code is False


@pytest.mark.parametrize("message", [{"runs_code": "yes"}, {"gpu": 1}, {"limits": []},
                                     {"pid": "10"}, {"cgroups": 2}])
def test_a_service_info_of_the_wrong_shape_is_refused(message):
    with pytest.raises(Malformed):
        ServiceInfo.from_wire(message)
