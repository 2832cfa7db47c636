"""A throwaway second user for the tests that need one (control_peer,
e2e.diagnose_otheruser, e2e.diagnose_nondumpable), and the files it must
run put where it can reach them.

The checkout may sit under a directory only its owner may enter (root's
home, any `mktemp -d`): a second user could then not even execute
build/ada. So whatever that user runs -- the ada binary with the agent
beside it, a target -- is copied to a fresh directory under /tmp that every
user may enter (0755; /tmp itself is 1777), and removed afterwards. Root
only: making a user needs it, and the callers skip (77) otherwise.
"""
import os
import shutil
import subprocess
import tempfile
import uuid


class SecondUser:
    """with SecondUser(prefix, files) as u: u.uid, u.gid, u.name, u.path(f)
    (f's reachable copy), u.become (a preexec_fn: drop to that user),
    u.dir (the 0755 directory holding the copies)."""

    def __init__(self, prefix, files=()):
        self.prefix, self.files = prefix, list(files)
        self.name, self.dir, self.copies = None, None, {}

    def __enter__(self):
        self.name = self.prefix + uuid.uuid4().hex[:10]
        p = subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", self.name],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("useradd %s failed: %s" % (self.name, p.stderr.strip()))
        self.uid = int(subprocess.run(["id", "-u", self.name], capture_output=True,
                                      text=True).stdout)
        self.gid = int(subprocess.run(["id", "-g", self.name], capture_output=True,
                                      text=True).stdout)
        self.dir = tempfile.mkdtemp(prefix="ada-second-user-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        for f in self.files:
            self.copies[f] = self._copy(f)
        return self

    def _copy(self, f):
        """f (and, for the ada binary, the agent it loads from beside it)."""
        dst = os.path.join(self.dir, os.path.basename(f))
        shutil.copy2(f, dst)
        os.chmod(dst, 0o755)
        agent = os.path.join(os.path.dirname(f), "libada_agent.so")
        if os.path.basename(f) == "ada" and os.path.exists(agent):
            shutil.copy2(agent, os.path.join(self.dir, "libada_agent.so"))
            os.chmod(os.path.join(self.dir, "libada_agent.so"), 0o755)
        return dst

    def path(self, f):
        return self.copies[f]

    def become(self):
        os.setgroups([])
        os.setgid(self.gid)
        os.setuid(self.uid)

    def __exit__(self, *exc):
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        subprocess.run(["userdel", self.name], capture_output=True)
        return False
