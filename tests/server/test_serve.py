"""``flask --app pbem pbem serve``: the whole server under one supervisor, as real
processes on loopback: it answers, brings back a child killed with SIGKILL, stops every
process on SIGTERM with status 0, starts without a line that looks like an error, and
moves every port it opens with PORT, so two of them run side by side."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import smtplib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pbem import supervise
from pbem.supervise import Backoff, Spec, Supervisor

READY = "Ctrl-C (or SIGTERM) stops it all"
SECRET = "serve-test-" + "s" * 40
WAIT = 90.0  # seconds: two cores shared with other test files
ROOT = Path(__file__).resolve().parent.parent.parent


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (where port 0 binds and outgoing
    connections take their local port)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports() -> int:
    """A free web port whose receiver port (``supervise.inbound_port``) is free too, both
    below the ephemeral range: a server takes them seconds after this check, and a port
    of that range may meanwhile become the local port of any connection another test
    opens (the receiver then cannot bind: "address already in use")."""
    rng = random.SystemRandom()
    top = _ephemeral_low()
    for _ in range(200):
        port = rng.randrange(5000, top)
        receiver = supervise.inbound_port(port)
        if not 1024 <= receiver < top:
            continue
        try:
            for candidate in (port, receiver):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free pair of ports")


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children, their children, ...)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


class Served:
    """One ``pbem serve`` on its own database, mailbox folder and PORT."""

    def __init__(self, folder: Path, template: Path, port: int,
                 command: list[str] | None = None, **settings: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, folder / "pbem.sqlite3")
        self.folder, self.port = folder, port
        self.log = folder / "serve.log"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PBEM_") and k not in ("PORT", "HOST")}
        env |= {"PBEM_DATABASE_URL": f"sqlite:///{folder / 'pbem.sqlite3'}",
                "PBEM_MAILBOX_DIR": str(folder / "mailbox"), "PBEM_SECRET_KEY": SECRET,
                "PBEM_MAIL_BACKEND": "dev", "PORT": str(port), **settings}
        self.by_make = command is not None  # then in a session of its own, as at a terminal
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                command or [sys.executable, "-m", "flask", "--app", "pbem", "pbem", "serve",
                            "--bot-workers", "1"],
                env=env, cwd=ROOT if self.by_make else folder, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=self.by_make)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, text: str, after: int = 0, timeout: float = WAIT) -> str:
        """The output once ``text`` shows in it past character ``after``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            out = self.output()
            if text in out[after:]:
                return out
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"no {text!r} in the output of serve:\n{self.output()}")

    def wait_ready(self) -> str:
        """The output once web, clock, inbound and the bot worker have each said they
        run."""
        for text in (READY, "clock running", "receiving replies", "bot worker running"):
            self.wait_for(text)
        self.get_until_ok("/healthz")
        return self.output()

    def get(self, path: str) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}",
                                        timeout=10) as answer:
                return answer.status
        except urllib.error.HTTPError as exc:
            return exc.code

    def get_until_ok(self, path: str, timeout: float = WAIT) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if self.get(path) == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"{path} did not answer 200 on port {self.port}")

    def pid_of(self, name: str) -> int:
        """The pid of the child ``name`` as the supervisor last started it."""
        found = re.findall(rf"started {name} \(pid (\d+)\)", self.output())
        assert found, f"serve started no {name}"
        return int(found[-1])

    def stop(self) -> int:
        if self.proc.poll() is None and self.by_make:  # Ctrl-C at the terminal
            os.killpg(self.proc.pid, signal.SIGINT)
        elif self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            for pid in descendants(self.proc.pid):
                os.kill(pid, signal.SIGKILL)
            self.proc.kill()
            raise


@pytest.fixture
def served(tmp_path, sqlite_template) -> Iterator[Served]:
    server = Served(tmp_path / "one", sqlite_template, free_ports())
    yield server
    server.stop()


@pytest.fixture
def two_served(tmp_path, sqlite_template) -> Iterator[tuple[Served, Served]]:
    """Two checkouts' servers on one machine: own database, mailbox folder and PORT."""
    first = Served(tmp_path / "a", sqlite_template, free_ports())
    second_port = free_ports()
    while second_port in (first.port, supervise.inbound_port(first.port)):
        second_port = free_ports()
    second = Served(tmp_path / "b", sqlite_template, second_port, PBEM_WEB_WORKERS="3")
    yield first, second
    for server in (first, second):
        server.stop()


def workers_of(server: Served) -> int:
    """How many workers the server's gunicorn has, once it stops forking more."""
    end, counts = time.monotonic() + 10, [-1]
    while time.monotonic() < end:
        counts.append(len(descendants(server.pid_of("web"))))
        if counts[-1] == counts[-2] and counts[-1] > 0:
            break
        time.sleep(0.5)
    return counts[-1]


# ---------------------------------------------------------------------- the whole server
@pytest.mark.parametrize("victim", ["web", "clock", "inbound", "bots"])
def test_a_child_killed_with_sigkill_comes_back_and_the_web_answers(served, victim):
    served.wait_ready()
    old = served.pid_of(victim)
    workers = descendants(old)
    seen = len(served.output())
    os.kill(old, signal.SIGKILL)
    served.wait_for(f"{victim} was killed by SIGKILL", after=seen)
    served.wait_for(f"started {victim} (pid", after=seen)
    new = served.pid_of(victim)
    assert new != old and alive(new)
    assert not any(alive(pid) for pid in workers), "the dead child's processes live on"
    if victim == "clock":
        served.wait_for("clock running", after=seen)
    if victim == "bots":
        served.wait_for("bot worker running", after=seen)
    if victim == "inbound":
        served.wait_for("receiving replies", after=seen)
        with smtplib.SMTP("127.0.0.1", supervise.inbound_port(served.port), timeout=10) as s:
            assert s.noop()[0] == 250
    served.get_until_ok("/healthz")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_sigterm_or_ctrl_c_stops_every_process_and_exits_0(served, sig):
    served.wait_ready()
    assert workers_of(served) == 2
    everyone = descendants(served.proc.pid)
    assert len(everyone) == 6  # gunicorn, its two workers, clock, inbound, a bot worker
    served.proc.send_signal(sig)
    assert served.stop() == 0
    assert [pid for pid in everyone if alive(pid)] == []  # at once: serve waited for them
    assert served.output().rstrip().endswith("stopped")


def test_no_process_outlives_serve_killed_with_sigkill(served):
    served.wait_ready()
    assert workers_of(served) == 2
    everyone = descendants(served.proc.pid)
    served.proc.kill()
    served.proc.wait(timeout=30)
    end = time.monotonic() + WAIT
    while any(alive(pid) for pid in everyone) and time.monotonic() < end:
        time.sleep(0.2)
    left = [pid for pid in everyone if alive(pid)]
    for pid in left:  # not to leave them to the rest of the suite
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_the_start_prints_the_urls_and_nothing_like_an_error(served):
    out = served.wait_ready()
    time.sleep(1.0)  # what the children say just after they are up counts too
    out = served.output()
    assert f"pbem is running at http://127.0.0.1:{served.port}/" in out
    assert f"dev mailbox:       http://127.0.0.1:{served.port}/dev/mail" in out
    for bad in ("Error", "error", "Traceback", "Connection lost", "Warning", "WARNING"):
        assert bad not in out, f"{bad!r} in the start output:\n{out}"
    lines = [line for line in out.splitlines() if line.strip()]
    assert all(re.match(r"(serve|web|clock|inbound|bots) +\| ", line) for line in lines)
    assert sum("clock running" in line for line in lines) == 1  # each line once


def test_make_run_prints_the_urls_and_nothing_like_an_error(tmp_path, sqlite_template):
    if not (ROOT / ".venv" / "bin" / "flask").exists() or not shutil.which("make"):
        if os.environ.get("CI") == "true":
            pytest.fail("make run needs make and the checkout's .venv (make install)")
        pytest.skip("no .venv in this checkout (make install) or no make: make run not tried")
    port = free_ports()
    server = Served(tmp_path / "run", sqlite_template, port,
                    ["make", "--no-print-directory", "run", f"PORT={port}"])
    try:
        server.wait_ready()
        time.sleep(1.0)
        out = server.output()
    finally:
        server.stop()
    assert out.startswith("database at head\n")
    assert f"pbem is running at http://127.0.0.1:{port}/" in out
    assert f"dev mailbox:       http://127.0.0.1:{port}/dev/mail" in out
    assert f"SMTP on 127.0.0.1:{supervise.inbound_port(port)}" in out
    for bad in ("Error", "error", "Traceback", "Connection lost", "Warning", "make: ***"):
        assert bad not in out, f"{bad!r} in the output of make run:\n{out}"


def test_port_moves_every_port_and_two_servers_run_side_by_side(two_served):
    first, second = two_served
    for server in two_served:
        out = server.wait_ready()
        receiver = supervise.inbound_port(server.port)
        assert f"on 127.0.0.1:{receiver}" in out
        assert server.get("/dev/mail") == 200
        with smtplib.SMTP("127.0.0.1", receiver, timeout=10) as smtp:
            assert smtp.noop()[0] == 250
        assert "Error" not in out and "Traceback" not in out
        # the web server's dev mailbox sends its replies to this receiver, and the links
        # in the emails name this port
        environ = Path(f"/proc/{server.pid_of('web')}/environ").read_bytes().split(b"\0")
        assert f"PBEM_INBOUND_PORT={receiver}".encode() in environ
        assert f"PBEM_BASE_URL=http://127.0.0.1:{server.port}".encode() in environ
    assert workers_of(first) == 2  # gunicorn's workers: the default
    assert workers_of(second) == 3  # PBEM_WEB_WORKERS
    assert first.port != second.port
    assert supervise.inbound_port(first.port) != supervise.inbound_port(second.port)
    assert first.stop() == 0
    second.get_until_ok("/healthz")  # the other one did not go with it


def test_serve_refuses_to_start_without_a_mail_configuration(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env |= {"PBEM_DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}",
            "PBEM_SECRET_KEY": SECRET, "PORT": str(free_ports())}
    done = subprocess.run([sys.executable, "-m", "flask", "--app", "pbem", "pbem", "serve"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "PBEM_MAIL_BACKEND=dev" in done.stderr and "Traceback" not in done.stderr
    assert "started" not in done.stdout


def test_inbound_on_a_taken_port_says_so_and_what_to_set_without_a_traceback(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env |= {"PBEM_DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}",
                "PBEM_SECRET_KEY": SECRET, "PBEM_MAIL_BACKEND": "dev",
                "PBEM_INBOUND_PORT": str(port)}
        done = subprocess.run([sys.executable, "-m", "flask", "--app", "pbem", "pbem",
                               "inbound"], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 1
    assert f"cannot receive on 127.0.0.1:{port}" in done.stderr
    assert "address already in use; set PBEM_INBOUND_PORT" in done.stderr
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------- the supervisor
def python(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


class Lines:
    """A byte stream that keeps what the supervisor writes."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> int:
        self.data += data
        return len(data)

    def flush(self) -> None:
        pass

    @property
    def text(self) -> str:
        return self.data.decode()


def test_a_child_that_dies_at_once_again_and_again_makes_serve_give_up_with_status_1():
    out = Lines()
    supervisor = Supervisor([Spec("broken", python("import sys; print('no config'); "
                                                   "sys.exit(3)"))],
                            os.environ, out=out,  # type: ignore[arg-type]
                            backoff=Backoff(first=0.05, most=0.2, steady=5, give_up=3))
    assert supervisor.run(handle_signals=False) == 1
    assert out.text.count("started broken") == 3
    assert re.search(r"^broken +\| no config$", out.text, re.M)
    assert ("giving up: broken stopped 3 times in a row within 5 s of its start (the last "
            "time it exited with status 3); not starting it again") in out.text


def test_the_pause_before_a_restart_doubles_and_is_logged():
    out = Lines()
    supervisor = Supervisor([Spec("short", python("pass"))], os.environ,
                            out=out,  # type: ignore[arg-type]
                            backoff=Backoff(first=0.1, most=0.4, steady=5, give_up=4))
    assert supervisor.run(handle_signals=False) == 1
    pauses = re.findall(r"starting it again in ([\d.]+) s", out.text)
    assert pauses == ["0.1", "0.2", "0.4"]


def test_a_child_that_ran_steadily_restarts_after_the_first_pause_again(tmp_path):
    out = Lines()
    runs = tmp_path / "runs"
    # the third run lives past `steady`; every other one dies at once
    code = (f"import sys, time; from pathlib import Path; p = Path({str(runs)!r})\n"
            "n = len(p.read_text()) + 1 if p.exists() else 1; p.write_text('x' * n)\n"
            "if n == 3: time.sleep(2.0)\n"
            "sys.exit(1)")
    supervisor = Supervisor([Spec("flaky", python(code))], os.environ,
                            out=out,  # type: ignore[arg-type]
                            backoff=Backoff(first=0.1, most=1, steady=1.5, give_up=3))
    assert supervisor.run(handle_signals=False) == 1
    pauses = re.findall(r"starting it again in ([\d.]+) s", out.text)
    assert pauses == ["0.1", "0.2", "0.1", "0.2", "0.4"]


def test_stop_ends_a_child_that_ignores_sigterm_with_sigkill():
    import threading

    out = Lines()
    code = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('up', flush=True); time.sleep(60)")
    supervisor = Supervisor([Spec("stubborn", python(code))], os.environ,
                            out=out, stop_seconds=0.5)  # type: ignore[arg-type]
    done: list[int] = []
    runner = threading.Thread(target=lambda: done.append(supervisor.run(handle_signals=False)))
    runner.start()
    end = time.monotonic() + WAIT
    while "stubborn | up" not in out.text and time.monotonic() < end:
        time.sleep(0.05)
    pid = int(re.findall(r"started stubborn \(pid (\d+)\)", out.text)[0])
    supervisor.stop()
    runner.join(timeout=30)
    assert done == [0]
    assert "stubborn did not stop within 0.5 s: killed" in out.text
    assert not alive(pid)


@pytest.mark.parametrize(("port", "receiver"), [(5000, 2525), (5100, 2625), (8000, 5525),
                                                (3000, 3001), (80, 81)])
def test_the_receiver_port_moves_with_the_web_port(port, receiver):
    assert supervise.inbound_port(port) == receiver


@pytest.mark.parametrize(("inbound", "last"), [("smtp", ("pbem", "inbound")),
                                               ("imap", ("inbound", "--imap")), (None, None)])
def test_the_children_are_gunicorn_the_clock_and_inbound_as_configured(inbound, last):
    children = supervise.specs(host="127.0.0.1", port=5100, workers=3, inbound=inbound,
                               stop_seconds=10, python="/venv/bin/python")
    web, clock = children[:2]
    assert web.argv[:3] == ("/venv/bin/python", "-m", "gunicorn")
    assert " --workers 3 --bind 127.0.0.1:5100 " in " ".join(web.argv)
    assert clock.argv[-2:] == ("pbem", "clock")
    assert [c.argv[-2:] for c in children[2:]] == ([last] if last else [])


def test_serve_starts_the_bot_workers_as_one_child_when_asked():
    children = supervise.specs(host="127.0.0.1", port=5100, workers=2, inbound=None,
                               stop_seconds=10, python="/venv/bin/python", bots=3)
    assert [c.name for c in children] == ["web", "clock", "bots"]
    assert children[-1].argv[-4:] == ("pbem", "bots", "--workers", "3")


# ---------------------------------------------------------------------- the receiver
def test_the_receiver_starts_without_a_connection_that_it_logs_as_lost(tmp_path, caplog):
    import logging

    from pbem import create_app
    from pbem.mail import receive

    app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
                      "SECRET_KEY": SECRET, "MAIL_BACKEND": "memory",
                      "MAIL_FROM": "games@example.org"})
    port = free_ports()
    with caplog.at_level(logging.INFO, logger="mail.log"):
        controller = receive.smtp_receiver(app, lambda *a: None, host="127.0.0.1", port=port)
        try:
            started = [r.getMessage() for r in caplog.records]
            with smtplib.SMTP("127.0.0.1", port, timeout=10) as smtp:
                assert smtp.noop()[0] == 250  # and it answers
        finally:
            controller.stop()
    assert not [m for m in started if "Connection lost" in m or "EOF" in m
                or "handling connection" in m], started
