"""Hostile and broken programs: each one must stay contained, and the service must go on
serving. Every test asserts what the program could NOT do, and that the next run works.
Each runs twice: through a service of our own, and through a fleet host behind Redis, whose
broker password must stay out of reach as the bot's token does."""

from __future__ import annotations

import asyncio
import os
import socket
import textwrap

import pytest
import pytest_asyncio

from bot.bench.local_redis import LocalRedis
from bot.sandbox.client.client import SandboxClient
from bot.sandbox.protocol import ERROR, MEMORY, OK, OUTPUT_LIMIT, REFUSED, TIMEOUT, RunResult
from tests.helpers.fleet import Host, fleet_client, wait_for_hosts
from tests.helpers.paths import REPO
from tests.helpers.sandbox import TEST_LIMITS

pytestmark = pytest.mark.asyncio(loop_scope="module")
SECRET = "fake-discord-token-that-must-not-leak"


@pytest.fixture(scope="module", autouse=True)
def secret_in_parent_environment():
    """The bot's environment holds a token; the sandbox must never see it."""
    os.environ["DISCORD_TOKEN"] = SECRET
    yield
    os.environ.pop("DISCORD_TOKEN", None)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["own service", "fleet"])
async def sandbox(request, secret_in_parent_environment):
    """A client, with `secrets`: what no learner's code may ever print."""
    if request.param == "own service":
        client = SandboxClient(limits=TEST_LIMITS, parallel=2, runs_per_minute=10_000)
        await client.start()
        client.secrets = (SECRET,)
        yield client
        await client.stop()
        return
    with LocalRedis() as redis:
        # An operator who started the host with the bot's token in its environment.
        host = Host(redis, environment={"DISCORD_TOKEN": SECRET})
        client = await fleet_client(redis)
        try:
            await wait_for_hosts(client, 1)
            client.service_pid = host.pid
            client.secrets = (SECRET, redis.host_password, redis.bot_password)
            yield client
        finally:
            await client.stop()
            host.stop()


def assert_no_secret(sandbox, text: str) -> None:
    for secret in sandbox.secrets:
        assert secret not in text


async def run(sandbox, code: str) -> RunResult:
    return await sandbox.run(textwrap.dedent(code))


async def still_serving(sandbox) -> None:
    result = await run(sandbox, "print('alive')")
    assert (result.status, result.stdout) == (OK, "alive\n")


async def test_environment_holds_no_secret(sandbox):
    result = await run(sandbox, """
        import os
        print(sorted(os.environ))
        print(os.environ.get("DISCORD_TOKEN"))
    """)
    assert result.status == OK
    assert_no_secret(sandbox, result.stdout)
    assert result.stdout.splitlines()[1] == "None"


async def test_proc_1_environ_and_host_processes_are_invisible(sandbox):
    result = await run(sandbox, """
        import os
        for path in ("/proc/1/environ", "/proc/self/environ", f"/proc/{os.getppid()}/environ"):
            try:
                print(path, open(path, "rb").read())
            except OSError as exc:
                print(path, type(exc).__name__)
        print("pid", os.getpid(), "ppid", os.getppid())
    """)
    assert_no_secret(sandbox, result.stdout)
    assert "pid 1 ppid 0" in result.stdout  # alone in its pid namespace


async def test_etc_shadow_is_not_there(sandbox):
    result = await run(sandbox, "print(open('/etc/shadow').read())")
    assert result.status == ERROR and "FileNotFoundError" in result.stderr


async def test_the_database_config_and_repository_are_invisible(sandbox, tmp_path):
    database = tmp_path / "tutor.db"
    database.write_text("learner data")
    result = await run(sandbox, f"""
        import os
        for path in ({str(database)!r}, {str(REPO / "README.md")!r}, {str(REPO / ".env")!r},
                     {str(REPO / "bot" / "__main__.py")!r}):
            print(path, os.path.exists(path))
        print(sorted(os.listdir("/")))
    """)
    assert result.status == OK
    assert " True" not in result.stdout
    assert "learner data" not in result.stdout


async def test_writes_outside_the_work_dir_fail(sandbox):
    result = await run(sandbox, """
        import os, sys
        open("notes.txt", "w").write("mine")          # the work dir is writable
        print(os.getcwd(), open("notes.txt").read())
        for path in ("/usr/evil", sys.prefix + "/evil.py", "/etc/passwd", "/evil"):
            try:
                open(path, "w").write("x")
                print("WROTE", path)
            except OSError as exc:
                print("refused", path, exc.errno)
    """)
    assert result.status == OK and "WROTE" not in result.stdout
    assert result.stdout.startswith("/code mine")


async def test_files_from_one_run_are_gone_in_the_next(sandbox):
    await run(sandbox, "open('left.txt', 'w').write('x')")
    result = await run(sandbox, "import os; print(os.listdir('.'))")
    assert result.stdout == "[]\n"


async def test_tcp_and_udp_to_loopback_fail(sandbox):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        result = await run(sandbox, f"""
            import socket
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                try:
                    s = socket.socket(socket.AF_INET, kind)
                    s.connect(("127.0.0.1", {port}))
                    s.send(b"hello")
                    print("CONNECTED", kind)
                except OSError as exc:
                    print("blocked", kind, exc.errno)
        """)
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
    assert "CONNECTED" not in result.stdout and result.stdout.count("blocked") == 2


async def test_outside_addresses_and_dns_fail(sandbox):
    result = await run(sandbox, """
        import socket
        for attempt in (lambda: socket.create_connection(("1.1.1.1", 53), timeout=1),
                        lambda: socket.getaddrinfo("example.com", 80),
                        lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM),
                        lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)):
            try:
                attempt()
                print("REACHED")
            except OSError as exc:
                print("blocked", type(exc).__name__)
    """)
    assert "REACHED" not in result.stdout and result.stdout.count("blocked") == 4


async def test_fork_bomb_is_contained(sandbox):
    result = await run(sandbox, """
        import os
        children = 0
        while True:
            try:
                if os.fork() == 0:
                    import time; time.sleep(60)
                children += 1
            except OSError:
                print("fork refused after", children)
                break
    """)
    assert result.status in (OK, TIMEOUT)
    assert int(result.stdout.split()[-1]) < 64
    await still_serving(sandbox)


async def test_thread_bomb_is_contained(sandbox):
    result = await run(sandbox, """
        import threading, time
        started = 0
        try:
            while True:
                threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
                started += 1
        except RuntimeError:
            print("threads refused after", started)
    """)
    assert result.status in (OK, TIMEOUT, ERROR)
    assert "threads refused after" in result.stdout
    await still_serving(sandbox)


async def test_list_memory_bomb_is_stopped(sandbox):
    result = await run(sandbox, "blocks = []\nwhile True: blocks.append(bytearray(8 << 20))")
    assert result.status == MEMORY
    await still_serving(sandbox)


async def test_torch_memory_bomb_is_stopped(sandbox):
    result = await run(sandbox, """
        import torch
        big = torch.empty(4 << 30, dtype=torch.uint8)
        big.fill_(1)
    """)
    assert result.status == MEMORY and "allocate" in result.error
    await still_serving(sandbox)


async def test_infinite_loop_times_out(sandbox):
    result = await run(sandbox, "while True:\n    pass")
    assert result.status == TIMEOUT and 2900 <= result.elapsed_ms < 6000


async def test_sleep_forever_times_out(sandbox):
    result = await run(sandbox, "import time\ntime.sleep(10**6)")
    assert result.status == TIMEOUT


async def test_100_mb_of_output_is_cut_off(sandbox):
    result = await run(sandbox, "import sys\nfor _ in range(100):\n"
                                "    sys.stdout.write('x' * (1 << 20))")
    assert result.status == OUTPUT_LIMIT
    assert len(result.stdout) < 20_000 and "[output truncated" in result.stdout
    await still_serving(sandbox)


async def test_killing_everything_it_can_see_hurts_only_itself(sandbox):
    service = sandbox.service_pid
    result = await run(sandbox, f"""
        import os, signal
        for pid in (os.getppid(), {service}, -1):
            try:
                os.kill(pid, signal.SIGKILL)
                print("sent", pid)
            except OSError as exc:
                print("refused", pid, exc.errno)
    """)
    assert sandbox.service_pid == service  # the service was never restarted
    assert result.status in (OK, ERROR)
    await still_serving(sandbox)


async def test_ptrace_and_namespaces_are_denied(sandbox):
    result = await run(sandbox, """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        for name, call in (("ptrace", lambda: libc.ptrace(16, 1, 0, 0)),
                           ("unshare", lambda: libc.unshare(0x10000000)),
                           ("mount", lambda: libc.mount(b"none", b"/code", b"tmpfs", 0, None)),
                           ("setns", lambda: libc.setns(0, 0)),
                           ("chroot", lambda: libc.chroot(b"/tmp"))):
            print(name, call(), ctypes.get_errno())
    """)
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert all(value.startswith("-1 ") for value in lines.values()), result.stdout


async def test_ctypes_cannot_regain_privileges(sandbox):
    result = await run(sandbox, """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        print("uid", os.getuid(), "caps", open("/proc/self/status").read()
              if os.path.exists("/proc/self/status") else "no /proc")
        print("setuid", libc.setuid(0), "setgid", libc.setgid(0))
        print("chown", libc.chown(b"/usr/bin/env", 0, 0), ctypes.get_errno())
    """)
    assert "chown -1" in result.stdout


async def test_shell_and_subprocess_stay_inside(sandbox):
    result = await run(sandbox, """
        import os, subprocess
        print(subprocess.run(["env"], capture_output=True, text=True).stdout)
        print(os.system("cat /etc/shadow 2>/dev/null || echo no-shadow"))
    """)
    assert_no_secret(sandbox, result.stdout)
    assert "no-shadow" in result.stdout


async def test_rlimits_cannot_be_raised(sandbox):
    result = await run(sandbox, """
        import resource
        for limit in (resource.RLIMIT_CPU, resource.RLIMIT_NPROC, resource.RLIMIT_DATA):
            soft, hard = resource.getrlimit(limit)
            try:
                resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                print("RAISED", limit)
            except (ValueError, OSError) as exc:
                print("kept", limit, type(exc).__name__)
    """)
    assert "RAISED" not in result.stdout and result.stdout.count("kept") == 3


async def test_huge_source_is_refused(sandbox):
    result = await sandbox.run("x = 1\n" * 20_000)
    assert result.status == REFUSED and "larger than 64 KB" in result.stderr


async def test_not_python_is_refused_with_its_line(sandbox):
    result = await sandbox.run("print('ok')\ndef broken(:\n")
    assert result.status == REFUSED and result.line == 2
    nul = await sandbox.run("print(1)\x00")
    assert nul.status == REFUSED


async def test_sys_exit_is_an_exit_code_not_a_crash(sandbox):
    assert (await sandbox.run("import sys; sys.exit(3)")).exit_code == 3
    assert (await sandbox.run("raise SystemExit")).status == OK
    await still_serving(sandbox)


async def test_recursion_bomb_is_an_error_with_the_learners_line(sandbox):
    result = await sandbox.run("def f(n):\n    return f(n + 1)\n\nf(0)\n")
    assert result.status == ERROR and "RecursionError" in result.stderr
    assert 'File "<your code>", line 2, in f' in result.stderr
    assert "harness" not in result.stderr and "bot/sandbox" not in result.stderr


async def test_tracebacks_show_only_the_learners_frames(sandbox):
    result = await sandbox.run("x = 1\ny = undefined_name + x\n")
    assert result.status == ERROR and result.line == 2
    assert result.stderr.splitlines()[-1] == "NameError: name 'undefined_name' is not defined"
    assert "bot/sandbox" not in result.stderr and "harness" not in result.stderr


async def test_os_exit_and_crashes_are_reported(sandbox):
    result = await sandbox.run("import os; os._exit(7)")
    assert result.status == ERROR and result.exit_code == 7
    crash = await sandbox.run("import ctypes; ctypes.string_at(0)")
    assert crash.status == ERROR and crash.exit_code == -11
    await still_serving(sandbox)


async def test_others_are_served_while_a_bad_program_runs(sandbox):
    slow = asyncio.create_task(sandbox.run("while True: pass"))
    await asyncio.sleep(0.2)
    quick = await sandbox.run("print('quick')")
    assert quick.stdout == "quick\n" and not slow.done()
    assert (await slow).status == TIMEOUT
