"""A throwaway `redis-server` on loopback with the fleet's users, for benchmarks and tests.

It runs Debian's `redis-server` (`apt-get install redis-server`) in a temporary folder, the
default user off, the two users of `broker.acl_rules` and an admin, and the fleet's server
settings (`broker.REDIS_SETTINGS`, or `settings`); without persistence, or with
append-only persistence (`appendonly=True`, compose's). `restart()` kills it and starts
it again on the same port with its data gone, as after a crash without persistence;
`restart(keep_data=True)` stops it gracefully and starts it again from its append-only log.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from bot.sandbox.broker import BOT_USER, HOST_USER, REDIS_SETTINGS, acl_rules

ADMIN_USER = "tutor-admin"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalRedis:
    def __init__(self, *, tls: bool = False, appendonly: bool = False,
                 settings: dict[str, str] | None = None):
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(binary).exists():
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.folder = Path(tempfile.mkdtemp(prefix="tutor-redis-"))
        self.port = _free_port()
        self.tls = tls
        self.appendonly = appendonly
        self.settings = REDIS_SETTINGS if settings is None else settings
        self.bot_password = secrets.token_hex(12)
        self.host_password = secrets.token_hex(12)
        # An operator's user beside the fleet's, for tests and benchmarks to look inside.
        self.admin_password = secrets.token_hex(12)
        (self.folder / "users.acl").write_text(
            acl_rules(self.bot_password, self.host_password)
            + f"user {ADMIN_USER} on >{self.admin_password} ~* &* +@all\n")
        if tls:
            self._make_certificate()
        self.process: subprocess.Popen | None = None

    def _make_certificate(self) -> None:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                        "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(self.folder / "key.pem"),
                        "-out", str(self.folder / "cert.pem")],
                       check=True, capture_output=True)

    def url(self, user: str, password: str | None = None) -> str:
        if password is None:
            password = {BOT_USER: self.bot_password, HOST_USER: self.host_password,
                        ADMIN_USER: self.admin_password}[user]
        if self.tls:
            return (f"rediss://{user}:{password}@127.0.0.1:{self.port}/0"
                    f"?ssl_ca_certs={self.folder / 'cert.pem'}")
        return f"redis://{user}:{password}@127.0.0.1:{self.port}/0"

    @property
    def bot_url(self) -> str:
        return self.url(BOT_USER)

    @property
    def host_url(self) -> str:
        return self.url(HOST_USER)

    @property
    def admin_url(self) -> str:
        return self.url(ADMIN_USER)

    def start(self, timeout_s: float = 30.0) -> LocalRedis:
        listen = (["--port", "0", "--tls-port", str(self.port),
                   "--tls-cert-file", str(self.folder / "cert.pem"),
                   "--tls-key-file", str(self.folder / "key.pem"),
                   "--tls-ca-cert-file", str(self.folder / "cert.pem"),
                   "--tls-auth-clients", "no"] if self.tls else ["--port", str(self.port)])
        self.process = subprocess.Popen(
            [self.binary, *listen, "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes" if self.appendonly else "no",
             "--dir", str(self.folder), "--aclfile", str(self.folder / "users.acl"),
             "--logfile", str(self.folder / "redis.log"),
             *(part for name, value in self.settings.items() for part in (f"--{name}", value))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while "Ready to accept connections" not in self.log():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start: {self.log()[-2000:]}")
            time.sleep(0.02)
        return self

    def log(self) -> str:
        try:
            return (self.folder / "redis.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, kill: bool = False) -> None:
        if self.process is not None and self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            self.process.wait(30)
        self.process = None

    def restart(self, keep_data: bool = False) -> None:
        """A crash and a restart with everything in it gone; or, with `keep_data`, a graceful
        stop and a start that loads the append-only log again (`appendonly=True`)."""
        if keep_data and not self.appendonly:
            raise ValueError("only an append-only Redis keeps its data across a restart")
        self.stop(kill=not keep_data)
        if not keep_data:
            shutil.rmtree(self.folder / "appendonlydir", ignore_errors=True)
            (self.folder / "dump.rdb").unlink(missing_ok=True)
        (self.folder / "redis.log").unlink(missing_ok=True)
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> LocalRedis:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
