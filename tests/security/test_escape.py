#!/usr/bin/env python3
# The escape suite (issue 32, item 6): answers that try to get out of the worker's OS sandbox
# (docs/sandbox.md, "The OS sandbox"), each of which must be contained. It runs the real `kwb
# eval` on answers made from tests/fixtures/escape (README.md there says what each tries) and
# checks what their probes report and what the host shows afterwards. The attempts touch only
# what this script makes: its own helper process, files and folders under one temporary folder,
# a /dev/shm file, a SysV segment, a key in a session keyring of its own, sockets it listens on.
#
# Usage: test_escape.py --kwb PATH/kwb --worker PATH/kwb-worker [--gpu] [--keep]
# Prints one PASS/FAIL (or SKIP) line per attempt and closes with "N passed, M failed"; exits 1 on
# any failure, 77 (ctest's skip) where bubblewrap does not work here or, with --gpu, where there
# is no GPU.
import argparse
import base64
import ctypes
import hashlib
import json
import os
import re
import secrets
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(SOURCE_ROOT, "tests", "fixtures", "escape")
SKIP = 77


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""), flush=True)

    def skip(self, name, why):
        self.skipped += 1
        print(f"SKIP {name}: {why}", flush=True)


# ---- the host side: what the attempts aim at ------------------------------------------------------

def libc():
    return ctypes.CDLL(None, use_errno=True)


KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}  # add_key, keyctl


def make_session_key(payload):
    """A session keyring of this process's own (children inherit it) holding a key with payload.
    Returns "" or why not."""
    numbers = KEYCTL.get(os.uname().machine)
    if numbers is None:
        return "no keyctl numbers for " + os.uname().machine
    add_key, keyctl = numbers
    c = libc()
    if c.syscall(keyctl, 1, None) < 0:  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
        return "keyctl: " + os.strerror(ctypes.get_errno())
    data = payload.encode()
    if c.syscall(add_key, b"user", b"kwb-escape-test", data, ctypes.c_size_t(len(data)), ctypes.c_int(-3)) < 0:
        return "add_key: " + os.strerror(ctypes.get_errno())
    return ""


class SysVSegment:
    def __init__(self, payload):
        self.id = -1
        self.key = 0
        self.why = ""
        c = libc()
        c.shmat.restype = ctypes.c_void_p
        for _ in range(20):
            key = secrets.randbelow(2**30) + 1
            shm_id = c.shmget(ctypes.c_int(key), ctypes.c_size_t(4096), 0o1000 | 0o2000 | 0o600)  # IPC_CREAT|IPC_EXCL
            if shm_id >= 0:
                break
        else:
            self.why = "shmget: " + os.strerror(ctypes.get_errno())
            return
        address = c.shmat(shm_id, None, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            self.why = "shmat: " + os.strerror(ctypes.get_errno())
            c.shmctl(shm_id, 0, None)
            return
        ctypes.memmove(address, payload.encode() + b"\0", len(payload) + 1)
        c.shmdt(ctypes.c_void_p(address))
        self.id, self.key = shm_id, key

    def remove(self):
        if self.id >= 0:
            libc().shmctl(self.id, 0, None)  # IPC_RMID
            self.id = -1


class Listeners:
    """Sockets the attempts try to reach; a thread records anything that arrives."""

    def __init__(self, root):
        self.events = []
        self.sockets = {}
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("0.0.0.0", 0))
        tcp.listen(16)
        self.sockets["tcp"] = tcp
        self.tcp_port = tcp.getsockname()[1]
        self.tcp6_port = 0
        try:
            tcp6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            tcp6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            tcp6.bind(("::1", 0))
            tcp6.listen(16)
            self.sockets["tcp6"] = tcp6
            self.tcp6_port = tcp6.getsockname()[1]
        except OSError:
            pass
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("0.0.0.0", 0))
        self.sockets["udp"] = udp
        self.udp_port = udp.getsockname()[1]
        self.unix_path = os.path.join(root, "listener.sock")
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(self.unix_path)
        unix.listen(16)
        self.sockets["unix"] = unix
        self.abstract_name = "kwb-escape-" + secrets.token_hex(8)
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        abstract.bind("\0" + self.abstract_name)
        abstract.listen(16)
        self.sockets["abstract"] = abstract
        self.stop = False
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def watch(self):
        by_fd = {s.fileno(): (name, s) for name, s in self.sockets.items()}
        while not self.stop:
            readable, _, _ = select.select(list(by_fd), [], [], 0.2)
            for fd in readable:
                name, s = by_fd[fd]
                try:
                    if name == "udp":
                        data, peer = s.recvfrom(4096)
                        self.events.append((name, str(peer), data[:40]))
                    else:
                        conn, peer = s.accept()
                        self.events.append((name, str(peer), b""))
                        conn.close()
                except OSError:
                    pass

    def arrived(self, name):
        return [e for e in self.events if e[0] == name]

    def close(self):
        self.stop = True
        self.thread.join(2)
        for s in self.sockets.values():
            s.close()


def host_ip():
    """This machine's own non-loopback IPv4 address, or "" (the attempt is then skipped)."""
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(("192.0.2.123", 9))  # no packet is sent: only the route is looked up
        ip = s.getsockname()[0]
        s.close()
        return "" if ip.startswith("127.") else ip
    except OSError:
        return ""


def processes_with(text):
    """Host processes whose command line holds text (the attempts' own marker)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(name))
        except OSError:
            pass
    return found


def tree_snapshot(root):
    """{relative path: sha256 or "dir" or "link"} of everything under root."""
    out = {}
    for directory, dirs, files in os.walk(root):
        for d in dirs:
            path = os.path.join(directory, d)
            out[os.path.relpath(path, root)] = "link" if os.path.islink(path) else "dir"
        for f in files:
            path = os.path.join(directory, f)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = "link"
                continue
            try:
                with open(path, "rb") as fh:
                    out[rel] = hashlib.sha256(fh.read()).hexdigest()
            except OSError as e:
                out[rel] = f"unreadable {e.errno}"
    return out


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def verify_entry(directory):
    """An extension cache entry as extension_cache.verify sees it: "" or what is wrong."""
    try:
        with open(os.path.join(directory, "kwb-entry.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        return f"no manifest ({e})"
    files = manifest.get("files") or {}
    present = set()
    for root, _, names in os.walk(directory):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), directory)
            if rel != "kwb-entry.json":
                present.add(rel)
    if present != set(files):
        return f"files differ from the manifest: {sorted(present ^ set(files))[:5]}"
    for rel, digest in files.items():
        if sha256_of(os.path.join(directory, rel)) != digest:
            return f"{rel}: hash differs from the manifest"
    return ""


# ---- the answers ----------------------------------------------------------------------------------

def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def fill(text, values):
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", str(value))
    left = [m for m in re.findall(r"@@[A-Z0-9_]+@@", text) if m not in ("@@NAME@@", "@@PROBES_CPP@@", "@@FORWARD@@")]
    if left:
        raise RuntimeError(f"unfilled placeholders: {left}")
    return text


def shell_word_for_ninja(text):
    """One shell word that survives torch's ninja file (flags joined with spaces, no quoting; ninja
    runs the command through /bin/sh -c): every special character backslashed, `$` doubled for
    ninja."""
    out = []
    for c in text:
        if c.isalnum() or c in "/,-_.=+:@%^":
            out.append(c)
        elif c == "$":
            out.append("\\$$")
        elif c == "\n":
            raise ValueError("one line only")
        else:
            out.append("\\" + c)
    return "".join(out)


class Run:
    def __init__(self, label, completed, seconds):
        self.label = label
        self.seconds = seconds
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        try:
            self.json = json.loads(completed.stdout)
        except ValueError:
            self.json = {}
        self.status = self.json.get("status", f"(no JSON; exit code {completed.returncode}: "
                                              f"{completed.stderr.strip()[-300:]})")
        self.message = str(self.json.get("message") or "")
        self.report = {}
        text = self.message + "\n" + str(self.json.get("worker_stderr") or "")
        for line in text.splitlines():
            if "=" in line and line[:2] in ("L.", "F.", "B.", "E."):
                key, _, value = line.partition("=")
                self.report.setdefault(key, value)

    def all_text(self):
        return self.stdout + "\n" + self.stderr

    def phases(self, key, phases):
        """{phase: value} of a probe key, for the phases that reported it."""
        return {p: self.report[f"{p}.{key}"] for p in phases if f"{p}.{key}" in self.report}


def marker_forms(marker):
    raw = marker.encode()
    forms = {"raw": raw, "reversed": raw[::-1], "hex": raw.hex().encode(), "HEX": raw.hex().upper().encode(),
             "escaped": "".join(f"\\x{b:02x}" for b in raw).encode()}
    return forms


def denied(value):
    return value.startswith("ERR:") or value.startswith("SOCKET_ERR") or value.startswith("name_to_handle_at:ERR")


class Suite:
    def __init__(self, args):
        self.args = args
        self.results = Results()
        self.runs = []
        self.kwb = os.path.abspath(args.kwb)
        self.worker = os.path.abspath(args.worker)
        self.helper = self.listeners = self.sysv = None
        self.root = self.daemon_mark = self.shm_name = None

    def make_targets(self):
        """What the attempts aim at (run inside main's try, so that cleanup() follows a failure)."""
        self.root = tempfile.mkdtemp(prefix="kwb-escape-", dir="/tmp")
        self.home = os.path.join(self.root, "home")
        self.host_dir = os.path.join(self.root, "host")
        # The cache lies outside /tmp, as a user's ~/.cache does: under /tmp the sandbox's own /tmp
        # (a writable tmpfs) hid that the builder's staging folder had no mount point elsewhere.
        cache_parent = next((d for d in ("/var/tmp", os.path.expanduser("~")) if os.access(d, os.W_OK)), "/tmp")
        self.cache_root = tempfile.mkdtemp(prefix="kwb-escape-cache-", dir=cache_parent)
        self.cache = os.path.join(self.cache_root, "cache")
        self.answers = os.path.join(self.root, "answers")
        for d in (self.home, self.host_dir, self.cache, self.answers, os.path.join(self.home, ".config", "kernel-workbench")):
            os.makedirs(d, exist_ok=True)
        tag = secrets.token_hex(4)
        self.tmp_name = f"kwb-escape-{tag}"
        self.shm_name = f"kwb-escape-{tag}"
        self.daemon_mark = "".join(str(secrets.randbelow(10)) for _ in range(12)) + "7"
        self.markers = {name: f"kwbsecret{name}{secrets.token_hex(10)}"
                        for name in ("apikey", "homeconfig", "helperenv", "helpercmd", "fd", "keyring", "sysv", "devshm")}
        with open(os.path.join(self.home, ".config", "kernel-workbench", "kernel-workbench.conf"), "w") as f:
            f.write(f"[model]\napi_key={self.markers['homeconfig']}\n")
        with open(f"/dev/shm/{self.shm_name}-host", "w") as f:
            f.write(self.markers["devshm"])
        fd_file = os.path.join(self.root, "fd-secret")
        with open(fd_file, "w") as f:
            f.write(self.markers["fd"])
        self.fd_path = fd_file
        self.inherited_fd = os.open(fd_file, os.O_RDONLY)
        os.set_inheritable(self.inherited_fd, True)
        self.keyring_why = make_session_key(self.markers["keyring"])
        self.sysv = SysVSegment(self.markers["sysv"])
        self.listeners = Listeners(self.root)
        self.host_ip = host_ip()
        # A process of the test's own with secrets in its environment and command line.
        self.helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", self.markers["helpercmd"]],
                                       env={"PATH": "/usr/bin:/bin", "KWB_ESCAPE_HELPER_SECRET": self.markers["helperenv"]},
                                       stdin=subprocess.DEVNULL, preexec_fn=lambda: libc().prctl(1, 9))  # ends with us

    def prepare(self):
        """The answers' values (run inside main's try, so that cleanup() follows a failure)."""
        self.tasks_dir = os.path.join(SOURCE_ROOT, "tasks")
        self.home_before = set(os.listdir(self.home))
        self.encoded = ",".join(bytes(b ^ 0x5A for b in m.encode()).hex() for m in self.markers.values())
        self.values = {
            "ENCODED_SECRETS": self.encoded, "HELPER_PID": self.helper.pid, "TEST_PID": os.getpid(),
            "TEST_HOME": self.home, "HOST_DIR": self.host_dir, "TMP_NAME": self.tmp_name, "SHM_NAME": self.shm_name,
            "CACHE_DIR": self.cache, "WORKER_BIN": self.worker, "TASKS_DIR": self.tasks_dir, "HOST_IP": self.host_ip,
            "TCP_PORT": self.listeners.tcp_port, "TCP6_PORT": self.listeners.tcp6_port, "UDP_PORT": self.listeners.udp_port,
            "UNIX_PATH": self.listeners.unix_path, "ABSTRACT_NAME": self.listeners.abstract_name,
            "SHM_KEY": self.sysv.key, "DAEMON_MARK": self.daemon_mark,
        }
        self.probe_py = fill(fixture("probe.py"), self.values)
        self.values["PROBE_PY_B64"] = base64.b64encode(self.probe_py.encode()).decode()
        script = ('[ -e buildprobe.txt ] || (echo ' + self.values["PROBE_PY_B64"] +
                  ' | base64 -d | /usr/bin/python3 - B > buildprobe.txt 2>&1); exec "$0" "$@"')
        self.values["BUILD_WRAPPER"] = repr(shell_word_for_ninja("/bin/sh,-c," + script))
        self.probes_cpp = fill(fixture("probes.cpp"), self.values)
        if "'''" in self.probes_cpp:
            raise RuntimeError("probes.cpp must not hold '''")

    # -- running kwb --

    def environment(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("KWB_") and not k.startswith("XDG_") and not k.endswith("_API_KEY")}
        env.update({"HOME": self.home, "KWB_API_KEY": self.markers["apikey"], "KWB_EXTENSION_CACHE": self.cache,
                    "KWB_WORKER": self.worker})
        return env

    def answer(self, name, template, forward=None):
        text = template.replace("@@PROBES_CPP@@", self.probes_cpp)
        if forward is not None:
            text = text.replace("@@FORWARD@@", forward)
        text = fill(text, self.values)
        path = os.path.join(self.answers, name + ".md")
        with open(path, "w") as f:
            f.write(text)
        return path

    def eval(self, label, answer, device="cpu", timeout=240, extra=()):
        command = [self.kwb, "eval", "L1/5", answer, "--device", device, "--scale", "smoke", "--json",
                   "--timeout", str(timeout), *extra]
        t0 = time.monotonic()
        completed = subprocess.run(command, env=self.environment(), capture_output=True, text=True,
                                   pass_fds=(self.inherited_fd,), timeout=timeout + 120, cwd=self.root)
        run = Run(label, completed, time.monotonic() - t0)
        self.runs.append(run)
        print(f"  ran {label}: {run.status} in {run.seconds:.1f} s", flush=True)
        if "without the OS sandbox" in completed.stderr or "no_os_sandbox" in completed.stdout:
            print(f"SKIP escape suite: kwb runs the worker without the OS sandbox here: "
                  f"{completed.stderr.strip().splitlines()[-1] if completed.stderr.strip() else ''}", flush=True)
            sys.exit(SKIP)  # main's finally cleans up
        self.after_run(run)
        return run

    def after_run(self, run):
        # Nothing an answer started may outlive kwb: checked after every run, killed if found.
        time.sleep(0.3)
        left = processes_with(self.daemon_mark)
        run.daemons_left = left
        for pid in left:
            try:
                os.kill(pid, 9)
            except OSError:
                pass

    # -- checks --

    def check_markers(self):
        """No secret marker in any output of kwb, in any of several encodings; no scrubbed key."""
        problems = []
        for run in self.runs:
            text = run.all_text().encode(errors="replace")
            for name, marker in self.markers.items():
                for form, pattern in marker_forms(marker).items():
                    if pattern in text:
                        problems.append(f"{run.label}: {name} ({form})")
            if b"[redacted]" in text:
                problems.append(f"{run.label}: '[redacted]' (kwb scrubbed a key the worker had)")
        return problems

    def run_all(self):
        print(f"escape suite in {self.root} (kwb {self.kwb}, worker {self.worker})", flush=True)
        return self.run_gpu() if self.args.gpu else self.run_cpu()

    def run_cpu(self):
        r = self.results
        native = fixture("native_probes.md")
        # 1. Builds that fail: compile logs, and compiler wrappers written as a model would.
        compile_run = self.eval("compile_log_includes", self.answer("compile_log_includes", fixture("compile_log_includes.md")))
        cache_after_failures = tree_snapshot(self.cache)
        # 2. The probes: during the build (the wrapper), at load (a static initializer), in forward.
        probes_run = self.eval("native_probes", self.answer("native_probes", native,
                                                           "return probes.probe_forward(A) * 0 + A * s"))
        cache_after_probes = tree_snapshot(self.cache)
        # 3. The same extension (a cache hit) ending the worker in ways that must not read as the
        #    machine's, and going over the host limits.
        exit_run = self.eval("exit_137", self.answer("exit_137", native, "probes.exit_with(137)\n        return A * s"))
        exec_run = self.eval("exec_exit_137", self.answer("exec_exit_137", native, "probes.exec_exit(137)\n        return A * s"))
        signal_run = self.eval("signals_at_pid1", self.answer("signals_at_pid1", native,
                                                             "probes.signal_pid1(11)\n        probes.signal_pid1(6)\n"
                                                             "        probes.signal_pid1(2)\n        return A * s"))
        threads_run = self.eval("threads_over_cap", self.answer("threads_over_cap", native,
                                                               "probes.spawn_threads(2000, 4000)\n        return A * s"))
        memory_run = self.eval("tmpfs_memory", self.answer("tmpfs_memory", native,
                                                           f'written = probes.fill_file("/dev/shm/{self.shm_name}-fill", 900)\n'
                                                           "        if written < 900:\n"
                                                           "            raise RuntimeError(f'FILL_STOPPED {written}')\n"
                                                           "        return A * s"), extra=("--max-host-memory", "600M"))
        cache_after_reuse = tree_snapshot(self.cache)
        # 4. Python past the answer checks; 5. the native format.
        python_run = self.eval("python_routes", self.answer("python_routes", fixture("python_routes.md")))
        ts_run = self.eval("torchscript_reads", self.answer("torchscript_reads", fixture("torchscript_reads.md")))
        cuda_run = self.eval("cuda_include_reads", self.answer("cuda_include_reads", fixture("cuda_include_reads.md")))

        self.check_reports(probes_run, [python_run])
        self.check_host()

        # -- the extension cache --
        first = self.cache_problems({}, cache_after_failures, ("kwb_escape_",))
        r.check("compile_wrappers_write_into_the_cache", not first, "; ".join(first[:8]) or
                f"{len(cache_after_failures)} files, each in a verified entry")
        second = self.cache_problems(cache_after_failures, cache_after_probes, ("kwb_escape_probes",))
        r.check("build_and_load_write_into_the_cache", not second, "; ".join(second[:8]) or
                "the earlier entries unchanged, the new entry verified")
        third = self.cache_problems(cache_after_probes, cache_after_reuse, ())
        third += self.cache_problems(cache_after_reuse, tree_snapshot(self.cache), ())
        r.check("reloads_and_python_write_into_the_cache", not third, "; ".join(third[:8]) or
                "the cache unchanged by five loads of the entry and the Python route")

        # -- endings that must not read as the machine's failure; the host limits --
        p = probes_run
        r.check("sigkill_own_worker_at_load_and_in_forward",
                p.status not in ("worker_lost", "crashed") and "L.worker_survived_kills" in p.report and
                "F.worker_survived_kills" in p.report,
                f"status {p.status}, survived: load {'L.worker_survived_kills' in p.report}, "
                f"forward {'F.worker_survived_kills' in p.report}")
        r.check("sigsegv_sigabrt_sigint_at_the_worker", signal_run.status not in ("worker_lost", "timeout"),
                f"status {signal_run.status}: {signal_run.message[:160]}")
        r.check("exit_137_is_not_a_signal_death", exit_run.status == "crashed",
                f"status {exit_run.status}: {exit_run.message[:200]}")
        r.check("exec_shell_exit_137_is_not_a_signal_death", exec_run.status == "crashed",
                f"status {exec_run.status}: {exec_run.message[:200]}")
        r.check("threads_over_the_cap", threads_run.status == "resource_limit",
                f"status {threads_run.status}: {threads_run.message[:200]}")
        # Contained either way: the host limit ends it, or the sandbox's bounded /dev/shm (256 MiB,
        # kSandboxShmBytes) stops the writes well below the limit.
        stopped = re.search(r"FILL_STOPPED (\d+)", memory_run.message or "")
        r.check("tmpfs_writes_over_the_memory_limit",
                memory_run.status == "resource_limit" or (stopped is not None and int(stopped.group(1)) <= 256),
                f"status {memory_run.status} with --max-host-memory 600M, 900 MiB asked of /dev/shm"
                + (f": {stopped.group(1)} MiB written, then the tmpfs was full" if stopped else
                   (f": {memory_run.message[:160]}" if memory_run.message else "")))

        # -- compile logs and the other answer formats --
        log = compile_run.message
        r.check("compile_log_include_etc_passwd", "daemon:" not in log and "root:x:0:0" in log,
                "the synthetic /etc/passwd only" if "root:x:0:0" in log and "daemon:" not in log else f"log: {log[:300]}")
        r.check("compile_log_include_environ", "HELPER_ENVIRON_ABSENT" in log and "TEST_ENVIRON_ABSENT" in log,
                "another process's environment not visible to the build" if "HELPER_ENVIRON_ABSENT" in log
                else f"log: {log[:300]}")
        r.check("compile_log_extra_include_paths_home", "TEST_HOME_CONFIG_ABSENT" in log and "INCLUDE_PATH_CONFIG_ABSENT" in log,
                "the test's home not visible to the build" if "TEST_HOME_CONFIG_ABSENT" in log else f"log: {log[:300]}")
        dev_zero = log[log.find("dev_zero: "):][:4000] if "dev_zero: " in log else ""
        r.check("compile_runaway_stops_at_the_data_limit",
                "out of memory" in dev_zero and "RLIMIT_DATA" in dev_zero,
                "cc1plus on /dev/zero stopped at the broker's data limit" if "RLIMIT_DATA" in dev_zero
                else f"log: {dev_zero[:300] or log[:300]}")
        r.check("compile_wrappers_ran", log.count(": Error building extension") + log.count(": BUILT") >= 6,
                f"{log.count(': Error building extension')} builds failed as expected" if "wrapper_tmp" in log else f"log: {log[:300]}")
        effects = os.listdir(self.host_dir) + [n for n in os.listdir("/tmp") if n.startswith(self.tmp_name)]
        r.check("python_routes_torch_sys_modules", not effects and python_run.status != "worker_lost",
                f"status {python_run.status}" + (f" ({python_run.message[:100]})" if python_run.status == "rejected" else
                                                 f", audit hook disarmed: {python_run.report.get('E.audit_hook_disarmed', '-')}, "
                                                 f"shell ran: {'E.done' in python_run.report}") +
                (f"; host effects: {effects}" if effects else "; no host effect"))
        for run, name in ((ts_run, "torchscript_default_reads_files"), (cuda_run, "native_cuda_include_reads_files")):
            leaked = [m for m in ("root:x:0:0", "nobody:x:65534", "PATH=") if m in run.all_text()]
            r.check(name, not leaked and run.status in ("rejected", "compile_error", "format_error"),
                    f"status {run.status}" + (f", leaked {leaked}" if leaked else ", nothing of the files came back"))
        self.check_output()
        return self.runs

    def run_gpu(self):
        r = self.results
        run = self.eval("cuda_probes", self.answer("cuda_probes", fixture("cuda_probes.md")), device="cuda")
        self.check_reports(run, [], prefix="gpu_")
        self.check_host(prefix="gpu_")
        problems = self.cache_problems({}, tree_snapshot(self.cache), ("kwb_escape_cuda_probes",))
        r.check("gpu_build_and_load_write_into_the_cache", not problems, "; ".join(problems[:8]) or "the entry verified")
        r.check("gpu_sigkill_own_worker_at_load_and_in_forward",
                run.status not in ("worker_lost", "crashed") and "L.worker_survived_kills" in run.report and
                "F.worker_survived_kills" in run.report, f"status {run.status}: {run.message[:200]}")
        self.check_output(prefix="gpu_")
        return self.runs

    # -- the checks --

    def check_reports(self, primary, others, prefix=""):
        """The probes' own reports: phases L (load), F (forward), B (the build) of the primary run, E
        (Python past the checks) of the others where they ran."""
        r = self.results
        runs = [primary] + others
        ALL = ("L", "F", "B", "E")

        def check(name, key, phases, ok, describe=None):
            values = {}
            for run in runs:
                values.update({f"{run.label}:{k}": v for k, v in run.phases(key, phases).items()})
            if not any(k.startswith(primary.label + ":") for k in values):
                r.check(prefix + name, False, f"no {key} in the report ({primary.status}: {primary.message[:300]})")
                return
            show = describe or (lambda v: v[:160])
            bad = {k: v for k, v in values.items() if not ok(v)}
            if bad:
                r.check(prefix + name, False, "; ".join(f"{k}: {show(v)}" for k, v in sorted(bad.items())))
            else:
                r.check(prefix + name, True, ", ".join(sorted(values)) + ": " + show(next(iter(values.values())))[:80])

        def only_own_processes(v):
            # "pid:state:ppid:command line": a process of the host would show parent 0 (outside the
            # namespace), as only the worker (PID 1) may; the others are its own children.
            entries = [e.split(":") for e in v.split("|") if e and e != "..."]
            return all((e[0] == "1") == (e[2:3] == ["0"]) for e in entries)

        # Other processes and the user's files.
        check("proc_shows_only_the_worker_and_its_children", "proc_pids", ("L", "F"), only_own_processes)
        check("proc_of_the_build_shows_no_host_process", "proc_pids", ("B", "E"),
              lambda v: "kwb eval" not in v and "test_escape" not in v and v.count("|") < 60)
        check("pid_guessing_finds_no_host_process", "pid_scan", ("L", "F"),
              lambda v: "others=" in v and only_own_processes(v.split("others=", 1)[1]))
        check("another_process_environ", "helper_environ", ALL, denied)
        check("another_process_cmdline", "helper_cmdline", ALL, denied)
        check("the_test_process_environ", "test_environ", ALL, denied)
        check("another_process_root_folder", "helper_root_listing", ALL, denied)
        check("another_process_ptrace", "helper_ptrace", ("L", "F"), denied)
        check("another_process_vm_readv", "helper_process_vm_readv", ("L", "F"), denied)
        check("another_process_pidfd_and_kill", "helper_pidfd_open", ("L", "F"), denied)
        check("worker_environment_holds_no_secret", "own_environment", ALL,
              lambda v: not v.startswith("SECRET") and "KWB_API_KEY" not in v)
        check("worker_environ_file_holds_no_secret", "pid1_environ_file", ALL, lambda v: not v.startswith("SECRET"))
        check("api_key_variable_absent", "api_key_variable", ALL, lambda v: v == "UNSET")
        check("etc_passwd_is_the_synthetic_one", "etc_passwd", ALL,
              lambda v: v.startswith("READ:") and "daemon:" not in v and "nobody:x:65534" in v)
        check("etc_shadow_absent", "etc_shadow", ALL, denied)
        check("test_home_config_absent", "test_home_config", ALL, denied)
        check("test_home_folder_absent", "test_home_listing", ("L", "B", "E"), lambda v: denied(v) or ".config" not in v)
        check("inherited_file_descriptor", "open_fds", ALL, lambda v: "SECRET" not in v and self.fd_path not in v)
        if self.keyring_why:
            r.skip(prefix + "session_keyring", self.keyring_why)
        else:
            check("session_keyring", "keyrings", ALL, lambda v: "SECRET" not in v and "kwb-escape-test" not in v)
        if self.sysv.why:
            r.skip(prefix + "sysv_shared_memory", self.sysv.why)
        else:
            check("sysv_shared_memory", "sysv_shm", ("L", "F"), denied)
        check("dev_shm_of_the_host", "dev_shm_host_file", ALL, denied)
        # Writes the host would keep (their effects are checked on the host in check_host).
        check("write_worker_binary", "write_worker_binary", ALL, denied)
        check("write_kernel_settings_core_pattern", "write_proc_sys_core_pattern", ALL, denied)
        check("write_kernel_settings_drop_caches", "write_proc_sys_drop_caches", ALL, denied)
        check("write_sys", "write_sys", ("L", "F"), denied)
        check("mount_in_the_sandbox", "mount_tmpfs", ("L", "F"), denied)
        check("open_by_handle_at", "open_by_handle_at", ("L", "F"), denied)

        # A user namespace of its own (the sandbox allows one), a chroot there and `cd ..` out of
        # it: still the sandbox's root (no /home), the test's home not there (only what the answer's
        # own writes made in the sandbox's /tmp, never its .config).
        def still_in_the_sandbox(v):
            if v.startswith("unshare:ERR"):
                return True
            root = v.split("root=", 1)[-1].split(" ", 1)[0].replace("\\x7c", "|")
            home = v.split("test_home=", 1)[-1].split(" ", 1)[0]
            return root.startswith("LIST:") and "home" not in root[5:].split("|") and ".config" not in home

        check("user_namespace_chroot_breakout", "userns_chroot", ("L", "F"), still_in_the_sandbox, lambda v: v[:300])
        check("controlling_terminal", "dev_tty", ("L", "F"), denied)
        check("terminal_input_injection", "tiocsti", ("L", "F"), denied)
        check("write_cache_new_file", "write_cache_new_file", ("L", "F", "E"), denied)
        check("write_cache_other_entries", "write_cache_entries", ("L", "F", "E"), lambda v: "succeeded=0 " in v + " ")
        for key in ("own_library_open_for_writing", "own_library_rename", "own_library_unlink", "own_library_chmod",
                    "own_library_replace"):
            check(f"replace_own_entry_{key[12:]}", key, ("L", "F"), denied)
        # Network: the reports here, the listeners in check_host.
        check("tcp_loopback", "net_tcp_loopback", ALL, lambda v: "CONNECTED" not in v)
        if self.host_ip:
            check("tcp_host_address", "net_tcp_host_ip", ALL, lambda v: "CONNECTED" not in v)
        else:
            r.skip(prefix + "tcp_host_address", "this machine has no non-loopback IPv4 address")
        if self.listeners.tcp6_port:
            check("tcp6_loopback", "net_tcp6_loopback", ALL, lambda v: "CONNECTED" not in v)
        else:
            r.skip(prefix + "tcp6_loopback", "no IPv6 loopback here")
        check("unix_socket_in_host_tmp", "net_unix_socket", ALL, lambda v: "CONNECTED" not in v)
        check("abstract_unix_socket", "net_abstract_socket", ALL, lambda v: "CONNECTED" not in v)
        check("only_loopback_interface", "net_interfaces", ("L", "F"), lambda v: v == "lo")
        for key in ("setrlimit_cpu", "setrlimit_rttime", "prlimit_cpu", "prlimit64_raw_cpu"):
            check(f"lower_{key}", key, ("L", "F"), denied)

    def check_host(self, prefix=""):
        """What the host shows after every run: no file written where the answers aimed, no
        connection at the listeners, no process of the answers left."""
        r = self.results
        host_dir = os.listdir(self.host_dir)
        tmp = [n for n in os.listdir("/tmp") if n.startswith(self.tmp_name)]
        r.check(prefix + "write_host_tmp", not host_dir and not tmp,
                f"in {self.host_dir}: {host_dir}, in /tmp: {tmp}" if host_dir or tmp else "nothing new in the test's /tmp folder or /tmp")
        home = sorted(n for n in set(os.listdir(self.home)) - self.home_before if "written" in n or "planted" in n or "wrapper" in n)
        r.check(prefix + "write_test_home", not home, str(home) if home else "nothing written in the test's HOME")
        shm = [n for n in os.listdir("/dev/shm") if n.startswith(self.shm_name) and n != f"{self.shm_name}-host"]
        r.check(prefix + "write_dev_shm", not shm, str(shm) if shm else "nothing new in the host's /dev/shm")
        # By name, not by hash: the build tree may be rebuilt while the suite runs (the probes only
        # open the worker binary, they never write to it).
        planted = [os.path.join(d, n) for d in (os.path.dirname(self.worker), self.tasks_dir)
                   for n in os.listdir(d) if "planted" in n or "written" in n]
        r.check(prefix + "write_install_tree_and_tasks", not planted, f"new: {planted}" if planted else
                "nothing new in bin/ or the tasks folder")
        events = self.listeners.events
        r.check(prefix + "listeners_saw_no_connection", not events, str(events[:5]) if events else
                "no connection or datagram reached the test's TCP, TCP6, UDP, Unix and abstract listeners")
        spawned = [f"{run.label}:{k}" for run in self.runs for k in run.report if k.endswith(".daemons")]
        left = {run.label: run.daemons_left for run in self.runs if run.daemons_left}
        r.check(prefix + "daemons_outlive_the_evaluation", not left and bool(spawned),
                f"left: {left}" if left else f"spawned by {', '.join(spawned)}; none left after kwb exited")

    def cache_problems(self, before, after, allowed_new_prefixes):
        problems = []
        # The broker's spare builder (docs/sandbox.md): a killed broker leaves its unused spare's
        # folder, which the next broker removes; it may hold only the broker's log and the
        # spare's word that it was ready, written before any build took it.
        spare_files = ("", "/.kwb-builder.log", "/kwb-spare-ready")
        for rel in sorted(set(before) | set(after)):
            if rel.startswith(".spare-") and rel[len(rel.split("/")[0]):] not in spare_files:
                problems.append(f"in a spare builder's folder: {rel}")
        before = {rel: d for rel, d in before.items() if not rel.startswith(".spare-")}
        after = {rel: d for rel, d in after.items() if not rel.startswith(".spare-")}
        for rel, digest in before.items():
            if after.get(rel) != digest:
                problems.append(f"changed: {rel}")
        for rel in sorted(set(after) - set(before)):
            top = rel.split("/")[0]
            if not any(top.startswith(prefix) or top.startswith("." + prefix) for prefix in allowed_new_prefixes):
                problems.append(f"new: {rel}")
        for name in os.listdir(self.cache):
            path = os.path.join(self.cache, name)
            if "planted" in name or "wrapper-literal" in name or name.startswith(".staging-"):
                problems.append(f"stray: {name}")
            elif os.path.isdir(path) and not name.startswith("."):
                why = verify_entry(path)
                if why:
                    problems.append(f"{name}: {why}")
        return problems

    def check_output(self, prefix=""):
        problems = self.check_markers()
        self.results.check(prefix + "secret_markers_in_kwb_output", not problems,
                           "; ".join(problems[:10]) or f"{len(self.markers)} markers x {len(marker_forms('x'))} encodings, "
                           f"{len(self.runs)} runs")

    def cleanup(self):
        """Ends and removes what make_targets made, as far as it got."""
        if self.helper is not None:
            try:
                self.helper.kill()
                self.helper.wait(5)
            except Exception:
                pass
        if self.listeners is not None:
            self.listeners.close()
        if self.sysv is not None:
            self.sysv.remove()
        if self.daemon_mark:
            for pid in processes_with(self.daemon_mark):
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
        for name in os.listdir("/dev/shm") if self.shm_name else []:
            if name.startswith(self.shm_name):
                try:
                    os.remove(os.path.join("/dev/shm", name))
                except OSError:
                    pass
        if self.root and not self.args.keep:
            for d in (self.root, getattr(self, "cache_root", None)):
                if d:
                    subprocess.run(["chmod", "-R", "u+w", d], capture_output=True)
                    shutil.rmtree(d, ignore_errors=True)


def bubblewrap_works():
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return "bubblewrap is not installed (no bwrap in PATH)"
    true = shutil.which("true") or "/bin/true"
    r = subprocess.run([bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/",
                        "--proc", "/proc", "--dev", "/dev", "--", true], capture_output=True, text=True)
    if r.returncode != 0:
        return f"bwrap fails here (exit code {r.returncode}): {r.stderr.strip()[-300:]}"
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kwb", required=True)
    parser.add_argument("--worker", required=True)
    parser.add_argument("--gpu", action="store_true", help="the CUDA variant (needs nvidia-smi and a CUDA torch)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    why = bubblewrap_works()
    if why:
        print(f"SKIP escape suite: the OS sandbox cannot work here: {why}", flush=True)
        return SKIP
    if args.gpu:
        try:
            subprocess.run(["nvidia-smi", "-L"], check=True, capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            print(f"SKIP escape suite (GPU): nvidia-smi does not work here ({e})", flush=True)
            return SKIP
    t0 = time.monotonic()
    suite = Suite(args)
    try:
        suite.make_targets()
        suite.prepare()
        runs = suite.run_all()
    finally:
        suite.cleanup()
    r = suite.results
    timings = ", ".join(f"{run.label} {run.seconds:.1f} s" for run in runs)
    print(f"runs: {timings}; total {time.monotonic() - t0:.1f} s", flush=True)
    print(f"{r.passed} passed, {r.failed} failed", flush=True)
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
