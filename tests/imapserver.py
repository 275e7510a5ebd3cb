"""A real IMAP server for the tests: Debian's Dovecot on a loopback port, with one
mailbox (user ``pbem``) in a temporary folder. As root, Dovecot runs its processes as
its own users and the mail as ``nobody``; as anyone else, all as that user."""

from __future__ import annotations

import getpass
import grp
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.pgcluster import free_port

DOVECOT = "/usr/sbin/dovecot"
USER, PASSWORD = "pbem", "imap-test-secret"


class DovecotUnavailable(RuntimeError):
    pass


class Dovecot:
    """Dovecot in a folder of its own under the system's temporary folder (not pytest's,
    which only root may enter: Dovecot's own users read its files)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pbem-dovecot-"))
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        if not os.access(DOVECOT, os.X_OK):
            raise DovecotUnavailable(f"{DOVECOT} is missing (apt-get install dovecot-imapd)")
        root = os.geteuid() == 0
        me = getpass.getuser()
        internal, login = ("dovecot", "dovenull") if root else (me, me)
        mail_user = "nobody" if root else me
        mail_group = grp.getgrgid(pwd.getpwnam(mail_user).pw_gid).gr_name
        for sub in ("run", "state", "home"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o755)
        if root:
            shutil.chown(self.dir / "home", mail_user, mail_group)
        (self.dir / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
        (self.dir / "passwd").chmod(0o644)
        conf = self.dir / "dovecot.conf"
        conf.write_text(f"""
protocols = imap
listen = 127.0.0.1
base_dir = {self.dir}/run
state_dir = {self.dir}/state
log_path = {self.dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {internal}
default_internal_group = {grp.getgrgid(pwd.getpwnam(internal).pw_gid).gr_name}
default_login_user = {login}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {self.dir}/passwd
}}
userdb {{
  driver = static
  args = uid={mail_user} gid={mail_group} home={self.dir}/home/%u
}}
mail_location = maildir:~/Maildir
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service stats {{
  unix_listener stats-reader {{
    mode = 0666
  }}
  unix_listener stats-writer {{
    mode = 0666
  }}
}}
""")
        self.process = subprocess.Popen([DOVECOT, "-F", "-c", str(conf)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = self.dir / "dovecot.log"
                    raise DovecotUnavailable(
                        (log.read_text() if log.exists() else "")
                        + self.process.stderr.read().decode(errors="replace")) from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process is not None and self.process.stderr is not None:
            self.process.stderr.close()
        self.process = None
        shutil.rmtree(self.dir, ignore_errors=True)
