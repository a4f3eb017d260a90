"""alter_table: each change kind on main and on a branch, each refusal (nothing written),
and plain pypaimon reading the table afterwards, compared with pypaimon's own alter."""

from __future__ import annotations

import decimal
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon import Schema
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import Move, SchemaChange
from support.branch_tables import load_table, rows, table_dir, tree, write
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon.catalog import open_catalog
from airflow_provider_paimon.paimon.errors import BranchNotFoundError
from airflow_provider_paimon.paimon.schema import (
    SchemaChangeError,
    alter_table,
    is_widening,
    parse_changes,
)
from airflow_provider_paimon.paimon.tag import create_tag

ORDERS = pa.schema([
    pa.field("day", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    ("qty", pa.int32()),
    ("price", pa.decimal128(10, 2)),
    ("note", pa.string()),
])


def make_orders(warehouse: str, name: str = "db.orders", rows_: int = 3):
    """A partitioned primary-key table with ``rows_`` rows in one commit."""
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    schema = Schema.from_pyarrow_schema(
        ORDERS, partition_keys=["day"], primary_keys=["day", "id"], options={"bucket": "1"}
    )
    catalog.create_table(name, schema, False)
    table = load_table(catalog, name)
    if rows_:
        write_orders(table, [(i, i * 10, f"{i}.50", f"n{i}") for i in range(1, rows_ + 1)])
    return catalog, table


def write_orders(table, data, extra: dict | None = None) -> None:
    schema = pa.schema([pa.field(f.name, _arrow(f.type.type), nullable=f.type.nullable) for f in table.fields])
    out = []
    for i, qty, price, note in data:
        row = {"day": "d1", "id": i, "qty": qty, "price": decimal.Decimal(price), "note": note}
        row.update(extra or {})
        out.append({f.name: row.get(f.name) for f in table.fields})
    commit_rows(table, out, schema)


def _arrow(t: str) -> pa.DataType:
    from pypaimon.schema.data_types import DataTypeParser, PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_type(DataTypeParser.parse_atomic_type_sql_string(t))


def schema_files(warehouse: str, name: str = "db.orders", branch: str | None = None) -> list[str]:
    d = table_dir(warehouse, name)
    if branch:
        d = os.path.join(d, "branch", f"branch-{branch}")
    return sorted(os.listdir(os.path.join(d, "schema")))


def fields(catalog, name: str = "db.orders", branch: str | None = None) -> list[tuple]:
    t = load_table(catalog, name, branch)
    return [(f.id, f.name, f.type.type, f.type.nullable, f.description) for f in t.fields]


# --- each change kind, checked against pypaimon's own alter of a twin table ----------------

KINDS = [
    ("add_after", [{"op": "add_column", "name": "discount", "type": "DECIMAL(10,2)", "after": "price",
                    "comment": "promo"}],
     [SchemaChange.add_column("discount", AtomicType("DECIMAL(10,2)"), "promo", Move.after("discount", "price"))]),
    ("add_first", [{"op": "add_column", "name": "src", "type": "STRING", "first": True}],
     [SchemaChange.add_column("src", AtomicType("STRING"), None, Move.first("src"))]),
    ("drop", [{"op": "drop_column", "name": "note"}], [SchemaChange.drop_column("note")]),
    ("rename", [{"op": "rename_column", "name": "note", "new_name": "remark"}],
     [SchemaChange.rename_column("note", "remark")]),
    ("widen_int", [{"op": "update_column_type", "name": "qty", "type": "BIGINT"}],
     [SchemaChange.update_column_type("qty", AtomicType("BIGINT"), True)]),
    ("widen_decimal", [{"op": "update_column_type", "name": "price", "type": "DECIMAL(12,3)"}],
     [SchemaChange.update_column_type("price", AtomicType("DECIMAL(12,3)"), True)]),
    ("comment", [{"op": "update_comment", "comment": "orders, corrected"}],
     [SchemaChange.update_comment("orders, corrected")]),
    ("options", [{"op": "set_option", "key": "snapshot.num-retained.max", "value": 50},
                 {"op": "remove_option", "key": "snapshot.num-retained.max"},
                 {"op": "set_option", "key": "manifest.target-file-size", "value": "4 mb"}],
     [SchemaChange.set_option("manifest.target-file-size", "4 mb")]),
    ("batch", [{"op": "rename_column", "name": "note", "new_name": "remark"},
               {"op": "add_column", "name": "note", "type": "STRING", "before": "qty"},
               {"op": "drop_column", "name": "remark"},
               {"op": "update_column_type", "name": "qty", "type": "DOUBLE"}],
     [SchemaChange.rename_column("note", "remark"),
      SchemaChange.add_column("note", AtomicType("STRING"), None, Move.before("note", "qty")),
      SchemaChange.drop_column("remark"),
      SchemaChange.update_column_type("qty", AtomicType("DOUBLE"), True)]),
]


@pytest.mark.parametrize(("changes", "reference"), [k[1:] for k in KINDS], ids=[k[0] for k in KINDS])
@pytest.mark.parametrize("on_branch", [False, True], ids=["main", "branch"])
def test_each_change_matches_pypaimon_alter(warehouse, changes, reference, on_branch):
    catalog, t = make_orders(warehouse)
    _, twin = make_orders(warehouse, "db.twin")
    branch = None
    if on_branch:
        branch = "fix"
        for table in (t, twin):
            create_tag(table, "t1")
            ops.create_branch(table, "fix", tag="t1")
    main_before = tree(os.path.join(table_dir(warehouse), "schema"))

    result = alter_table(t, changes, branch=branch)
    catalog.alter_table("db.twin" + (f"$branch_{branch}" if branch else ""), reference)

    assert result["old_schema_id"] == 0 and result["new_schema_id"] == 1 and result["changed"]
    assert result["branch"] == (branch or "main")
    assert result["changes"] == [{**c, **({"value": str(c["value"])} if "value" in c else {})} for c in changes]
    assert schema_files(warehouse, branch=branch) == ["schema-0", "schema-1"]
    assert fields(catalog, branch=branch) == fields(catalog, "db.twin", branch=branch)
    assert result["columns"] == [f[1] for f in fields(catalog, branch=branch)]
    ours, theirs = load_table(catalog, "db.orders", branch), load_table(catalog, "db.twin", branch)
    assert ours.table_schema.options == theirs.table_schema.options
    assert ours.table_schema.comment == theirs.table_schema.comment
    assert rows(catalog, "db.orders", branch) == rows(catalog, "db.twin", branch)
    if on_branch:  # main untouched
        assert tree(os.path.join(table_dir(warehouse), "schema")) == main_before
        assert [f[1] for f in fields(catalog)] == ORDERS.names


def test_old_rows_read_back_after_add_rename_widen(warehouse):
    catalog, t = make_orders(warehouse)
    alter_table(t, [
        {"op": "add_column", "name": "discount", "type": "DECIMAL(10,2)", "after": "price"},
        {"op": "rename_column", "name": "note", "new_name": "remark"},
        {"op": "update_column_type", "name": "qty", "type": "BIGINT"},
    ])
    t1 = load_table(catalog, "db.orders")
    write_orders(t1, [(4, 2**40, "4.50", "n4")], {"discount": decimal.Decimal("0.25"), "remark": "n4"})
    got = rows(catalog, "db.orders")
    assert got == [
        ("d1", 1, 10, decimal.Decimal("1.50"), None, "n1"),  # added column: null for old rows
        ("d1", 2, 20, decimal.Decimal("2.50"), None, "n2"),  # renamed column keeps its data
        ("d1", 3, 30, decimal.Decimal("3.50"), None, "n3"),
        ("d1", 4, 2**40, decimal.Decimal("4.50"), decimal.Decimal("0.25"), "n4"),  # widened type
    ]
    rb = t1.new_read_builder()
    assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).schema.field("qty").type == pa.int64()


def test_rerun_of_a_no_op_writes_nothing(warehouse):
    _catalog, t = make_orders(warehouse)
    change = [{"op": "set_option", "key": "snapshot.num-retained.max", "value": "7"}]
    assert alter_table(t, change)["changed"]
    before = tree(warehouse)
    again = alter_table(t, change)
    assert not again["changed"] and again["old_schema_id"] == again["new_schema_id"] == 1
    assert tree(warehouse) == before


def test_if_not_exists_and_if_exists_make_reruns_pass(warehouse):
    _catalog, t = make_orders(warehouse)
    changes = [{"op": "add_column", "name": "discount", "type": "DECIMAL(10,2)", "if_not_exists": True},
               {"op": "drop_column", "name": "note", "if_exists": True},
               {"op": "set_option", "key": "snapshot.num-retained.min", "value": "3"}]
    first = alter_table(t, changes)
    assert first["changed"] and first["skipped"] == []
    before = tree(warehouse)
    again = alter_table(t, changes)
    assert not again["changed"] and [c["op"] for c in again["skipped"]] == ["add_column", "drop_column"]
    assert tree(warehouse) == before
    # a column that exists with another type is still refused
    with pytest.raises(SchemaChangeError, match=r"exists with type DECIMAL.10,2., not BIGINT"):
        alter_table(t, [{"op": "add_column", "name": "discount", "type": "BIGINT", "if_not_exists": True}])
    assert tree(warehouse) == before


def test_nullability_both_ways_while_the_branch_is_empty(warehouse):
    catalog, t = make_orders(warehouse, rows_=0)
    alter_table(t, [{"op": "update_column_nullability", "name": "qty", "nullable": False}])
    assert next(f for f in fields(catalog) if f[1] == "qty")[3] is False
    assert load_table(catalog, "db.orders").table_schema.options == {"bucket": "1"}  # no switch left behind
    write_orders(load_table(catalog, "db.orders"), [(1, 5, "1.00", "x")])
    result = alter_table(t, [{"op": "update_column_nullability", "name": "qty", "nullable": "true"}])
    assert result["new_schema_id"] == 2
    assert next(f for f in fields(catalog) if f[1] == "qty")[3] is True
    assert rows(catalog, "db.orders") == [("d1", 1, 5, decimal.Decimal("1.00"), "x")]


def test_table_loaded_on_a_branch_alters_that_branch(warehouse):
    catalog, t = make_orders(warehouse)
    ops.create_branch(t, "fix")
    result = alter_table(load_table(catalog, "db.orders", "fix"), [{"op": "drop_column", "name": "note"}])
    assert result["branch"] == "fix"
    assert "note" not in [f[1] for f in fields(catalog, branch="fix")]
    assert "note" in [f[1] for f in fields(catalog)]


# --- refusals: clear message, nothing written ----------------------------------------------

REFUSALS = [
    ({"op": "drop_column", "name": "day"}, "cannot drop 'day', it is a partition key"),
    ({"op": "drop_column", "name": "id"}, "cannot drop 'id', it is a primary key column"),
    ({"op": "rename_column", "name": "day", "new_name": "d"}, "cannot rename 'day', it is a partition key"),
    ({"op": "rename_column", "name": "id", "new_name": "k"}, "cannot rename 'id', it is a primary key"),
    ({"op": "update_column_type", "name": "id", "type": "DECIMAL(20,0)"}, "cannot change the type of 'id'"),
    ({"op": "update_column_type", "name": "qty", "type": "SMALLINT"}, "INT -> SMALLINT .* narrowing"),
    ({"op": "update_column_type", "name": "price", "type": "DECIMAL(10,1)"}, "narrowing or incompatible"),
    ({"op": "update_column_type", "name": "price", "type": "DECIMAL(9,2)"}, "narrowing or incompatible"),
    ({"op": "update_column_type", "name": "note", "type": "INT"}, "STRING -> INT .* narrowing or incompatible"),
    ({"op": "update_column_type", "name": "qty", "type": "STRING"}, "INT -> STRING .* incompatible"),
    ({"op": "update_column_type", "name": "qty", "type": "FLOAT"}, "INT -> FLOAT"),
    ({"op": "update_column_type", "name": "qty", "type": "BIGINT NOT NULL"}, "without NOT NULL"),
    ({"op": "add_column", "name": "qty", "type": "INT"}, "column 'qty' already exists"),
    ({"op": "add_column", "name": "QTY", "type": "INT"}, "differs from existing column 'qty' only by case"),
    ({"op": "add_column", "name": "x", "type": "INT NOT NULL"}, "cannot be NOT NULL"),
    ({"op": "add_column", "name": "x", "type": "INT", "after": "nope"}, "column 'nope' does not exist"),
    ({"op": "drop_column", "name": "nope"}, "column 'nope' does not exist; columns: day, id, qty"),
    ({"op": "rename_column", "name": "Note", "new_name": "x"}, "did you mean 'note'"),
    ({"op": "rename_column", "name": "qty", "new_name": "note"}, "column 'note' already exists"),
    ({"op": "update_column_nullability", "name": "note", "nullable": False},
     "cannot make 'note' NOT NULL, the branch holds 3 row"),
    ({"op": "update_column_nullability", "name": "id", "nullable": True}, "must stay NOT NULL"),
    ({"op": "set_option", "key": "bucket", "value": "4"}, "option 'bucket' cannot change after the table"),
    ({"op": "set_option", "key": "primary-key", "value": "id"}, "option 'primary-key' cannot change"),
    ({"op": "set_option", "key": "partition", "value": "id"}, "option 'partition' cannot change"),
    ({"op": "remove_option", "key": "bucket"}, "option 'bucket' cannot change"),
    ({"op": "set_option", "key": "merge-engine", "value": "first-row"}, "immutable"),
    ({"op": "set_option", "key": "target-file-row-num", "value": "0"}, "refused by Paimon's rules, nothing written: target-file-row-num should be at least 1"),
    ({"op": "frobnicate"}, "unknown op 'frobnicate'; use one of: add_column"),
    ({"op": "add_column", "name": "x"}, "missing 'type'"),
    ({"op": "add_column", "name": "x", "type": "INTEGR"}, "unknown type 'INTEGR'"),
    ({"op": "add_column", "name": "x", "type": "INT", "colour": 1}, "unknown key"),
    ({"op": "add_column", "name": "x", "type": "INT", "after": "qty", "first": True}, "at most one of"),
    ({"op": "update_column_nullability", "name": "qty", "nullable": "maybe"}, "must be true or false"),
]


@pytest.mark.parametrize(("change", "message"), REFUSALS, ids=[f"{c['op']}-{i}" for i, (c, _) in enumerate(REFUSALS)])
def test_refused_with_a_clear_message_and_nothing_written(warehouse, change, message):
    _catalog, t = make_orders(warehouse)
    before = tree(warehouse)
    with pytest.raises(SchemaChangeError, match=message):
        alter_table(t, [{"op": "set_option", "key": "snapshot.num-retained.min", "value": "3"}, change])
    assert tree(warehouse) == before


def test_every_problem_is_named_at_once_and_nothing_written(warehouse):
    _catalog, t = make_orders(warehouse)
    ops.create_branch(t, "fix")
    before = tree(warehouse)
    with pytest.raises(SchemaChangeError) as err:
        alter_table(t, [
            {"op": "add_column", "name": "ok", "type": "INT"},
            {"op": "drop_column", "name": "day"},
            {"op": "update_column_type", "name": "price", "type": "INT"},
        ], branch="fix")
    assert "change #2" in str(err.value) and "change #3" in str(err.value) and "change #1" not in str(err.value)
    assert tree(warehouse) == before


def test_a_change_sees_the_earlier_ones_in_the_batch(warehouse):
    _catalog, t = make_orders(warehouse)
    with pytest.raises(SchemaChangeError, match="column 'note' does not exist"):
        alter_table(t, [{"op": "rename_column", "name": "note", "new_name": "remark"},
                        {"op": "drop_column", "name": "note"}])
    with pytest.raises(SchemaChangeError, match="column 'x' already exists"):
        alter_table(t, [{"op": "add_column", "name": "x", "type": "INT"},
                        {"op": "add_column", "name": "x", "type": "INT"}])
    assert schema_files(warehouse) == ["schema-0"]


@pytest.mark.parametrize("bad", [[], "add x", [1], None])
def test_malformed_change_lists_refused(warehouse, bad):
    _catalog, t = make_orders(warehouse, rows_=0)
    with pytest.raises(SchemaChangeError):
        alter_table(t, bad)
    assert schema_files(warehouse) == ["schema-0"]


def test_unknown_branch_refused(warehouse):
    _catalog, t = make_orders(warehouse, rows_=0)
    with pytest.raises(BranchNotFoundError, match="branch 'nope' does not exist"):
        alter_table(t, [{"op": "drop_column", "name": "note"}], branch="nope")


def test_concurrent_schema_commit_loses_cleanly(warehouse, monkeypatch):
    """Someone commits schema-1 after our latest() read: ours is refused, theirs stays."""
    from pypaimon.schema.schema_manager import SchemaManager

    catalog, t = make_orders(warehouse, rows_=0)
    real_latest = SchemaManager.latest
    raced = []

    def latest_then_race(self):
        schema = real_latest(self)
        if not raced:
            raced.append(True)
            catalog.alter_table("db.orders", [SchemaChange.add_column("theirs", AtomicType("INT"))])
        return schema

    monkeypatch.setattr(SchemaManager, "latest", latest_then_race)
    from airflow_provider_paimon.paimon.errors import ConcurrentModificationError

    with pytest.raises(ConcurrentModificationError, match="rerun"):
        alter_table(t, [{"op": "add_column", "name": "ours", "type": "INT"}])
    monkeypatch.undo()
    assert [f[1] for f in fields(catalog)][-1] == "theirs"


def test_widening_rules():
    assert parse_changes([{"op": "add_column", "name": "x", "type": "decimal(10, 2)"}])[0].data_type.type
    widen = [("TINYINT", "INT"), ("INT", "BIGINT"), ("INT", "DOUBLE"), ("SMALLINT", "FLOAT"),
             ("FLOAT", "DOUBLE"), ("INT", "DECIMAL(10,0)"), ("BIGINT", "DECIMAL(20,1)"),
             ("DECIMAL(10,2)", "DECIMAL(11,3)"), ("VARCHAR(5)", "STRING"), ("CHAR(3)", "VARCHAR(3)"),
             ("BINARY(4)", "BYTES"), ("TIMESTAMP(3)", "TIMESTAMP(6)"), ("STRING", "VARCHAR(2147483647)")]
    narrow = [("BIGINT", "INT"), ("BIGINT", "DOUBLE"), ("INT", "FLOAT"), ("INT", "DECIMAL(9,0)"),
              ("DECIMAL(10,2)", "DECIMAL(10,3)"), ("DECIMAL(10,2)", "DOUBLE"), ("DOUBLE", "FLOAT"),
              ("STRING", "VARCHAR(10)"), ("VARCHAR(5)", "CHAR(5)"), ("INT", "STRING"),
              ("TIMESTAMP(6)", "TIMESTAMP(3)"), ("DATE", "TIMESTAMP"), ("BOOLEAN", "INT")]
    assert [p for p in widen if not is_widening(*p)] == []
    assert [p for p in narrow if is_widening(*p)] == []


# --- publishing a branch whose schema changed ---------------------------------------------

def test_replace_main_after_adding_a_column_on_the_branch(warehouse):
    catalog, t = make_orders(warehouse)
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    alter_table(t, [{"op": "add_column", "name": "discount", "type": "DECIMAL(10,2)", "after": "price"},
                    {"op": "update_column_type", "name": "qty", "type": "BIGINT"}], branch="fix")
    b = load_table(catalog, "db.orders", "fix")
    write_orders(b, [(2, 2**35, "2.75", "fixed")], {"discount": decimal.Decimal("0.10")})
    write_orders(t, [(9, 90, "9.50", "n9")])  # main moves on meanwhile
    branch_rows = rows(catalog, "db.orders", "fix")
    assert ("d1", 1, 10, decimal.Decimal("1.50"), None, "n1") in branch_rows

    result = ops.replace_main(t, "fix")

    assert rows(catalog, "db.orders") == branch_rows
    assert fields(catalog) == fields(catalog, branch="fix")
    assert [f[1] for f in fields(catalog)] == ["day", "id", "qty", "price", "discount", "note"]
    assert rows(catalog, "db.orders", result["backup"]["name"])[-1][1] == 9  # old main kept


def test_alter_on_an_s3_warehouse(s3_warehouse):
    catalog = open_catalog(s3_warehouse.uri, s3_warehouse.options)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64()), ("v", pa.string())])),
                         False)
    t = load_table(catalog, "db.t")
    write(t, [1])
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    result = alter_table(t, [{"op": "add_column", "name": "w", "type": "INT"}], branch="fix")
    assert result["new_schema_id"] == 1
    keys = s3_warehouse.object_keys()
    assert any(k.endswith("/branch/branch-fix/schema/schema-1") for k in keys)
    assert not any(k.endswith("db.db/t/schema/schema-1") for k in keys)
    assert rows(catalog, "db.t", "fix") == [(1, "m1", None)]
    before = sorted(keys)
    with pytest.raises(SchemaChangeError, match="already exists"):
        alter_table(t, [{"op": "add_column", "name": "w", "type": "INT"}], branch="fix")
    assert sorted(s3_warehouse.object_keys()) == before
    doc = json.loads(catalog.file_io.read_file_utf8(
        f"{s3_warehouse.uri}/db.db/t/branch/branch-fix/schema/schema-1"))
    assert [f["name"] for f in doc["fields"]] == ["id", "v", "w"]


def test_fast_forward_after_a_branch_schema_change(warehouse):
    catalog, t = make_orders(warehouse)
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    alter_table(t, [{"op": "rename_column", "name": "note", "new_name": "remark"},
                    {"op": "add_column", "name": "src", "type": "STRING"}], branch="fix")
    write_orders(load_table(catalog, "db.orders", "fix"), [(7, 70, "7.50", None)], {"remark": "r7", "src": "fix"})
    branch_rows, branch_fields = rows(catalog, "db.orders", "fix"), fields(catalog, branch="fix")
    assert ("d1", 1, 10, decimal.Decimal("1.50"), "n1", None) in branch_rows  # renamed keeps data, added is null

    ops.fast_forward(t, "fix")

    assert rows(catalog, "db.orders") == branch_rows
    assert fields(catalog) == branch_fields
    assert schema_files(warehouse) == ["schema-0", "schema-1"]


def test_not_null_refused_when_the_snapshot_does_not_count_rows(warehouse):
    """A snapshot without ``totalRecordCount`` (older writers): rows are assumed."""
    _catalog, t = make_orders(warehouse, rows_=1)
    path = os.path.join(table_dir(warehouse, "db.orders"), "snapshot", "snapshot-1")
    doc = json.loads(Path(path).read_text())
    doc.pop("totalRecordCount")
    with open(path, "w") as fh:
        json.dump(doc, fh)
    before = tree(warehouse)
    with pytest.raises(SchemaChangeError, match="cannot make 'qty' NOT NULL, the branch holds rows"):
        alter_table(t, [{"op": "update_column_nullability", "name": "qty", "nullable": False}])
    assert tree(warehouse) == before
