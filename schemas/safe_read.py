"""Reading a file someone else may have replaced: regular files only, bounded, never blocking.

The runtime's client and the pipeline read `published/` (LATEST and the manifests), which an
operator, a buggy script or an attacker may have replaced by anything: a symbolic link to
/etc/passwd or /dev/zero, a FIFO (an `open` that never returns, while `publish` holds the job's
lock), a directory, a huge file. `read_regular` refuses all of them at once, and its messages
name the file and its kind, never its content.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["read_regular"]


def read_regular(path: Path, limit: int, error: type[Exception] = ValueError) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes; else `error`.

    Files under published/ are read as untrusted: the last path component must not be a symbolic
    link (``O_NOFOLLOW``: LATEST pointing at /etc/passwd or /dev/zero is refused, not read), a FIFO
    or device never blocks the reader (``O_NONBLOCK``, then ``fstat`` refuses anything but a
    regular file), and at most `limit` + 1 bytes are read. Messages name the file and its kind,
    never its content. A missing file raises `FileNotFoundError`.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{path}: is a symbolic link; only regular files written by "
                                "`publish` are read there") from None
        raise error(f"{path}: unreadable ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: is a {_kind(info.st_mode)}, not a regular file; only "
                                "regular files written by `publish` are read there")
        if info.st_size > limit:
            raise error(f"{path}: is {info.st_size} bytes, over the {limit}-byte limit "
                                "for this file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise error(f"{path}: grew past the {limit}-byte limit for this file while "
                                "being read")
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"{path}: unreadable ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"
