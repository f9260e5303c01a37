#!/usr/bin/env python3
"""Score one salvage against the healthy original it was damaged from.

    salvage-score.py ORIGINAL SALVAGED DAMAGE_JSON [REPORT_JSON [PREVIOUS]]

Prints one JSON object:
    rows            rows of the original (every table but Z_METADATA)
    onDamaged       of those, rows whose cell (leaf or overflow page) lies on a damaged page
    recovered       rows of the original on undamaged pages found identical in the salvage
    cutRows         rows found identical but for reference columns set to NULL (counted as
                    recovered: the salvage's report lists them as cut), and join rows the salvage
                    removed because they pointed at a lost row (left out of the recall's base)
    recall          recovered / (rows on undamaged pages - join rows cut)
    unattributable  rows on undamaged pages that no reader can attribute to one table: those of a
                    table without a Z_ENT column whose sqlite_schema row lies on a damaged page
                    while another such table with the same declared column types lost its
                    sqlite_schema row too (two many-to-many join tables between the same
                    entities: their pages fit both, and nothing in the file says which is which)
    recallAttributable  recall with those tables left out of both sides
    salvaged        rows in the salvage (same tables)
    previous        salvaged rows identical not to the original's row but to the row of the commit
                    before a torn -wal transaction (PREVIOUS: what SQLite itself recovers); precise
    invented        salvaged rows identical to no original row with their key (nor cut-equal), nor
                    to PREVIOUS's
    precision       (salvaged - invented) / salvaged
    extra           salvaged rows whose original cell was on a damaged page (found anyway)
Z_PRIMARYKEY is compared without Z_MAX (salvage raises counters), Z_METADATA not at all (the
engine records its provenance there). Standard library only; the original is read through a
private copy (its -wal applied), the salvage likewise.
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqlitefile import PageMap  # noqa: E402


def private(path, folder):
    os.makedirs(folder, exist_ok=True)
    dst = os.path.join(folder, "s.sqlite")
    shutil.copyfile(path, dst)
    if os.path.exists(path + "-wal"):
        shutil.copyfile(path + "-wal", dst + "-wal")
    return dst


def q(name):
    return '"' + name.replace('"', '""') + '"'


def lost_schema_rows(con, damaged):
    """The rowids of the sqlite_schema rows whose cell (leaf or overflow page) lies on a damaged page."""
    stat = list(con.execute("""SELECT path, pageno, pagetype, ncell FROM dbstat
        WHERE name IN ('sqlite_schema', 'sqlite_master') ORDER BY path"""))
    hit = {path.split("+", 1)[0] for path, page, kind, _ in stat if kind == "overflow" and page in damaged}
    keys = [r[0] for r in con.execute("SELECT rowid FROM sqlite_master ORDER BY rowid")]
    start, found = 0, set()
    for path, page, kind, cells in stat:
        if kind != "leaf":
            continue
        for k in range(cells):
            if (page in damaged or f"{path}{k:03x}" in hit) and start + k < len(keys):
                found.add(keys[start + k])
        start += cells
    return found


def ambiguous_tables(con, lost_schema_rows):
    """Tables whose sqlite_schema row is among `lost_schema_rows` (rowids), that have no Z_ENT
    column, and whose declared column types another such table shares."""
    shapes = {}
    for rowid, name in con.execute("SELECT rowid, name FROM sqlite_master WHERE type = 'table'"):
        if rowid not in lost_schema_rows or name.startswith("sqlite_"):
            continue
        info = list(con.execute(f"PRAGMA table_info({q(name)})"))
        if any(r[1].upper() == "Z_ENT" for r in info) and name.upper() != "Z_PRIMARYKEY":
            continue
        shape = tuple(((r[2] or "").upper(), r[5]) for r in info)
        shapes.setdefault(shape, []).append(name)
    return {name for names in shapes.values() if len(names) > 1 for name in names}


def main():
    original, salvaged, damage_path = sys.argv[1:4]
    report = json.load(open(sys.argv[4])) if len(sys.argv) > 4 else {}
    previous = sys.argv[5] if len(sys.argv) > 5 else None
    damage = json.load(open(damage_path))
    damaged = set(damage["pages"])
    pages = PageMap(original)
    try:
        on_damaged = pages.rows_on(damaged)
        twins = ambiguous_tables(pages.con, lost_schema_rows(pages.con, damaged))
    finally:
        pages.close()
    work = tempfile.mkdtemp(prefix="usm-score-")
    try:
        con = sqlite3.connect(private(original, os.path.join(work, "o")))
        con.execute("ATTACH DATABASE ? AS s", (private(salvaged, os.path.join(work, "s")),))
        con.execute("ATTACH DATABASE ? AS p", (private(previous, os.path.join(work, "p")) if previous else ":memory:",))
        salvaged_tables = {r[0] for r in con.execute("SELECT name FROM s.sqlite_master WHERE type = 'table'")}
        previous_tables = {r[0] for r in con.execute("SELECT name FROM p.sqlite_master WHERE type = 'table'")}
        join_cut = sum(c["rows"] for c in report.get("referencesCut", []) if c["kind"] == "join-row")
        totals = dict(rows=0, onDamaged=0, recovered=0, cutRows=0, salvaged=0, previous=0, invented=0, extra=0,
                      unattributable=0)
        twin_recovered = 0
        for (name,) in con.execute("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall():
            if name.upper() == "Z_METADATA":
                continue
            cols = [r[1] for r in con.execute(f"PRAGMA main.table_info({q(name)})")]
            types = {r[1]: (r[2] or "").upper() for r in con.execute(f"PRAGMA main.table_info({q(name)})")}
            compared = [c for c in cols if not (name.upper() == "Z_PRIMARYKEY" and c.upper() == "Z_MAX")]
            # Columns the salvage may set to NULL when what they point at was lost.
            cuttable = [c for c in compared if c.upper().startswith("Z_FOK_") or "BLOB" in types[c]
                        or (c.upper().startswith("Z") and not c.upper().startswith("Z_") and "INT" in types[c])]
            con.execute("DROP TABLE IF EXISTS temp.dmg")
            con.execute("CREATE TEMP TABLE dmg (k INTEGER PRIMARY KEY)")
            con.executemany("INSERT INTO temp.dmg VALUES (?)", [(k,) for k in on_damaged.get(name, ())])
            total = con.execute(f"SELECT COUNT(*) FROM main.{q(name)}").fetchone()[0]
            totals["rows"] += total
            totals["onDamaged"] += len(on_damaged.get(name, ()))
            if name in twins:
                totals["unattributable"] += total - len(on_damaged.get(name, ()))
            if name not in salvaged_tables:
                continue
            same = " AND ".join(f"o.{q(c)} IS s.{q(c)}" for c in compared) or "1"
            cut = " AND ".join(
                f"(o.{q(c)} IS s.{q(c)} OR (s.{q(c)} IS NULL AND {int(c in cuttable)}))" for c in compared) or "1"
            base = f"FROM main.{q(name)} o JOIN s.{q(name)} s ON s.rowid = o.rowid"
            undamaged = "o.rowid NOT IN (SELECT k FROM temp.dmg)"
            exact = con.execute(f"SELECT COUNT(*) {base} WHERE {undamaged} AND {same}").fetchone()[0]
            near = con.execute(f"SELECT COUNT(*) {base} WHERE {undamaged} AND {cut}").fetchone()[0]
            totals["recovered"] += near
            if name in twins:
                twin_recovered += near
            totals["cutRows"] += near - exact
            count = con.execute(f"SELECT COUNT(*) FROM s.{q(name)}").fetchone()[0]
            totals["salvaged"] += count
            good = con.execute(f"SELECT COUNT(*) {base} WHERE {cut}").fetchone()[0]
            older = 0
            if name in previous_tables:
                pcut = cut.replace("o.", "p.")
                older = con.execute(f"""SELECT COUNT(*) FROM s.{q(name)} s JOIN p.{q(name)} p ON p.rowid = s.rowid
                    WHERE {pcut} AND NOT EXISTS (SELECT 1 FROM main.{q(name)} o WHERE o.rowid = s.rowid AND {cut})""").fetchone()[0]
            totals["previous"] += older
            totals["invented"] += count - good - older
            totals["extra"] += con.execute(f"SELECT COUNT(*) {base} WHERE NOT ({undamaged}) AND {cut}").fetchone()[0]
        base = totals["rows"] - totals["onDamaged"] - join_cut
        totals["cutRows"] += join_cut
        totals["recall"] = round(totals["recovered"] / base, 6) if base > 0 else 1.0
        attributable = base - totals["unattributable"]
        totals["recallAttributable"] = (
            round((totals["recovered"] - twin_recovered) / attributable, 6) if attributable > 0 else 1.0)
        totals["precision"] = round((totals["salvaged"] - totals["invented"]) / totals["salvaged"], 6) if totals["salvaged"] else 1.0
        print(json.dumps(totals))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
