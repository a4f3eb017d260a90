"""Model-based test: a seeded random sequence of table operations and maintenance.

Steps: append, overwrite, a streaming micro-batch (a stream commit with its commit
user and batch id, then the sink's after-commit expiry), a batch write with its
after-commit expiry, compaction, tag create (with and without a retention) / delete /
rename / expire, branch create (from a snapshot or a tag) / delete, replace-main,
fast-forward, consumer progress, snapshot expiry, orphan cleanup and rollback (both
kinds), on main and on branches.

Every snapshot ever committed is remembered by its uuid with the rows it read when it
was made (branch creation, fast-forward, tags and rename copy snapshot documents, so
copies share the uuid). After every step every snapshot present on main and on every
branch, and every tag, reads exactly those rows with plain pypaimon: a state read
before is re-read only when its document changed or a file it needs is gone (a cheap
existence check, files being immutable), and every state is re-read every
``FULL_CHECK_EVERY`` steps and at the end. After the final orphan cleanup every file
under the table is named by a retained snapshot or tag of some branch, worked out here
from the manifests with ``fastavro`` (not with the code under test).

CI runs ``3 x 100`` steps; ``PAIMON_MODEL_STEPS`` and ``PAIMON_MODEL_SEEDS`` run more
(``PAIMON_MODEL_SEEDS=1,2,3,4,5,6 PAIMON_MODEL_STEPS=200``).
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from datetime import timedelta

import fastavro
import pyarrow as pa
import pytest
from support.branch_tables import SCHEMA, load_table, make_table, table_dir, write
from support.maintenance import OPTIONS, branches, compact_main, meta_ids, read_rows
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.consumers import save_next_snapshot
from airflow_provider_paimon.paimon.errors import ConcurrentModificationError
from airflow_provider_paimon.paimon.maintenance import (
    expire_snapshots,
    expire_tags,
    remove_orphan_files,
    rollback,
)
from airflow_provider_paimon.paimon.maintenance.after_commit import expire_after_commit
from airflow_provider_paimon.paimon.maintenance.after_commit import log as after_commit_log
from airflow_provider_paimon.paimon.tag import create_tag, delete_tag, rename_tag
from airflow_provider_paimon.paimon.tag.delete import TagInUseError

STEPS = int(os.environ.get("PAIMON_MODEL_STEPS", "100"))
SEEDS = [int(s) for s in os.environ.get("PAIMON_MODEL_SEEDS", "7,11,23").split(",")]
FULL_CHECK_EVERY = 10
METADATA_DIRS = ("snapshot", "schema", "tag", "consumer")
# tag retentions: none (never expires), one that passes within the step, one that does not
TAG_RETENTIONS = [None, 0.001, "1 h"]

AFTER_SWITCH = {"fast_forward.switch", "fast_forward.history", "fast_forward.tags", "fast_forward.hints",
                "replace_main.switch", "replace_main.hint"}

STEP_WEIGHTS = {
    "append": 6, "overwrite": 2, "stream": 5, "write_expire": 3, "compact": 2,
    "tag": 3, "untag": 1, "rename_tag": 1, "expire_tags": 2,
    "branch": 2, "unbranch": 1, "replace": 1, "ff": 1, "consumer": 1,
    "expire": 3, "orphans": 1, "rollback": 1, "rollback_latest": 1, "crash": 3,
}
# a kill (an injected fault) at one of these points of a step, then that step run again
CRASH_POINTS = {
    "expire": [f"expire.{s}" for s in ("journal", "snapshots", "hint", "manifests", "data")],
    "rollback": [f"rollback.{s}" for s in ("restore", "journal", "snapshots", "hint", "manifests", "data")],
    "expire_tags": [f"expire_tags.{s}" for s in ("journal", "snapshots", "hint", "manifests", "data")],
    "ff": [f"fast_forward.{s}" for s in ("check", "pin_hint", "ahead", "prepare", "journal", "schemas", "switch",
                                          "history", "tags", "hints")],
    "rename_tag": ["rename_tag.written"],
    "replace": [f"replace_main.{s}" for s in ("journal", "backup", "manifests", "check", "schemas", "switch",
                                              "hint")],
}


# --- an independent reading of what the table references (fastavro, no code under test) ---

def _avro(path: str) -> list[dict]:
    with open(path, "rb") as fh:
        return list(fastavro.reader(fh))


class References:
    """Files each snapshot/tag document names, from its manifests (cached: immutable)."""

    def __init__(self, tdir: str) -> None:
        self.tdir = tdir
        self._lists: dict[str, list[str]] = {}
        self._entries: dict[str, list[tuple[int, tuple[str, ...]]]] = {}

    def manifest_list(self, name: str) -> list[str]:
        if name not in self._lists:
            self._lists[name] = [r["_FILE_NAME"] for r in _avro(os.path.join(self.tdir, "manifest", name))]
        return self._lists[name]

    def entries(self, name: str) -> list[tuple[int, tuple[str, ...]]]:
        """(kind, relative paths of the data file and its extra files) of a manifest."""
        if name not in self._entries:
            out = []
            for r in _avro(os.path.join(self.tdir, "manifest", name)):
                f = r["_FILE"]
                assert not f.get("_EXTERNAL_PATH"), "the model writes no external paths"
                folder = f"bucket-{r['_BUCKET']}"  # the model's table is not partitioned
                names = [f["_FILE_NAME"], *(f.get("_EXTRA_FILES") or [])]
                out.append((int(r["_KIND"]), tuple(f"{folder}/{n}" for n in names)))
            self._entries[name] = out
        return self._entries[name]

    def named(self, doc: dict) -> tuple[set[str], set[str]]:
        """(every file the document names, the data files it reads: ADDs not deleted)."""
        named: set[str] = set()
        live: dict[tuple[str, ...], None] = {}
        for key in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
            lst = doc.get(key)
            if not lst:
                continue
            named.add(f"manifest/{lst}")
            for m in self.manifest_list(lst):
                named.add(f"manifest/{m}")
                for kind, paths in self.entries(m):
                    named.update(paths)
                    if key != "changelogManifestList":
                        if kind == 0:
                            live[paths] = None
                        else:
                            live.pop(paths, None)
        if doc.get("indexManifest"):
            named.add(f"manifest/{doc['indexManifest']}")
            for r in _avro(os.path.join(self.tdir, "manifest", doc["indexManifest"])):
                if r.get("_KIND", 0) == 0:
                    named.add(f"index/{r['_FILE_NAME']}")
        if doc.get("statistics"):
            named.add(f"statistics/{doc['statistics']}")
        return named, {p for paths in live for p in paths}


def table_files(tdir: str) -> set[str]:
    """Every file under the table outside the metadata folders of main and the branches."""
    out = set()
    for root, _dirs, files in os.walk(tdir):
        rel = os.path.relpath(root, tdir).replace(os.sep, "/")
        parts = [] if rel == "." else rel.split("/")
        meta = (parts and parts[0] in METADATA_DIRS) or (
            len(parts) >= 3 and parts[0] == "branch" and parts[1].startswith("branch-") and parts[2] in METADATA_DIRS
        )
        for name in files:
            if meta and not name.endswith(".tmp"):
                continue
            out.add(f"{rel}/{name}" if parts else name)
    return out


# --- the model ------------------------------------------------------------------------

class Model:
    def __init__(self, warehouse: str, seed: int) -> None:
        self.warehouse = warehouse
        self.rng = random.Random(seed)
        self.catalog, _ = make_table(warehouse, options=OPTIONS)
        self.tdir = table_dir(warehouse)
        self.refs = References(self.tdir)
        self.rows: dict[str, list[tuple]] = {}  # snapshot uuid -> rows
        self.verified: dict[tuple, str] = {}  # state -> raw document last read through
        self.needs: dict[str, set[str]] = {}  # raw document -> files a reader of it opens
        self.batches: dict[str | None, int] = {}  # branch -> last streaming batch id
        self.n = 0
        self.reads = 0
        self.beside_rows: list | None = None  # main after a commit beside a killed step
        self.recorded: list | None = None  # draws of a step being killed
        self.replay: list | None = None  # ... handed back to its rerun

    def table(self, br: str | None = None):
        return load_table(self.catalog, "db.t", br)

    def root(self, br: str | None) -> str:
        return self.tdir if br is None else os.path.join(self.tdir, "branch", f"branch-{br}")

    def raw(self, br: str | None, kind: str, name: str) -> str:
        with open(os.path.join(self.root(br), kind, f"{kind}-{name}")) as fh:
            return fh.read()

    def doc(self, br: str | None, kind: str, name: str) -> dict:
        return json.loads(self.raw(br, kind, name))

    def snaps(self, br: str | None) -> list[int]:
        return [int(s) for s in meta_ids(self.tdir, br, "snapshot", "snapshot-")]

    def tags(self, br: str | None) -> list[str]:
        return meta_ids(self.tdir, br, "tag", "tag-")

    def draw(self, make):
        """One random draw; while a killed step is run again, the draws it made (same arguments)."""
        if self.replay is not None:
            return self.replay.pop(0)
        value = make()
        if self.recorded is not None:
            self.recorded.append(value)
        return value

    def pick(self, seq):
        return self.draw(lambda: self.rng.choice(seq))

    def randint(self, a: int, b: int) -> int:
        return self.draw(lambda: self.rng.randint(a, b))

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def rows_of(self, br: str | None, kind: str, name: str) -> list[tuple]:
        self.reads += 1
        key = "scan.snapshot-id" if kind == "snapshot" else "scan.tag-name"
        return read_rows(self.table(br).copy({key: name}))

    def new_rows(self) -> list[int]:
        self.n += 1
        return [self.n, self.n + 1000]

    def latest_id(self, br: str | None) -> int | None:
        """The snapshot plain pypaimon reads as the branch's latest (``LATEST`` hint rule:
        a killed fast-forward's copies written ahead, behind a gap, are not it)."""
        latest = self.table(br).snapshot_manager().get_latest_snapshot()
        return None if latest is None else latest.id

    def latest_rows(self, br: str | None) -> list[tuple]:
        """What the branch's latest snapshot read when it was made ([] without one)."""
        sid = self.latest_id(br)
        return [] if sid is None else self.rows[self.doc(br, "snapshot", str(sid))["uuid"]]

    def expect_latest(self, br: str | None, rows: list[tuple], before: int | None) -> None:
        """The step committed a new latest snapshot on ``br`` that reads ``rows``."""
        sid = self.latest_id(br)
        assert sid is not None and sid != before and sid == self.snaps(br)[-1], (br, before, sid, self.snaps(br))
        uid = self.doc(br, "snapshot", str(sid))["uuid"]
        got = self.rows_of(br, "snapshot", str(sid))
        assert got == sorted(rows), (br, sid, got, sorted(rows))
        assert read_rows(self.table(br)) == got, (br, sid, "latest")
        self.rows[uid] = got

    def last_id(self, br: str | None) -> int | None:
        ids = self.snaps(br)
        return ids[-1] if ids else None

    def write_rows(self, br: str | None, prefix: str) -> tuple[list[int], list[tuple]]:
        """New ids and the rows the branch reads after appending them."""
        ids = self.new_rows()
        return ids, self.latest_rows(br) + [(i, f"{prefix}{i}") for i in ids]

    # -- steps ----------------------------------------------------------------------
    def step(self) -> str:
        rng = self.rng
        br = rng.choice(branches(self.tdir))
        op = rng.choices(list(STEP_WEIGHTS), weights=list(STEP_WEIGHTS.values()))[0]
        if not self.snaps(None):
            op = "append"
        handler = getattr(self, f"op_{op}")
        return handler(br) or f"{op} {br}"

    def op_append(self, br):
        prefix, before = "b" if br else "m", self.last_id(br)
        ids, expected = self.write_rows(br, prefix)
        write(self.table(br), ids, prefix)
        self.expect_latest(br, expected, before)

    def op_overwrite(self, br):
        """pypaimon's overwrite (an OVERWRITE snapshot replacing every row)."""
        before, ids = self.last_id(br), self.new_rows()
        commit_rows(self.table(br), [{"id": i, "v": f"o{i}"} for i in ids], SCHEMA, overwrite={})
        self.expect_latest(br, [(i, f"o{i}") for i in ids], before)

    def retention_options(self) -> dict[str, str]:
        return {
            "snapshot.num-retained.min": str(self.randint(1, 2)),
            "snapshot.num-retained.max": str(self.randint(2, 5)),
            "snapshot.time-retained": self.pick(["1 ms", "1 h"]),
            "snapshot.expire.limit": str(self.randint(1, 4)),
        }

    def op_stream(self, br):
        """One micro-batch as the ``paimon`` streaming sink commits it (a stream commit
        by the query's commit user with the batch id as commit identifier), then the
        sink's after-commit expiry with the query's options."""
        table = self.table(br)
        user = f"stream-{br or 'main'}"
        batch = self.batches[br] = self.batches.get(br, -1) + 1
        builder = table.new_stream_write_builder()._with_commit_user(user)
        writer, commit = builder.new_write(), builder.new_commit()
        before = self.last_id(br)
        ids, expected = self.write_rows(br, "s")
        writer.write_arrow(pa.Table.from_pylist([{"id": i, "v": f"s{i}"} for i in ids], schema=SCHEMA))
        commit.commit(writer.prepare_commit(batch), batch)
        writer.close()
        commit.close()
        self.expect_latest(br, expected, before)
        options = self.retention_options()
        expire_after_commit(table, branch=br, options=options)
        # the sink recognises a replayed batch by its newest snapshot: expiry never takes it
        newest = self.doc(br, "snapshot", str(self.snaps(br)[-1]))
        assert (newest["commitUser"], newest["commitIdentifier"]) == (user, batch), newest
        return f"stream batch {batch} {br} {options}"

    def op_write_expire(self, br):
        """A writer's commit followed by its after-commit expiry, with random retention."""
        prefix, before = "b" if br else "m", self.last_id(br)
        ids, expected = self.write_rows(br, prefix)
        write(self.table(br), ids, prefix)
        self.expect_latest(br, expected, before)
        options = self.retention_options()
        expire_after_commit(self.table(br), branch=br, options=options)
        return f"write+expire {br} {options}"

    def op_compact(self, br):
        before, expected = self.last_id(br), self.latest_rows(br)
        try:
            compact_main(self.table(br))
        except AssertionError:
            return "compact: nothing to do"
        self.expect_latest(br, expected, before)
        return None

    def op_tag(self, br):
        ids = self.snaps(br)
        if ids:
            name, retained = self.name("t"), self.pick(TAG_RETENTIONS)
            create_tag(self.table(), name, branch=br, snapshot_id=self.pick(ids), time_retained=retained)
            seconds = {None: None, 0.001: 0.001, "1 h": 3600.0}[retained]
            assert self.doc(br, "tag", name).get("tagTimeRetained") == seconds, (name, retained)
            return f"tag {br} {name} retained={retained}"
        return None

    def op_untag(self, br):
        tags = self.tags(br)
        if tags:
            try:
                delete_tag(self.table(), self.pick(tags), branch=br)
            except TagInUseError:
                return "untag refused (branch needs it)"
        return None

    def op_rename_tag(self, br):
        tags = self.tags(br)
        if not tags:
            return None
        old, new = self.pick(tags), self.name("r")
        before = self.doc(br, "tag", old)
        try:
            rename_tag(self.table(), old, new, branch=br)
        except TagInUseError:
            return "rename refused (branch created from it)"
        assert old not in self.tags(br) and self.doc(br, "tag", new) == before
        return f"rename tag {br} {old}->{new}"

    def op_expire_tags(self, br):
        before = {name: self.doc(br, "tag", name).get("tagTimeRetained") for name in self.tags(br)}
        result = expire_tags(self.table(), branch=br)
        after = set(self.tags(br))
        # a killed run's tags are finished by this one first (its result's "resumed")
        resumed = set((result["resumed"] or {}).get("tags") or [])
        assert set(before) - after == set(result["expired_tags"]) | (resumed & set(before)), result
        # a tag's retention is in its document (copies made by branch creation and
        # fast-forward carry it): 0.001 s has passed, 1 h has not (the test is shorter)
        for name, retained in before.items():
            if retained in (None, 3600.0):
                assert name in after, (name, retained, result)  # never, or not yet
            elif name in after:
                # a passed retention keeps a tag only for a branch created from it
                assert "branch" in result["kept_tags"][name], result["kept_tags"]
        return f"expire_tags {br} -> {sorted(result['expired_tags'])}"

    def op_branch(self, br):
        tags = self.tags(None)
        if tags and self.rng.random() < 0.5:
            bops.create_branch(self.table(), self.name("b"), tag=self.pick(tags))
        else:
            bops.create_branch(self.table(), self.name("b"), snapshot_id=self.pick(self.snaps(None)))
        return "branch"

    def op_unbranch(self, br):
        if br is None:
            return "noop"
        bops.delete_branch(self.table(), br)
        self.batches.pop(br, None)
        return f"delete branch {br}"

    def op_replace(self, br):
        if br is None or not self.snaps(br):
            return "noop"
        # drawn: a killed replace-main's rerun expects what the first run did
        before, expected = self.draw(lambda: self.last_id(None)), self.draw(lambda: self.latest_rows(br))
        if self.beside_rows is not None:  # a commit landed on the switched main before this rerun
            expected = self.beside_rows
        result = bops.replace_main(self.table(), br, backup_name=self.name("bk"))
        if result["unchanged"]:  # main already reads as the branch (after a fast-forward): no-op
            assert self.last_id(None) == before and self.latest_rows(None) == expected, result
            return f"replace {br}: unchanged"
        self.expect_latest(None, expected, before)
        return None

    def op_ff(self, br):
        if br is None or not self.snaps(br):
            return "noop"
        bops.fast_forward(self.table(), br)
        return None

    def op_consumer(self, br):
        if self.snaps(br):
            save_next_snapshot(self.table(br), "c", self.pick(self.snaps(br)))
        return None

    def op_expire(self, br):
        expire_snapshots(self.table(), branch=br, retain_min=self.randint(1, 3), older_than=timedelta(0),
                         max_deletes=self.randint(1, 20))
        return None

    def op_crash(self, br):
        """A step killed at a random fault point: every state still reads (the branches'
        latest too), and the step run again (same arguments) finishes the job."""
        op = self.pick(sorted(CRASH_POINTS))
        point = self.pick(CRASH_POINTS[op])
        if op in ("rollback", "ff", "replace") and br is None:
            br = self.pick(branches(self.tdir))
        n, self.recorded = self.n, []
        faults.set_fault(point)
        try:
            getattr(self, f"op_{op}")(br)
        except faults.InjectedFault:
            pass
        else:
            return f"crash {op} {br} at {point}: not reached"
        finally:
            faults.clear()
            draws, self.recorded = self.recorded, None
        self.check(f"killed: {op} {br} at {point}", full=False, latest=True)
        beside = ""
        if point in AFTER_SWITCH and self.rng.random() < 0.5:
            # a writer commits to main before the rerun (writers do not read journals).
            # Only after the switch: before it a fast-forward's copies written ahead of
            # main wait behind a gap that such a commit fills (the rerun then refuses
            # and removes them, test_branch_fast_forward.py), but until that rerun
            # readers see the copies instead of the commit.
            self.op_append(None)
            self.check(f"commit beside killed {op} {br} at {point}", full=False, latest=True)
            beside = " + commit to main"
            commit = self.doc(None, "snapshot", str(self.latest_id(None)))["uuid"]
            self.beside_rows = self.latest_rows(None)
        self.n, self.replay = n, draws
        try:
            rerun = getattr(self, f"op_{op}")(br)
        except ConcurrentModificationError as err:
            assert beside and "main changed" in str(err), err  # noqa: PT017 - a refusal is one outcome of the model
            assert not os.path.exists(os.path.join(self.tdir, ".branch-op.json"))
            self.replay = []
            rerun = "refused: main changed"
        finally:
            assert self.replay == [], self.replay
            self.replay = self.beside_rows = None
        if beside:  # the rerun finished (or refused) around the commit: it is main's latest
            assert self.doc(None, "snapshot", str(self.latest_id(None)))["uuid"] == commit, (op, point)
        return f"crash {op} {br} at {point}{beside}, rerun: {rerun}"

    def op_orphans(self, br):
        remove_orphan_files(self.table(), older_than=timedelta(0))
        again = remove_orphan_files(self.table(), older_than=timedelta(0), dry_run=True)
        assert again["deleted_files"] == [], again["deleted_files"]
        return "orphans"

    def _rollback(self, br, as_latest: bool):
        ids = self.snaps(br)
        if len(ids) <= 1 and self.replay is None:  # a killed rollback's rerun goes on
            return None
        target = self.pick(ids[:-1])
        expected = self.rows[self.doc(br, "snapshot", str(target))["uuid"]]
        try:
            result = rollback(self.table(), branch=br, snapshot_id=target, as_latest=as_latest)
        except TagInUseError:
            return "rollback refused (branch needs a later tag)"
        if as_latest and result["already_rolled_back"]:
            # the newest snapshot already is an as_latest rollback to this target
            assert self.snaps(br)[-1] == ids[-1] == result["snapshot_id"], (br, ids, result)
            assert read_rows(self.table(br)) == sorted(expected), (br, target, "already rolled back")
            return "rollback as_latest: already"
        if as_latest:
            self.expect_latest(br, expected, ids[-1])
        else:
            assert self.snaps(br)[-1] == target, (br, target, self.snaps(br))
        return None

    def op_rollback(self, br):
        return self._rollback(br, False)

    def op_rollback_latest(self, br):
        return self._rollback(br, True)

    # -- recording and checking -------------------------------------------------------
    def states(self):
        for br in branches(self.tdir):
            for sid in self.snaps(br):
                yield br, "snapshot", str(sid)
            for tag in self.tags(br):
                yield br, "tag", tag

    def check(self, what: str, *, full: bool, latest: bool = False) -> None:
        """Every snapshot and tag present reads the rows its snapshot read when made.

        A state not read through its current document before (new, or its file was
        rewritten), or one whose files are not all there any more, is read with
        pypaimon; with ``full`` every state is. With ``full`` or ``latest`` each branch
        read without a snapshot (its ``LATEST``) reads as its newest snapshot present.
        """
        for br, kind, name in self.states():
            raw = self.raw(br, kind, name)
            uid = json.loads(raw)["uuid"]
            if uid not in self.rows:
                # every step that commits checks its new latest snapshot; only a
                # compaction may commit more than one (their rows are the table's)
                # (or a killed replace-main's switch: its rerun checks that snapshot)
                assert kind == "snapshot" and what.rsplit(" / ", 1)[-1].startswith(("compact", "killed: replace")), (
                    what, br, kind, name, "a snapshot no step made")
                self.rows[uid] = self.rows_of(br, kind, name)
            key = (br, kind, name)
            if not full and self.verified.get(key) == raw and self.files_there(raw):
                continue
            assert self.rows_of(br, kind, name) == self.rows[uid], (what, br, kind, name)
            self.verified[key] = raw
        if full or latest:
            for br in branches(self.tdir):
                self.reads += 1
                assert read_rows(self.table(br)) == self.latest_rows(br), (what, br, "latest", self.latest_id(br))

    def files_there(self, raw: str) -> bool:
        if raw not in self.needs:
            named, live = self.refs.named(json.loads(raw))
            self.needs[raw] = {p for p in named if p.startswith("manifest/")} | live
        return all(os.path.exists(os.path.join(self.tdir, p)) for p in self.needs[raw])

    def referenced(self) -> tuple[set[str], set[str]]:
        """(files any retained snapshot or tag of any branch names, files one of them reads)."""
        named: set[str] = set()
        live: set[str] = set()
        for br, kind, name in self.states():
            n, lv = self.refs.named(self.doc(br, kind, name))
            named |= n
            live |= lv
        return named, live


@pytest.mark.parametrize("seed", SEEDS)
def test_random_operations_keep_every_retained_state_readable(warehouse, seed, caplog):
    caplog.set_level(logging.INFO, logger=after_commit_log.name)
    model = Model(warehouse, seed)
    log = []
    for i in range(1, STEPS + 1):
        log.append(model.step())
        model.check(" / ".join(log[-3:]), full=i % FULL_CHECK_EVERY == 0)
    ops = {x.split(" ")[0] for x in log}
    # the sequence exercised every kind of step that changes what is retained
    for op in ("append", "overwrite", "stream", "write+expire", "compact", "tag", "expire_tags", "expire",
               "orphans", "branch", "crash"):
        assert op in ops, (op, sorted(ops))
    # the writer's expiry swallows failures (the write is committed): none may have happened
    assert not [r.getMessage() for r in caplog.records if r.name == after_commit_log.name and r.levelno >= logging.WARNING]
    # Whether a seed's random retentions make the writer expire anything depends on the
    # seed; that the writer expires and logs it is asserted deterministically in
    # test_maintenance_writers.py. Here: no retained state is lost.
    time.sleep(0.01)  # every file strictly older than the cut-off below
    remove_orphan_files(model.table(), older_than=timedelta(0))
    assert remove_orphan_files(model.table(), older_than=timedelta(0), dry_run=True)["deleted_files"] == []
    model.check("final orphan cleanup", full=True)
    # independent of the code under test: every file left is named by a retained
    # snapshot or tag (manifests read with fastavro), and every file they read is there
    named, live = model.referenced()
    present = table_files(model.tdir)
    assert present - named == set(), sorted(present - named)
    assert live - present == set(), sorted(live - present)
    crashes = [x for x in log if x.startswith("crash") and "rerun" in x]
    print(f"seed {seed}: {STEPS} steps, {len(crashes)} killed and rerun, {len(model.rows)} snapshots made, "
          f"{model.reads} reads, "
          f"{len(present)} files left, {len([p for p in present - live if p.startswith('bucket-')])} data files "
          "no retained state reads (named by a DELETE entry, kept as Paimon Java's orphan cleanup keeps them)")
