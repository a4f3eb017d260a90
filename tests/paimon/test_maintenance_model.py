"""Model-based test: a seeded random sequence of table operations and maintenance.

Every snapshot ever committed is remembered by its uuid with the rows it read when it
was made (branch creation and fast-forward copy snapshot files, so copies share the
uuid). After every step, every snapshot present on main and on every branch, and every
tag, must read exactly those rows with plain pypaimon; after an orphan cleanup no
unreferenced file is left. ``PAIMON_MODEL_STEPS`` and ``PAIMON_MODEL_SEEDS`` run more.
"""

from __future__ import annotations

import json
import logging
import os
import random
from datetime import timedelta

import pytest
from test_branch_support import load_table, make_table, table_dir, write
from test_maintenance_support import OPTIONS, branches, compact_main, meta_ids, read_rows

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon.consumers import save_next_snapshot
from airflow_provider_paimon.paimon.maintenance import (
    expire_snapshots,
    remove_orphan_files,
    rollback,
)
from airflow_provider_paimon.paimon.maintenance.after_commit import expire_after_commit
from airflow_provider_paimon.paimon.maintenance.after_commit import log as after_commit_log
from airflow_provider_paimon.paimon.tag import create_tag, delete_tag
from airflow_provider_paimon.paimon.tag.delete import TagInUseError

STEPS = int(os.environ.get("PAIMON_MODEL_STEPS", "40"))
SEEDS = [int(s) for s in os.environ.get("PAIMON_MODEL_SEEDS", "7,11").split(",")]


class Model:
    def __init__(self, warehouse: str, seed: int) -> None:
        self.warehouse = warehouse
        self.rng = random.Random(seed)
        self.catalog, _ = make_table(warehouse, options=OPTIONS)
        self.tdir = table_dir(warehouse)
        self.rows: dict[str, list[tuple]] = {}  # snapshot uuid -> rows
        self.n = 0

    def table(self, br: str | None = None):
        return load_table(self.catalog, "db.t", br)

    def doc(self, br: str | None, kind: str, name: str) -> dict:
        root = self.tdir if br is None else os.path.join(self.tdir, "branch", f"branch-{br}")
        return json.load(open(os.path.join(root, kind, f"{kind}-{name}")))

    def record_latest(self, br: str | None) -> None:
        sid = meta_ids(self.tdir, br, "snapshot", "snapshot-")[-1]
        uid = self.doc(br, "snapshot", sid)["uuid"]
        self.rows.setdefault(uid, read_rows(self.table(br).copy({"scan.snapshot-id": sid})))

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def snaps(self, br: str | None) -> list[int]:
        return [int(s) for s in meta_ids(self.tdir, br, "snapshot", "snapshot-")]

    # -- steps --------------------------------------------------------------------
    def step(self) -> str:
        rng = self.rng
        brs = branches(self.tdir)
        br = rng.choice(brs)
        op = rng.choices(
            ["append", "compact", "tag", "untag", "branch", "unbranch", "replace", "ff", "consumer",
             "expire", "orphans", "rollback", "rollback_latest", "write_expire"],
            weights=[8, 2, 2, 1, 2, 1, 1, 1, 1, 3, 1, 1, 1, 4],
        )[0]
        main_snaps = self.snaps(None)
        if op == "write_expire" and main_snaps:
            # a writer's commit followed by its after-commit expiry, with random retention
            self.n += 1
            write(self.table(br), [self.n, self.n + 1000], "b" if br else "m")
            self.record_latest(br)
            options = {
                "snapshot.num-retained.min": str(rng.randint(1, 2)),
                "snapshot.num-retained.max": str(rng.randint(2, 5)),
                "snapshot.time-retained": rng.choice(["1 ms", "1 h"]),
                "snapshot.expire.limit": str(rng.randint(1, 4)),
            }
            expire_after_commit(self.table(br), branch=br, options=options)
            return f"write+expire {br} {options}"
        if op == "append" or not main_snaps:
            self.n += 1
            write(self.table(br), [self.n, self.n + 1000], "b" if br else "m")
            self.record_latest(br)
            return f"append {br}"
        if op == "compact":
            try:
                compact_main(self.table(br))
            except AssertionError:
                return "compact: nothing to do"
            self.record_latest(br)
            return f"compact {br}"
        if op == "tag":
            ids = self.snaps(br)
            if ids:
                create_tag(self.table(), self.name("t"), branch=br, snapshot_id=rng.choice(ids))
            return f"tag {br}"
        if op == "untag":
            tags = meta_ids(self.tdir, br, "tag", "tag-")
            if tags:
                try:
                    delete_tag(self.table(), rng.choice(tags), branch=br)
                except TagInUseError:
                    return "untag refused (branch needs it)"
            return f"untag {br}"
        if op == "branch":
            tags = meta_ids(self.tdir, None, "tag", "tag-")
            if tags and rng.random() < 0.5:
                bops.create_branch(self.table(), self.name("b"), tag=rng.choice(tags))
            else:
                bops.create_branch(self.table(), self.name("b"), snapshot_id=rng.choice(main_snaps))
            return "branch"
        if op == "unbranch" and br is not None:
            bops.delete_branch(self.table(), br)
            return f"delete branch {br}"
        if op in ("replace", "ff") and br is not None and self.snaps(br):
            if op == "replace":
                bops.replace_main(self.table(), br, backup_name=self.name("bk"))
                self.record_latest(None)
            else:
                bops.fast_forward(self.table(), br)
            return f"{op} {br}"
        if op == "consumer" and self.snaps(br):
            save_next_snapshot(self.table(br), "c", rng.choice(self.snaps(br)))
            return f"consumer {br}"
        if op == "expire":
            expire_snapshots(self.table(), branch=br, retain_min=rng.randint(1, 3), older_than=timedelta(0),
                             max_deletes=rng.randint(1, 20))
            return f"expire {br}"
        if op == "orphans":
            remove_orphan_files(self.table(), older_than=timedelta(0))
            again = remove_orphan_files(self.table(), older_than=timedelta(0), dry_run=True)
            assert again["deleted_files"] == [], again["deleted_files"]
            return "orphans"
        if op in ("rollback", "rollback_latest"):
            ids = self.snaps(br)
            if len(ids) > 1:
                target = rng.choice(ids[:-1])
                try:
                    rollback(self.table(), branch=br, snapshot_id=target, as_latest=op == "rollback_latest")
                except TagInUseError:
                    return "rollback refused (branch needs a later tag)"
                self.record_latest(br)
            return f"{op} {br}"
        return "noop"

    def record_new(self) -> None:
        """Snapshots the last step committed (a compaction may commit more than one)."""
        for br in branches(self.tdir):
            for sid in meta_ids(self.tdir, br, "snapshot", "snapshot-"):
                uid = self.doc(br, "snapshot", sid)["uuid"]
                if uid not in self.rows:
                    self.rows[uid] = read_rows(self.table(br).copy({"scan.snapshot-id": sid}))

    def check(self, what: str) -> None:
        for br in branches(self.tdir):
            base = self.table(br)
            for sid in meta_ids(self.tdir, br, "snapshot", "snapshot-"):
                uid = self.doc(br, "snapshot", sid)["uuid"]
                assert uid in self.rows, (what, br, sid)
                assert read_rows(base.copy({"scan.snapshot-id": sid})) == self.rows[uid], (what, br, sid)
            for tag in meta_ids(self.tdir, br, "tag", "tag-"):
                uid = self.doc(br, "tag", tag)["uuid"]
                assert read_rows(base.copy({"scan.tag-name": tag})) == self.rows[uid], (what, br, tag)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_operations_keep_every_retained_state_readable(warehouse, seed, caplog):
    caplog.set_level(logging.INFO, logger=after_commit_log.name)
    model = Model(warehouse, seed)
    log = []
    for _ in range(STEPS):
        log.append(model.step())
        if not log[-1].startswith(("expire", "orphans", "write+expire")):
            model.record_new()
        model.check(" / ".join(log[-3:]))
    # the run exercised expiry; a final cleanup leaves no orphan and every state reads
    assert any(x.startswith("expire") for x in log)
    assert any(x.startswith("write+expire") for x in log)
    # the writer's expiry swallows failures (the write is committed): none may have happened
    assert not [r.getMessage() for r in caplog.records if r.name == after_commit_log.name and r.levelno >= logging.WARNING]
    # Whether a seed's random retentions make the writer expire anything depends on the
    # seed (it did not for 11); that the writer expires and logs it is asserted
    # deterministically in test_maintenance_writers.py. Here: no retained state is lost.
    remove_orphan_files(model.table(), older_than=timedelta(0))
    assert remove_orphan_files(model.table(), older_than=timedelta(0), dry_run=True)["deleted_files"] == []
    model.check("final orphan cleanup")
