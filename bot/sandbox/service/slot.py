"""One jailed child as the service holds it: its pipe ends, the submission sent in, and its
output read back under the limits (kept up to a bound, counted in full).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

from bot.sandbox.protocol import Limits
from bot.sandbox.service.loop_io import ready


@dataclass
class Slot:
    """A child that is jailed and waiting for its submission."""

    pid: int
    child: int  # the zygote's number for it
    request_w: int
    result_r: int
    out_r: int
    err_r: int
    cgroup: str | None
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    report: bytearray = field(default_factory=bytearray)
    output_total: int = 0

    def fds(self) -> tuple[int, ...]:
        return (self.request_w, self.result_r, self.out_r, self.err_r)

    def drain(self, fd: int, buffer: bytearray, overflow: asyncio.Event, limits: Limits,
              until_empty: bool = False) -> None:
        """Read what `fd` holds into `buffer` (one of ours); set `overflow` past a limit."""
        is_report = buffer is self.report
        keep = limits.report_max_bytes if is_report else limits.output_keep_bytes
        while True:
            try:
                chunk = os.read(fd, 65536)
            except (BlockingIOError, OSError):
                return
            if not chunk:
                if not until_empty:
                    asyncio.get_running_loop().remove_reader(fd)
                return
            if is_report:
                if len(buffer) + len(chunk) > keep:
                    overflow.set()
                buffer += chunk[:max(0, keep - len(buffer))]
            else:
                self.output_total += len(chunk)
                buffer += chunk[:max(0, keep - len(buffer))]
                if self.output_total > limits.output_max_bytes:
                    overflow.set()
            if not until_empty:
                return

    def output(self, limits: Limits) -> dict:
        """The result's stdout and stderr, with a note where output was cut."""
        stdout, stderr = _text(self.out), _text(self.err)
        if self.output_total > limits.output_keep_bytes:
            note = f"\n[output truncated: {self.output_total} bytes in all]"
            stdout, stderr = (stdout + note, stderr) if len(self.out) >= len(self.err) \
                else (stdout, stderr + note)
        return {"stdout": stdout, "stderr": stderr}


async def send(fd: int, payload: bytes) -> None:
    """The submission to its child, without blocking the loop on a full pipe."""
    data = memoryview(len(payload).to_bytes(4, "little") + payload)
    while data:
        try:
            data = data[os.write(fd, data):]
        except BlockingIOError:
            await ready(fd, write=True)
        except (BrokenPipeError, OSError):  # the child died first: its status says why
            return


def _text(data: bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")
