"""The Maven module's build products: its classes and the classpath Maven resolved.

`make setup` builds them (``mvn -q -B package`` in this folder; the jars land in ~/.m2 once, so
later builds work offline). Everything that starts a JVM here goes through `java_argv`, so a
missing build is one clear error with the command that fixes it, not a ClassNotFoundException.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from schemas.errors import ReconfError

__all__ = ["MODULE", "BuildMissing", "classpath", "java_argv"]

MODULE = Path(__file__).resolve().parent
_TARGET = MODULE / "target"


class BuildMissing(ReconfError, ValueError):
    """The Maven module is not built (a ValueError, so the CLI prints one line and exits 2)."""


def classpath() -> str:
    """target/classes plus every jar Maven resolved (target/classpath.txt)."""
    listing = _TARGET / "classpath.txt"
    classes = _TARGET / "classes" / "dev" / "reconf" / "kstreams"
    if not listing.is_file() or not classes.is_dir():
        raise BuildMissing(
            f"{MODULE}: the Kafka Streams module is not built (no {listing.name} or classes); "
            "run `make setup` (or `mvn -q -B package` in that folder)")
    return f"{_TARGET / 'classes'}:{listing.read_text(encoding='utf-8').strip()}"


def _classpath_argfile() -> Path:
    """`target/classpath.args`: `-cp <classpath>` as a java @argfile, so that process listings
    and the logs' start lines stay one readable line (the classpath has ~50 jars)."""
    argfile = _TARGET / "classpath.args"
    wanted = f'-cp "{classpath()}"\n'
    if not argfile.is_file() or argfile.read_text(encoding="utf-8") != wanted:
        tmp = argfile.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(wanted, encoding="utf-8")
        tmp.replace(argfile)
    return argfile


def java_argv(main: str, *args: str, heap_mb: int = 256, full_jit: bool = False) -> list[str]:
    """`java … <main> <args>` on the module's classpath; small heaps (2 cores, shared machine).
    C1 only by default (a JVM that runs for seconds starts faster); `full_jit` keeps C2 for the
    long runs under load, where C1's code costs several times the CPU per record."""
    java = shutil.which("java")
    if java is None:
        raise BuildMissing("java: not found on PATH; install a JDK 17 (e.g. apt-get install "
                           "openjdk-17-jdk-headless)")
    jit = [] if full_jit else ["-XX:TieredStopAtLevel=1"]
    return [java, f"-Xmx{heap_mb}m", "-XX:+UseSerialGC", *jit,
            "-Djava.net.preferIPv4Stack=true", "-Dfile.encoding=UTF-8", "-Dstdout.encoding=UTF-8",
            f"@{_classpath_argfile()}", main, *args]
