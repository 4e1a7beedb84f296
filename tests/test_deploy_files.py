"""The Dockerfile and compose.yaml refer to things that exist (no Docker engine here)."""

from __future__ import annotations

import re

import yaml

from bot.cli.main import build_parser
from tests.helpers.paths import REPO


def test_dockerfile_copies_existing_paths_and_runs_real_commands():
    text = (REPO / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (?!--)(\S+)", text, re.M):
        assert (REPO / source).exists(), source
    assert 'CMD ["tutor", "run"]' in text and "USER tutor" in text
    assert "HEALTHCHECK" in text and "/healthz" in text
    assert "torch==2.13.0" in text and "whl/cpu" in text


def test_compose_services_use_real_tutor_commands():
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"bot", "sandbox", "postgres"}
    command = services["sandbox"]["command"]
    assert command[0] == "tutor"
    args = build_parser().parse_args(command[1:])
    assert args.listen == "unix:/sock/sandbox.sock"
    assert services["bot"]["environment"]["SANDBOX_ADDRESS"] == args.listen
    assert services["postgres"]["profiles"] == ["postgres"]
    # cgroup v2 delegation: a writable cgroupfs and a cgroup namespace of the worker's own.
    assert services["sandbox"]["privileged"] is True
    assert services["sandbox"]["cgroup"] == "private"
