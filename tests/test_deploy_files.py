"""The Dockerfile and compose.yaml refer to things that exist (no Docker engine here)."""

from __future__ import annotations

import argparse
import re

import yaml

from bot.cli.main import build_parser
from bot.cli.sandbox import ACL_PASSWORDS, cmd_sandbox_acl, cmd_sandbox_serve
from bot.sandbox.broker import REDIS_SETTINGS
from tests.helpers.paths import REPO


def test_dockerfile_copies_existing_paths_and_runs_real_commands():
    text = (REPO / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (?!--)(\S+)", text, re.M):
        assert (REPO / source).exists(), source
    assert 'CMD ["tutor", "run"]' in text and "USER tutor" in text
    assert "HEALTHCHECK" in text and "/healthz" in text
    assert "torch==2.13.0" in text and "whl/cpu" in text


def _compose() -> dict:
    return yaml.safe_load((REPO / "compose.yaml").read_text())["services"]


def _tutor_args(command: list[str]) -> argparse.Namespace:
    assert command[0] == "tutor"
    return build_parser().parse_args(command[1:])


def test_compose_services_use_real_tutor_commands():
    services = _compose()
    assert set(services) == {"bot", "redis-acl", "redis", "sandbox", "sandbox-gpu", "postgres",
                             "web"}
    assert services["postgres"]["profiles"] == ["postgres"]
    assert services["web"]["profiles"] == ["web"]
    assert services["sandbox-gpu"]["profiles"] == ["gpu"]
    for host, device in (("sandbox", "cpu"), ("sandbox-gpu", "cuda")):
        args = _tutor_args(services[host]["command"])
        assert args.func is cmd_sandbox_serve and args.device == device
        # The broker URL (with its password) comes from the environment, never argv.
        assert args.broker is None
        assert services[host]["environment"]["SANDBOX_BROKER"].startswith(
            "redis://tutor-sandbox:${REDIS_SANDBOX_PASSWORD")
        # Started once Redis has loaded its data and lets users in (its healthcheck).
        assert services[host]["depends_on"] == {"redis": {"condition": "service_healthy"}}
        # cgroup v2 delegation: a writable cgroupfs and a cgroup namespace of the worker's own.
        assert services[host]["privileged"] is True
        assert services[host]["cgroup"] == "private"
    assert services["sandbox"]["deploy"]["replicas"] == 2
    gpu_build = services["sandbox-gpu"]["build"]["args"]
    assert set(gpu_build) <= set(re.findall(r"^ARG (\w+)", (REPO / "Dockerfile").read_text(), re.M))
    assert services["bot"]["environment"]["SANDBOX_ADDRESS"].startswith(
        "redis://tutor-bot:${REDIS_BOT_PASSWORD")
    assert "volumes" not in services["sandbox"]  # no shared socket: the hosts reach Redis


def _volume(service: dict, path: str) -> str:
    """The named volume mounted at `path` in the service."""
    return next(v.split(":")[0] for v in service["volumes"] if v.split(":")[1] == path)


def test_redis_starts_with_the_acl_file_the_one_shot_service_writes():
    services = _compose()
    acl, redis = services["redis-acl"], services["redis"]
    script = acl["command"][-1]
    assert "tutor sandbox acl > /acl/users.acl" in script
    assert _tutor_args(["tutor", "sandbox", "acl"]).func is cmd_sandbox_acl
    assert set(acl["environment"]) == set(ACL_PASSWORDS)
    assert redis["image"].startswith("redis:7")
    assert redis["depends_on"] == {"redis-acl": {"condition": "service_completed_successfully"}}
    command = redis["command"]
    assert command[command.index("--aclfile") + 1] == "/acl/users.acl"
    assert command[command.index("--appendonly") + 1] == "yes"
    for name, value in REDIS_SETTINGS.items():  # what the fleet asks of redis-server
        assert command[command.index(f"--{name}") + 1] == value
    assert _volume(acl, "/acl") == _volume(redis, "/acl")
    assert _volume(redis, "/data") == "redis-data"


def test_compose_holds_no_redis_password():
    text = (REPO / "compose.yaml").read_text()
    passwords = re.findall(r"rediss?://[^:/@\s]+:([^@\n]+)@", text)
    assert passwords and all(re.fullmatch(r"\$\{REDIS_(BOT|SANDBOX)_PASSWORD:\?[^}]*\}", p)
                             for p in passwords), passwords
    # Only the ACL writer sees both; Redis checks its own health as the bots' user.
    assert re.findall(r"REDIS_SANDBOX_PASSWORD: (.*)", text) == [
        "${REDIS_SANDBOX_PASSWORD:?set REDIS_SANDBOX_PASSWORD in .env}"]
    assert re.findall(r"REDIS_BOT_PASSWORD: (.*)", text) == [
        "${REDIS_BOT_PASSWORD:?set REDIS_BOT_PASSWORD in .env}"] * 2


def test_the_bot_gets_only_its_own_settings_never_the_whole_env_file():
    bot = _compose()["bot"]
    assert bot["env_file"] == [{"path": "bot.env", "required": False}]
    assert set(bot["environment"]) == {"DISCORD_TOKEN", "SANDBOX", "SANDBOX_ADDRESS",
                                       "DATABASE_URL", "WEB_PUBLIC_URL"}
    assert "REDIS_SANDBOX_PASSWORD" not in str(bot)
    assert "bot.env" in (REPO / ".gitignore").read_text().split()


def test_the_web_companion_gets_no_bot_token_and_serves_the_image_s_health_port():
    web = _compose()["web"]
    args = _tutor_args(web["command"])
    assert args.func.__name__ == "cmd_web" and args.port == 8080  # the image's HEALTHCHECK
    assert "DISCORD_TOKEN" not in str(web) and "env_file" not in web
    assert "REDIS_SANDBOX_PASSWORD" not in str(web)
    assert {"DISCORD_CLIENT_ID", "DISCORD_CLIENT_SECRET", "WEB_SESSION_SECRET",
            "WEB_PUBLIC_URL", "DATABASE_URL"} <= set(web["environment"])


def test_every_service_waits_for_what_it_needs_and_says_when_it_is_ready():
    services = _compose()
    redis_check = " ".join(services["redis"]["healthcheck"]["test"])
    assert "--user tutor-bot" in redis_check and "PONG" in redis_check
    postgres = services["postgres"]
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    assert postgres["environment"]["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD:-}"
    assert services["bot"]["depends_on"] == {
        "redis": {"condition": "service_healthy"},
        "postgres": {"condition": "service_healthy", "required": False}}


def test_the_gpu_host_is_given_a_gpu_and_images_are_the_ones_readme_names():
    services = _compose()
    devices = services["sandbox-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]
    assert services["sandbox-gpu"]["image"] == "srs-tutor:gpu"  # not the CPU image's tag
    for name in ("bot", "sandbox", "redis-acl"):
        assert services[name]["image"] == "srs-tutor:latest"
    readme = (REPO / "README.md").read_text()
    assert "docker build -t srs-tutor ." in readme
    assert re.search(r"docker run [^`]*\bsrs-tutor\b", readme)
