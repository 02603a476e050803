"""Runs a command in a pseudo-terminal of 120x30, as a person's shell would.

Usage: python3 pty-run.py COMMAND [ARG...]. What the command writes to the terminal is copied to
this process's stdout as it arrives (escape codes and carriage returns included); what arrives on
this process's stdin is typed into the terminal (so "\\x03" is a Ctrl-C). Exits with the command's
status, or 128 + the signal that ended it. Standard library only (pty, select).
"""
import fcntl
import os
import pty
import select
import struct
import sys
import termios

pid, master = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    os.execvp(sys.argv[1], sys.argv[1:])

watch = [master, sys.stdin.fileno()]
while master in watch:
    ready, _, _ = select.select(watch, [], [])
    for fd in ready:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            data = b""
        if fd == master:
            if not data:
                watch.remove(master)
                break
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        elif not data:
            watch.remove(fd)
        else:
            os.write(master, data)

_, status = os.waitpid(pid, 0)
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
