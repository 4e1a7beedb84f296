"""Hostile and broken programs, one of our own for every class of attack, and one for each
test of python-discord/snekbox (and engineer-man/piston's exploit collection) that runs a
hostile or broken program. Each test asserts what the program could NOT do (and the status
that says so where our contract is clear) and that the worker still serves the next run.
Nothing waits on a fixed sleep: host-side checks poll a condition with a deadline.
One catalogue in one file (over 400 lines): each attack is a few lines, and a reviewer
checks the list against snekbox's and piston's in one place.

snekbox tests (python-discord/snekbox@6100833, tests/) -> ours ("E::" = test_escapes.py)
test_nsjail.py
  test_timeout_returns_137                  -> E::test_infinite_loop_times_out
  test_memory_returns_137                   -> test_one_allocation_above_the_limit_is_memory
  test_subprocess_resource_unavailable      -> test_subprocess_bomb_meets_the_pid_limit
  test_multiprocess_resource_limits         -> test_memory_limit_covers_all_processes_of_a_run
  test_read_only_file_system                -> E::test_writes_outside_the_work_dir_fail
  test_write_exceed_space                   -> test_filling_the_work_dir_stops_at_its_size
  test_forkbomb_resource_unavailable
                                -> test_exponential_fork_bomb_times_out_and_leaves_nothing
  test_file_parsing_timeout                 -> test_litter_in_the_work_dir_is_never_read_back
  test_filename_encoding_illegal_chars      -> test_litter_in_the_work_dir_is_never_read_back
  test_file_parsing_depth_limit             -> test_litter_in_the_work_dir_is_never_read_back
  test_file_parsing_size_limit_symlinks     -> test_litter_in_the_work_dir_is_never_read_back
  test_file_parsing_size_limit_sparse_files -> test_file_larger_than_the_file_size_limit_fails
  test_file_parsing_size_limit_sparse_files_large
                                            -> test_file_larger_than_the_file_size_limit_fails
  test_sigsegv_returns_139                  -> E::test_os_exit_and_crashes_are_reported
  test_null_byte_value_error                -> E::test_not_python_is_refused_with_its_line
  test_print_bad_unicode_encode_error       -> test_invalid_utf8_and_lone_surrogates_in_output
  test_unicode_env_erase_escape_fails       -> test_an_execed_python_writing_surrogates
  test_tmp_not_mounted                      -> test_tmp_and_shm_leave_nothing_behind
  test_multiprocessing_shared_memory        -> test_shared_memory_segments_stay_inside
  test_multiprocessing_shared_memory_mmap_limited
                                            -> test_shared_memory_segments_stay_inside
  test_stdout_flood_results_in_graceful_sigterm
                                            -> test_endless_small_prints_meet_the_output_limit
  test_large_output_is_truncated            -> E::test_100_mb_of_output_is_cut_off
test_integration.py
  test_memory_limit_separate_per_process    -> test_each_run_has_its_own_memory_limit
test_main.py
  test_main_forwards_args (sleep 2 s > 1 s) -> E::test_sleep_forever_times_out
limits/test_timed.py
  test_sleep                                -> E::test_sleep_forever_times_out
  test_iter (one long C-level call)         -> test_a_long_c_level_call_times_out
Not hostile (features, parsers, configuration): test_print_returns_0, test_multi_files,
test_multiprocessing_pool, test_write, test_write_hidden_exclude, test_file_write_error,
test_numpy_import, test_output_order, test_log_parser, test_nsjail_args, test_py_args,
NsJailArgsTests, NsJailCgroupTests, api/test_eval.py (request schema and attachment paths:
we take no attachments), snekio/*, the other test_integration.py tests.

engineer-man/piston tests/ (its exploit collection) -> ours
  fallocate.py                              -> test_filling_the_work_dir_stops_at_its_size
  file_persistance.py                       -> test_tmp_and_shm_leave_nothing_behind
  fork.py                                   -> E::test_fork_bomb_is_contained
  network.py                                -> E::test_tcp_and_udp_to_loopback_fail
  runaway_output.py                         -> test_endless_small_prints_meet_the_output_limit

Our own classes: file-size limit, /code tmpfs, /proc and /sys, RLIMIT_NOFILE, symlinks and
hard links, memfd, MAP_SHARED anonymous memory, signals to pid 1, setsid and double-fork
survivors (checked on the host), undecodable output, NUL bytes, closed or replaced
stdout/stderr, the inherited result pipe, blocked SIGTERM/SIGALRM.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from bot.engine.code_judge import report_from
from bot.sandbox.protocol import ERROR, MEMORY, OK, OUTPUT_LIMIT, TIMEOUT, RunResult
from tests.helpers.paths import REPO
from tests.helpers.sandbox import TEST_LIMITS

pytestmark = pytest.mark.asyncio(loop_scope="module")

NOBODY = 65534
PIDS_CGROUPS = Path("/sys/fs/cgroup/pids/tutor-sandbox")
MB = 1 << 20


async def run(sandbox, code: str, **kwargs) -> RunResult:
    return await sandbox.run(textwrap.dedent(code), **kwargs)


async def still_serving(sandbox) -> None:
    result = await run(sandbox, "print('alive')")
    assert (result.status, result.stdout) == (OK, "alive\n")


def utf8_clean(reply: RunResult) -> None:
    """The reply must be JSON text that is also valid UTF-8 (it goes on to Discord)."""
    text = json.dumps(dataclasses.asdict(reply), ensure_ascii=False)
    text.encode("utf-8")  # raises on a lone surrogate


# -- the host's view of sandbox processes ----------------------------------------------------


def _status(pid: str) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _ppid(pid: str) -> int | None:
    try:
        return int(_status(pid)["PPid"])
    except (OSError, KeyError, ValueError):
        return None


def sandbox_processes(service_pid: int) -> list[dict]:
    """Host processes running as `nobody`, except those of another worker's sandboxes
    (another engineer's worker may run on this host at the same time)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = _status(entry.name)
            cgroups = (entry / "cgroup").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(status["Uid"].split()[0]) != NOBODY:
            continue
        groups = [line.rsplit("/", 1)[-1] for line in cgroups.splitlines()
                  if "tutor-sandbox/" in line]
        if groups and all(not g.startswith(f"{service_pid}-") for g in groups):
            continue  # another worker's
        found.append({"pid": int(entry.name), "ppid": int(status["PPid"]),
                      "nspid": status.get("NSpid", "").split(), "state": status["State"],
                      "groups": groups})
    return found


def leftovers(service_pid: int) -> list[dict]:
    """Everything of ours except the one child kept jailed and waiting for the next run:
    pid 1 of its own namespace, a child of the worker's zygote."""
    processes = sandbox_processes(service_pid)
    zygotes = {int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()
               and _ppid(e.name) == service_pid}
    waiting = [p for p in processes if p["ppid"] in zygotes and p["nspid"][-1:] == ["1"]]
    rest = [p for p in processes if p not in waiting[:1]]
    kept = {g for p in waiting[:1] for g in p["groups"]}
    groups = sorted(g.name for g in PIDS_CGROUPS.glob(f"{service_pid}-*") if g.name not in kept)
    return rest + [{"cgroup": g} for g in groups]


async def nothing_left(sandbox, within_s: float = 60.0) -> None:
    """Poll until no process or cgroup of a finished run remains on the host (the bound is
    for one that stays: the wait ends as soon as they are gone)."""
    deadline = time.monotonic() + within_s
    while left := leftovers(sandbox.service_pid):
        if time.monotonic() > deadline:
            pytest.fail(f"left behind on the host after the run: {left}")
        await asyncio.sleep(0.05)


# -- files and the file system ---------------------------------------------------------------


async def test_file_larger_than_the_file_size_limit_fails(sandbox):
    marker = f"big-{uuid.uuid4().hex}"
    result = await run(sandbox, f"""
        import os
        try:
            with open({marker!r}, "wb") as f:
                for _ in range({TEST_LIMITS.file_mb + 4}):
                    f.write(b"x" * (1 << 20))
            print("WROTE", os.path.getsize({marker!r}))
        except OSError as exc:
            print("write", exc.errno, os.path.getsize({marker!r}))
        with open("sparse", "wb") as f:
            for size in (1 << 30, 1 << 40):  # sparse files are held to the same limit
                try:
                    os.ftruncate(f.fileno(), size)
                    print("SPARSE", size)
                except OSError as exc:
                    print("truncate", exc.errno)
        fd = os.open("seek", os.O_WRONLY | os.O_CREAT)
        try:
            os.pwrite(fd, b"x", 1 << 32)  # one byte, far past the limit
            print("SEEKED")
        except OSError as exc:
            print("seek", exc.errno)
    """)
    assert result.status == OK, result
    lines = result.stdout.splitlines()
    assert lines[0] == f"write 27 {TEST_LIMITS.file_mb * MB}"  # EFBIG, at the limit exactly
    assert lines[1:] == ["truncate 27", "truncate 27", "seek 27"]
    assert not any(Path(d, marker).exists() for d in ("/tmp", "/mnt", "/srv", REPO, "/"))
    await still_serving(sandbox)


async def test_filling_the_work_dir_stops_at_its_size(sandbox):
    result = await run(sandbox, f"""
        import os
        written = 0
        try:
            for i in range(64):
                with open(f"part{{i}}", "wb") as f:
                    for _ in range({TEST_LIMITS.file_mb - 1}):
                        f.write(b"x" * (1 << 20))
                        written += 1
        except OSError as exc:
            print("stopped", exc.errno, written)
        vfs = os.statvfs("/code")
        print("size", vfs.f_blocks * vfs.f_frsize)
    """)
    assert result.status == OK, result
    stopped, size = result.stdout.splitlines()
    errno_, written = map(int, stopped.split()[1:])
    assert errno_ == 28 and written <= TEST_LIMITS.tmpfs_mb  # ENOSPC at the tmpfs cap
    assert size == f"size {TEST_LIMITS.tmpfs_mb * MB}"
    await still_serving(sandbox)


async def test_litter_in_the_work_dir_is_never_read_back(sandbox):
    """snekbox reads /code back as attachments; we never do, so litter costs us nothing
    and is gone by the next run."""
    before = await run(sandbox, "import os; print(os.listdir('.'), os.listdir('/tmp'))")
    result = await run(sandbox, """
        import os
        path = ""
        for _ in range(500):
            path += "d/"
            os.mkdir(path)
        open(path + "deep.txt", "w").write("deep")
        with open("file", "wb") as f:
            f.write(b"a" * (6 << 20))
        for i in range(200):
            os.symlink("file", f"link{i}")
        os.symlink("loop-a", "loop-b")
        os.symlink("loop-b", "loop-a")
        open(b"\\xc3\\xff.txt", "w").write("bad name")
        os.mkfifo("fifo")
        print("littered")
    """)
    assert (result.status, result.stdout) == (OK, "littered\n")
    assert result.elapsed_ms < 2000
    after = await run(sandbox, "import os; print(os.listdir('.'), os.listdir('/tmp'))")
    # /tmp is the runtime's own where this checkout lives under it (a CI clone, say)
    assert after.stdout == before.stdout and after.stdout.startswith("[] ")


async def test_tmp_and_shm_leave_nothing_behind(sandbox):
    marker = f"bean-{uuid.uuid4().hex}"
    code = f"""
        import os
        for directory in ("/tmp", "/dev/shm", "/var/tmp", "/run/lock", "/code"):
            path = os.path.join(directory, {marker!r})
            if os.path.exists(path):
                print("PERSISTED", path)
            try:
                open(path, "w").write("beans")
                print("wrote", directory)
            except OSError as exc:
                print("refused", directory, type(exc).__name__)
    """
    first, second = await run(sandbox, code), await run(sandbox, code)
    assert first.status == second.status == OK
    assert "PERSISTED" not in first.stdout + second.stdout
    assert first.stdout == second.stdout
    host = [Path(d, marker) for d in ("/tmp", "/dev/shm", "/var/tmp", "/run/lock", "/code")]
    assert not [p for p in host if p.exists()]
    await still_serving(sandbox)


async def test_symlinks_and_hard_links_reach_nothing_outside(sandbox, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host-only-secret")
    result = await run(sandbox, f"""
        import os, sys
        targets = {{"secret": {str(secret)!r}, "env": {str(REPO / ".env")!r},
                   "readme": {str(REPO / "README.md")!r}, "shadow": "/etc/shadow",
                   "worker-root": "/proc/1/root/etc/hostname", "old-root": "/.old/etc/hostname",
                   "prefix": sys.prefix + "/evil.py"}}
        for name, target in targets.items():
            os.symlink(target, name)
            try:
                print("READ", name, open(name).read()[:40])
            except OSError as exc:
                print("noread", name, type(exc).__name__)
            try:
                open(name, "w").write("x")
                print("WROTE", name)
            except OSError as exc:
                print("nowrite", name, type(exc).__name__)
        os.symlink("/", "root")
        print(sorted(os.listdir("root")))
        for source in (sys.executable, "/usr/bin/env"):
            try:
                os.link(source, "hard")
                print("LINKED", source)
            except OSError as exc:
                print("nolink", exc.errno)
    """)
    out = result.stdout
    assert result.status == OK, result
    assert "READ" not in out and "WROTE" not in out and "LINKED" not in out
    assert "host-only-secret" not in out
    assert not (tmp_path / "evil.py").exists() and secret.read_text() == "host-only-secret"
    await still_serving(sandbox)


async def test_proc_and_sys_of_the_worker_are_out_of_reach(sandbox):
    worker = sandbox.service_pid
    result = await run(sandbox, f"""
        import os
        for path in ("/proc/self/mem", "/proc/1/mem", "/proc/{worker}/mem",
                     "/proc/{worker}/environ", "/proc/{worker}/root", "/proc/self/maps",
                     "/sys/fs/cgroup/memory/tutor-sandbox/memory.limit_in_bytes",
                     "/sys/fs/cgroup/pids/tutor-sandbox/pids.max", "/dev/mem", "/dev/kmem"):
            try:
                with open(path, "r+b") as f:
                    print("OPENED", path, f.read(16))
            except OSError as exc:
                print("absent", path, type(exc).__name__)
        print("proc holds", os.listdir("/proc") if os.path.isdir("/proc") else None)
    """)
    assert result.status == OK, result
    assert "OPENED" not in result.stdout
    assert "proc holds []" in result.stdout or "proc holds None" in result.stdout
    await still_serving(sandbox)


async def test_many_open_files_meet_the_descriptor_limit(sandbox):
    result = await run(sandbox, """
        import os, resource, socket
        held = []
        try:
            while True:
                held.append(os.open("/dev/null", os.O_RDONLY))
                held.extend(os.pipe())
        except OSError as exc:
            print("stopped", exc.errno, len(held))
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (1 << 20, 1 << 20))
            print("RAISED")
        except (ValueError, OSError) as exc:
            print("kept", type(exc).__name__)
        try:
            os.dup2(held[0], 100_000)
            print("DUPED HIGH")
        except OSError as exc:
            print("nodup", exc.errno)
    """)
    assert result.status == OK, result
    stopped, kept, nodup = result.stdout.splitlines()
    assert stopped.split()[1] == "24" and int(stopped.split()[2]) < 64  # EMFILE
    assert kept.startswith("kept") and nodup == "nodup 9"  # EBADF: above RLIMIT_NOFILE
    await still_serving(sandbox)


# -- memory ----------------------------------------------------------------------------------

# The memory tests run on the roomy worker (conftest): its wall limit only bounds a memory
# limit that failed. With the module's 3 s, a busy machine (another suite's runs in the
# sandbox beside these) turned a run the memory limit stops into a 'timeout'.


async def test_one_allocation_above_the_limit_is_memory(roomy_sandbox):
    code = f"x = ' ' * {TEST_LIMITS.memory_mb * MB + 1000}\nprint('HELD')"
    result = await run(roomy_sandbox, code)
    assert result.status == MEMORY and "HELD" not in result.stdout
    await still_serving(roomy_sandbox)


async def test_memory_limit_covers_all_processes_of_a_run(roomy_sandbox):
    """Three processes of one run, each under the per-process data limit, together over
    the run's memory limit: they cannot all hold their share. Each holds its block until
    every one has either filled its own or died, so they hold at once however slowly each
    one runs (no sleep to overlap them)."""
    share = TEST_LIMITS.data_mb - 16
    assert 3 * share > TEST_LIMITS.memory_mb + 128
    result = await run(roomy_sandbox, f"""
        import os
        filled_r, filled_w = os.pipe()
        go_r, go_w = os.pipe()
        children = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                block = b"x" * ({share} << 20)
                os.write(filled_w, b"f")
                os.close(filled_w)
                os.read(go_r, 1)
                os._exit(0)
            children.append(pid)
        os.close(filled_w)  # read() is b"" once every child has filled its block or died
        while os.read(filled_r, 1):
            pass
        os.write(go_w, b"go!")
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
        print("codes", *codes)
    """)
    assert result.status == MEMORY, result
    assert "codes 0 0 0" not in result.stdout
    await nothing_left(roomy_sandbox)
    await still_serving(roomy_sandbox)


async def test_each_run_has_its_own_memory_limit(roomy_sandbox):
    """The limit is per run, not shared: three runs that each hold most of it all pass."""
    share = min(TEST_LIMITS.data_mb, TEST_LIMITS.memory_mb) - 64
    code = f"block = b'x' * ({share} << 20)\nprint('held', len(block) >> 20)"
    results = await asyncio.gather(*(run(roomy_sandbox, code) for _ in range(3)))
    assert [(r.status, r.stdout) for r in results] == [(OK, f"held {share}\n")] * 3


async def test_memfd_is_held_to_the_file_and_memory_limits(roomy_sandbox):
    result = await run(roomy_sandbox, """
        import mmap, os
        fd = os.memfd_create("big")
        try:
            os.ftruncate(fd, 1 << 30)
            big = mmap.mmap(fd, 1 << 30, flags=mmap.MAP_SHARED)
            print("MAPPED 1 GiB")
        except OSError as exc:
            print("truncate", exc.errno)
        held, chunk = [], b"x" * (1 << 20)
        for i in range(60):
            fd = os.memfd_create(f"part{i}")
            for _ in range(8):
                os.write(fd, chunk)
            held.append(fd)
            print("held", len(held) * 8, flush=True)
        print("HELD ALL")
    """)
    assert result.status == MEMORY, result
    assert result.stdout.startswith("truncate 27\n")  # EFBIG: RLIMIT_FSIZE
    assert "HELD ALL" not in result.stdout
    held = int(result.stdout.splitlines()[-1].split()[1])
    assert held <= TEST_LIMITS.memory_mb
    await still_serving(roomy_sandbox)


async def test_shared_anonymous_mapping_touched_page_by_page_is_memory(roomy_sandbox):
    """MAP_SHARED anonymous memory is not counted by RLIMIT_DATA; the run's memory cgroup
    has to stop it."""
    result = await run(roomy_sandbox, """
        import mmap
        m = mmap.mmap(-1, 2 << 30, flags=mmap.MAP_SHARED)
        print("mapped", flush=True)
        for offset in range(0, 2 << 30, 4096):
            m[offset] = 1
        print("TOUCHED 2 GiB")
    """)
    assert result.status == MEMORY, result
    assert "TOUCHED" not in result.stdout
    await still_serving(roomy_sandbox)


async def test_shared_memory_segments_stay_inside(sandbox):
    name = f"hp{uuid.uuid4().hex[:12]}"
    result = await run(sandbox, f"""
        from multiprocessing.shared_memory import SharedMemory
        for size in (1 << 20, {TEST_LIMITS.memory_mb * MB} + (1 << 30)):
            try:
                shm = SharedMemory(name={name!r}, create=True, size=size)
                shm.buf[:1 << 20] = b"x" * (1 << 20)
                print("CREATED", size)
                shm.close()
            except OSError as exc:
                print("refused", size, type(exc).__name__)
    """)
    assert result.status == OK, result
    assert "CREATED" not in result.stdout
    assert not Path("/dev/shm", name).exists()
    await still_serving(sandbox)


# -- processes -------------------------------------------------------------------------------


async def test_subprocess_bomb_meets_the_pid_limit(sandbox):
    result = await run(sandbox, """
        import subprocess, sys
        started = []
        try:
            for _ in range(64):
                started.append(subprocess.Popen(
                    [sys.executable, "-c", "import time; time.sleep(60)"]))
        except OSError as exc:
            print("refused", type(exc).__name__, exc.strerror)
        print("started", len(started))
    """)
    assert result.status == OK, result
    refused, started = result.stdout.splitlines()
    assert refused == "refused BlockingIOError Resource temporarily unavailable"
    assert int(started.split()[1]) < TEST_LIMITS.pids
    await nothing_left(sandbox)
    await still_serving(sandbox)


async def test_exponential_fork_bomb_times_out_and_leaves_nothing(sandbox):
    result = await run(sandbox, """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """)
    assert result.status == TIMEOUT, result
    await nothing_left(sandbox)
    await still_serving(sandbox)


async def test_setsid_double_fork_daemons_do_not_survive(sandbox):
    """A daemon in its own session and process group, deaf to SIGHUP and SIGTERM, started
    by a program that then exits normally."""
    result = await run(sandbox, """
        import os, signal, time
        ready_r, ready_w = os.pipe()
        for _ in range(3):
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
                        signal.signal(sig, signal.SIG_IGN)
                    os.write(ready_w, b"r")
                    while True:
                        time.sleep(1)
                os._exit(0)
        for _ in range(3):
            os.read(ready_r, 1)
        print("daemons ready", flush=True)
    """)
    assert (result.status, result.stdout) == (OK, "daemons ready\n")
    await nothing_left(sandbox)
    await still_serving(sandbox)


async def test_daemons_of_a_timed_out_run_do_not_survive(sandbox):
    """The host-side check is not vacuous: it sees the daemon while the run lasts."""
    running = asyncio.ensure_future(run(sandbox, """
        import os, signal, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {
                    signal.SIGKILL, signal.SIGSTOP})
                while True:
                    time.sleep(1)
            os._exit(0)
        print("waiting", flush=True)
        time.sleep(60)
    """))
    deadline = time.monotonic() + TEST_LIMITS.wall_s
    while not any(p.get("nspid", ["1"])[-1] != "1" for p in leftovers(sandbox.service_pid)):
        assert time.monotonic() < deadline and not running.done(), "daemon never seen"
        await asyncio.sleep(0.02)
    result = await running
    assert result.status == TIMEOUT and result.stdout == "waiting\n"
    await nothing_left(sandbox)
    await still_serving(sandbox)


async def test_signals_to_pid_1_hurt_only_the_run(sandbox):
    """SIGKILL from inside its namespace cannot kill pid 1; whatever the other signals do
    (the child inherits the worker's Python handlers), they end at most this run."""
    worker = sandbox.service_pid
    result = await run(sandbox, """
        import os, signal
        print("i am", os.getpid(), flush=True)
        sent_r, sent_w = os.pipe()
        go_r, go_w = os.pipe()
        child = os.fork()
        if child == 0:
            os.kill(1, signal.SIGKILL)
            os.write(sent_w, b"k")
            os.read(go_r, 1)
            for sig in (signal.SIGSTOP, signal.SIGCONT, signal.SIGHUP, signal.SIGUSR1,
                        signal.SIGINT, signal.SIGTERM):
                os.kill(1, sig)
            os._exit(0)
        os.read(sent_r, 1)
        print("survived SIGKILL", flush=True)
        os.write(go_w, b"g")
        os.waitpid(child, 0)
    """)
    assert result.stdout.startswith("i am 1\nsurvived SIGKILL\n"), result
    assert result.status in (OK, ERROR)
    assert sandbox.service_pid == worker
    await nothing_left(sandbox)
    await still_serving(sandbox)


# -- time ------------------------------------------------------------------------------------


async def test_blocked_sigterm_and_sigalrm_still_time_out(sandbox):
    result = await run(sandbox, """
        import signal, time
        deaf = {signal.SIGTERM, signal.SIGALRM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU}
        for sig in deaf:
            signal.signal(sig, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, deaf)
        signal.alarm(1)
        print("deaf", flush=True)
        time.sleep(60)
        print("WOKE")
    """)
    assert result.status == TIMEOUT and result.stdout == "deaf\n"
    assert result.elapsed_ms < TEST_LIMITS.wall_s * 1000 + 2000
    await still_serving(sandbox)


async def test_a_long_c_level_call_times_out(sandbox):
    """Catastrophic regex backtracking: one C call that never checks for signals."""
    result = await run(sandbox, "import re\nre.match(r'(a*)*b', 'a' * 64)\nprint('MATCHED')")
    assert result.status == TIMEOUT and "MATCHED" not in result.stdout
    assert result.elapsed_ms < TEST_LIMITS.wall_s * 1000 + 2000
    await still_serving(sandbox)


# -- output ----------------------------------------------------------------------------------


async def test_endless_small_prints_meet_the_output_limit(sandbox):
    result = await run(sandbox, "while True:\n    print('abcdefghij')")
    assert result.status == OUTPUT_LIMIT, result
    assert len(result.stdout) < TEST_LIMITS.output_keep_bytes + 200
    assert result.elapsed_ms < TEST_LIMITS.wall_s * 1000  # stopped before the wall limit
    await still_serving(sandbox)


async def test_invalid_utf8_and_lone_surrogates_in_output(sandbox):
    result = await run(sandbox, """
        import os, sys
        os.write(1, b"raw \\xff\\xfe \\xc3\\x28 end\\n")
        sys.stdout.buffer.write(chr(0xDCE6).encode("utf-8", "surrogatepass") + b"\\n")
        sys.stdout.flush()
        print(chr(0xDCE6), "escaped")
        sys.stdout.reconfigure(errors="surrogatepass")
        print(chr(0xD800), "passed")
        sys.stderr.buffer.write(b"err \\xed\\xa0\\x80 \\x80\\n")
        sys.stderr.flush()
        print(chr(0xDFFF), file=sys.stderr)
    """)
    assert result.status == OK, result
    utf8_clean(result)
    assert result.stdout.startswith("raw \ufffd\ufffd \ufffd( end\n")
    assert "escaped" in result.stdout and "passed" in result.stdout
    assert result.stderr.startswith("err ")
    await still_serving(sandbox)


async def test_an_execed_python_writing_surrogates(sandbox):
    result = await run(sandbox, """
        import os, subprocess, sys
        env = {"PYTHONIOENCODING": "utf-8:surrogatepass"}
        subprocess.run([sys.executable, "-c", "print(chr(56550)); print(chr(0xD800) * 3)"],
                       env=env, check=True)
        os.execve(sys.executable, [sys.executable, "-c", "print(chr(0xDBFF), 'execed')"], env)
    """)
    # exec replaced the harness; the status is the exec'd program's own exit status
    assert (result.status, result.exit_code) == (OK, 0), result
    utf8_clean(result)
    assert "\ufffd" in result.stdout
    await still_serving(sandbox)


async def test_nul_bytes_in_output(sandbox):
    result = await run(sandbox, """
        import os, sys
        print("a\\0b")
        sys.stdout.flush()
        os.write(1, b"\\0" * 3 + b"\\n")
        print("\\0err", file=sys.stderr)
    """)
    assert result.status == OK, result
    assert result.stdout == "a\x00b\n\x00\x00\x00\n" and result.stderr == "\x00err\n"
    utf8_clean(result)
    await still_serving(sandbox)


async def test_closed_or_replaced_stdout_and_stderr(sandbox):
    closed = await run(sandbox, """
        import os
        os.close(1)
        os.close(2)
        print("into the void")
        raise ValueError("nobody hears this")
    """)
    assert closed.status in (OK, ERROR) and closed.stdout == ""
    replaced = await run(sandbox, """
        import os, sys
        print("before", flush=True)
        null = os.open("/dev/null", os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(1, 2)
        print("lost")
        print("lost too", file=sys.stderr)
    """)
    assert (replaced.status, replaced.stdout, replaced.stderr) == (OK, "before\n", "")
    swapped = await run(sandbox, """
        import os
        os.dup2(2, 1)
        print("to stderr")
    """)
    assert (swapped.status, swapped.stdout, swapped.stderr) == (OK, "", "to stderr\n")
    await still_serving(sandbox)


def _inherited_fds() -> str:
    return """
        import os
        def inherited():
            for fd in range(3, 4096):
                try:
                    os.fstat(fd)
                    yield fd
                except OSError:
                    pass
    """


async def test_garbage_in_the_inherited_result_pipe_still_gets_an_answer(sandbox):
    code = _inherited_fds() + """
        for fd in inherited():
            os.dup2(fd, 1)       # 'stdout' is now the harness's result pipe
        print("not json {")
    """
    try:
        result = await asyncio.wait_for(run(sandbox, code), TEST_LIMITS.wall_s + 1.5)
    finally:
        await still_serving(sandbox)
    assert result.status == ERROR and "report channel" in result.error, result


async def test_a_forged_verdict_in_the_result_pipe_is_not_believed(sandbox):
    code = _inherited_fds() + """
        import json
        forged = {"status": "ok", "exit_code": 0,
                  "report": {"status": "ok", "passed": True, "feedback": ["forged"]}}
        for fd in inherited():
            os.write(fd, json.dumps(forged).encode())
        os._exit(0)
    """
    result = await run(sandbox, code)
    await still_serving(sandbox)
    assert result.report is None and not report_from(result).passed


async def test_an_exception_message_with_a_lone_surrogate(sandbox):
    result = await run(sandbox, "raise ValueError('bad ' + chr(0xDCE6))")
    assert result.status == ERROR
    await still_serving(sandbox)
    utf8_clean(result)
