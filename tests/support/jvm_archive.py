"""A class-data-sharing archive of Spark's classes for the test run's JVMs.

Every JVM the suite starts (the session's gateway, each spark-submit, each killed and
restarted streaming job, the Spark Connect server) loads and verifies the same ~10,000
classes from pyspark's jars before it does anything: about half of a small local
Spark's start. The JVM can map them ready-made from a dynamic CDS archive
(``-XX:SharedArchiveFile``, JDK 13+) written once by a JVM that exits normally after a
small workload (``-XX:ArchiveClassesAtExit``). Measured on the 2-core VM, load 8-12
(2026-11-27): a local[1] session and one query, JVM CPU 9.3-9.8 s -> 4.2 s, wall
43-46 s -> 22-24 s; the Python side (3.4 s) is unchanged. A SIGKILL test's CPU, every
process counted (killed JVMs too), without -> with, back to back: test_streaming_kill
(three JVMs) 60.8 -> 42.8 s, wall 127 -> 66 s at load 7-8 (at load 12-17: 82.8 -> 80.1 s);
test_streaming_expire (two) 45.1 -> 36.8 s, wall 168 -> 102 s at load 9-10.

The archive is built once per machine, Java and pyspark (its key hashes the java
binary, the jars and the JVM options), in the temp folder, in the background while
the first run goes on, under a file lock (test runs of several worktrees share it),
written under a scratch name and renamed when complete. The
JVM checks it against its own build and class path: a JVM whose class path differs
(a standalone master, a job with other jars) or that finds it stale uses none and
runs as without it. Its warnings go to stderr (``-Xlog``), never into a job's stdout.
A build that fails writes why to ``<archive>.failed`` (not tried again until deleted); one
that crashes leaves its traceback in ``<archive>.log``, which the next run prints. A new
archive's build deletes the archives nobody used for three days (``prune``).
Behaviour is the same; only where the class bytes come from differs.
``PAIMON_TEST_JVM_ARCHIVE=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = "PAIMON_TEST_JVM_ARCHIVE"
#: JVM warnings (a stale or mismatched archive says so) to stderr instead of stdout,
#: where a spark-submit job's output goes
LOG_TO_STDERR = "-Xlog:disable -Xlog:all=warning:stderr"
ROOT = str(Path(__file__).resolve().parents[2])

# What the archive's JVM runs before it exits: a local session, a batch write and read
# through the paimon source, and a streaming query paimon -> paimon (the classes of the
# suite's common paths; a class it never loaded is still loaded from its jar as usual).
TRAIN = """
import os, sys
sys.path.insert(0, {root!r})
from airflow_provider_paimon.spark.session import local_session
warehouse = sys.argv[1]
spark = local_session("paimon-test-jvm-archive", master="local[1]",
                      conf={{"spark.sql.shuffle.partitions": "1", "spark.driver.memory": "512m"}})
df = spark.createDataFrame([(i, str(i)) for i in range(20)], "id BIGINT, v STRING")
for name in ("db.src", "db.dst"):
    (df.write.format("paimon").mode("append").option("warehouse", warehouse).option("table", name)
       .option("create-table", "true").save())
assert spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.src").load().count() == 20
query = (spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
         .writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.dst")
         .option("checkpointLocation", os.path.join(warehouse, "ck")).trigger(availableNow=True).start())
query.awaitTermination()
assert query.exception() is None
gateway = spark.sparkContext._gateway.proc
spark.stop()
gateway.stdin.close()  # the gateway JVM exits on EOF and writes the archive as it does
gateway.wait(timeout=600)
"""


def _key(java: str, jars: Path, jvm_opts: str) -> str:
    """What the archive depends on: the JVM build, the jars it maps, the JVM options."""
    digest = hashlib.sha256(jvm_opts.encode())
    real = os.path.realpath(java)
    stat = os.stat(real)
    digest.update(f"{real}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    for jar in sorted(jars.glob("*.jar")):
        st = jar.stat()
        digest.update(f"{jar.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def archive_flags(jvm_opts: str, folder: str | None = None) -> str:
    """The JVM options that map the archive, or ``""`` when it is off.

    A missing archive is built in the background (``start_build``) while the run goes
    on: a JVM that starts before it is in place finds no file and starts as it would
    without one (then also without the JDK's own default archive: a few tenths of a
    second), later ones map it. Nothing waits for the build (3.5 min wall on the
    loaded VM, 40 CPU-s)."""
    # imported here, not at the top: this file also runs as a script (the background
    # build, ``start_build``), where ``tests/`` is not on ``sys.path``
    from support.switches import switch

    if not switch(ENV, default=True):
        return ""
    java = _java()
    if java is None:
        return ""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    folder = folder or os.path.join(tempfile.gettempdir(), "paimon-test-jvm-archive")
    os.makedirs(folder, exist_ok=True)
    archive = os.path.join(folder, f"spark-{_key(java, jars, jvm_opts)}.jsa")
    if os.path.exists(archive + ".failed"):  # a build that failed is not tried on every run
        print(f"no JVM class archive: {archive}.failed says why (delete it to try again)", file=sys.stderr)
        return ""
    if not os.path.exists(archive):
        crashed = _crash_of_last_build(archive)
        if crashed:
            print(f"no JVM class archive: its last build crashed ({archive}.log):\n{crashed}",
                  file=sys.stderr)
        start_build(archive, jvm_opts)
    return f"-XX:SharedArchiveFile={archive} {LOG_TO_STDERR}"


def _crash_of_last_build(archive: str) -> str:
    """The end of the last build's traceback, when it died before writing the archive or
    its ``.failed`` note (a builder that cannot even import is otherwise silent: every JVM
    of every run would go without the archive and nobody would know)."""
    try:
        text = Path(archive + ".log").read_text(errors="replace")
    except OSError:
        return ""
    return text[-1500:] if "Traceback" in text else ""


def start_build(archive: str, jvm_opts: str) -> None:
    """Build ``archive`` in a detached process (this file run as a script). It is left to
    finish when this run ends first (at most its 900-s training timeout): a short run,
    killing it each time, would pay for a build and never get the archive. A build
    already under way (the file lock) is waited for by the new one, which then finds
    the archive and exits."""
    with open(archive + ".log", "w") as log:  # the builder's errors; read by the next run
        subprocess.Popen([sys.executable, __file__, archive, jvm_opts], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)


def build(archive: str, jvm_opts: str) -> str | None:
    """Under the folder's lock: write ``archive`` unless it is there (scratch name, then
    rename); the error text, or None."""
    with open(archive + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per archive; a second one waits, then finds it
        if os.path.exists(archive):
            return None
        scratch = f"{archive}.{os.getpid()}.part"
        with tempfile.TemporaryDirectory(prefix="paimon-jvm-archive-") as warehouse:
            env = dict(os.environ,
                       SPARK_SUBMIT_OPTS=f"{jvm_opts} -XX:ArchiveClassesAtExit={scratch} {LOG_TO_STDERR}")
            try:
                done = subprocess.run([sys.executable, "-c", TRAIN.format(root=ROOT), warehouse], env=env,
                                      capture_output=True, text=True, timeout=900)
            except subprocess.TimeoutExpired:
                done = None
            if done is None or done.returncode != 0 or not os.path.exists(scratch):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(scratch)
                return "the training run failed: " + ("timed out" if done is None else done.stderr[-1500:])
        os.replace(scratch, archive)
    prune(os.path.dirname(archive), keep=archive)
    return None


#: an archive neither written nor read for this long belongs to a checkout or virtualenv
#: that is gone (each has its own key: the jars' times differ)
STALE_SECONDS = 3 * 24 * 3600


def prune(folder: str, keep: str, now: float | None = None) -> list[str]:
    """Delete the folder's archives (and their lock, log, failure notes) that nobody wrote
    or read for ``STALE_SECONDS``, except ``keep``: every fresh clone builds its own
    (~170 MB) and nothing else ever removes them. A JVM that still maps one keeps its
    mapping; a run that wanted it builds it again. The deleted archives' paths."""
    now = time.time() if now is None else now
    removed = []
    for path in Path(folder).glob("spark-*.jsa"):
        if str(path) == keep:
            continue
        with contextlib.suppress(OSError):
            st = path.stat()
            if now - max(st.st_mtime, st.st_atime) > STALE_SECONDS:
                path.unlink()
                removed.append(str(path))
                for suffix in (".lock", ".log", ".failed"):
                    with contextlib.suppress(OSError):
                        os.unlink(f"{path}{suffix}")
    return removed


if __name__ == "__main__":
    failed = build(sys.argv[1], sys.argv[2])
    if failed:
        Path(sys.argv[1] + ".failed").write_text(failed)
    sys.exit(1 if failed else 0)
