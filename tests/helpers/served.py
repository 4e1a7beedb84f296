"""A real `tutor sandbox serve` on a Unix socket for tests, and clients that reach it as
attackers do: a bot's `SandboxClient`, or raw connections of another user of the machine
(a process of its own under another uid, in the socket's group)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

from bot.sandbox.client.client import SandboxClient
from tests.helpers.paths import REPO

OTHER_UID = OTHER_GID = 65534  # nobody/nogroup: a user of the machine that runs no bot


class Service:
    def __init__(self, address: str, process: subprocess.Popen, folder: Path | None = None):
        self.address, self.process, self.folder = address, process, folder

    @property
    def path(self) -> str:
        return self.address.removeprefix("unix:")

    def client(self, **options) -> SandboxClient:
        return SandboxClient(address=self.address, runs_per_minute=10_000, max_queue=256,
                             limits=None, **options)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0


async def start_served(folder: Path | None, *options: str, limits: dict,
                       shared_with_other_user: bool = False) -> Service:
    """Serve on a socket in `folder`; `shared_with_other_user`: in a folder of its own that
    OTHER_UID may enter, the socket (mode 660) in OTHER_GID's group, as an operator gives
    the bots' group access and a user of that group attacks."""
    own = None
    if shared_with_other_user:
        folder = own = Path(tempfile.mkdtemp(prefix="tutor-served-"))
        folder.chmod(0o711)
    address = f"unix:{folder / 'sandbox.sock'}"
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "sandbox", "serve", "--listen", address,
         "--limits", json.dumps(limits), *options],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stderr=subprocess.DEVNULL)
    service = Service(address, process, own)
    probe = service.client()
    await probe.start()  # waits for the socket and the service's first answer
    await probe.stop()
    if shared_with_other_user:
        os.chown(service.path, -1, OTHER_GID)
    return service


def stop_served(service: Service) -> None:
    service.process.terminate()
    service.process.wait(60)
    if service.folder is not None:
        shutil.rmtree(service.folder, ignore_errors=True)


@contextlib.asynccontextmanager
async def serving(folder: Path | None, *options: str, limits: dict,
                  shared_with_other_user: bool = False) -> AsyncIterator[Service]:
    """`start_served` for the block, stopped after it (a module's fixture)."""
    service = await start_served(folder, *options, limits=limits,
                                 shared_with_other_user=shared_with_other_user)
    try:
        yield service
    finally:
        stop_served(service)


def as_other_user(script: str, *args: str) -> subprocess.Popen:
    """`script` (stdlib only) run by OTHER_UID, its stdin and stdout piped to the test. The
    system's Python: ours may lie where only root may enter (a pyenv under /root)."""
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable
    return subprocess.Popen([python, "-c", textwrap.dedent(script), *args],
                            user=OTHER_UID, group=OTHER_GID, extra_groups=[], cwd="/",
                            env={"PATH": os.environ["PATH"]}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
