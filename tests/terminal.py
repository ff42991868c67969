"""A command run with its standard error on a pseudo-terminal, as a person at a terminal runs
it (progress is drawn only there); its standard output stays a pipe, so that what it prints
as its result is read apart from what the terminal showed."""

from __future__ import annotations

import fcntl
import os
import pty
import selectors
import struct
import subprocess
import termios
import time
from dataclasses import dataclass

COLUMNS = 300  # wide: a line printed above a bar is not wrapped


@dataclass(frozen=True)
class TerminalRun:
    returncode: int
    stdout: str
    terminal: str  # every byte written to standard error, escape codes included


def run_on_a_terminal(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None,
                      timeout: float = 600) -> TerminalRun:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, COLUMNS, 0, 0))
    env = {**(env if env is not None else os.environ), "TERM": "xterm-256color", "COLUMNS": str(COLUMNS)}
    env.pop("NO_COLOR", None)
    with open(os.devnull) as nothing:
        proc = subprocess.Popen(argv, stdin=nothing, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=cwd)
    os.close(slave)
    out = proc.stdout.fileno()
    read = {master: bytearray(), out: bytearray()}
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as selector:
            for fd in read:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _ in selector.select(left):
                    try:
                        data = os.read(key.fd, 1 << 16)
                    except OSError:  # EIO: every process holding the terminal has closed it
                        data = b""
                    if data:
                        read[key.fd] += data
                    else:
                        selector.unregister(key.fd)
        proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        os.close(master)
        proc.stdout.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return TerminalRun(proc.returncode, read[out].decode(errors="replace"), read[master].decode(errors="replace"))
