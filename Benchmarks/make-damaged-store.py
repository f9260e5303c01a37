#!/usr/bin/env python3
"""Damage a copy of a healthy Core Data store, deterministically by seed, for the salvage benchmark.

    make-damaged-store.py SRC OUT --kind KIND [--seed S]

SRC's file set (main file, -wal, .<Name>_SUPPORT) is only read. OUT receives:
    OUT/original/<name>   the store the salvage is scored against (a copy of SRC; for
                          freelist-loop and, when page 1 lives in the -wal, schema-destroyed, a
                          copy made ready for that damage: same rows, see below)
    OUT/damaged/<name>    the damaged file set
    OUT/previous/<name>   wal-torn only: the original as of the commit before the torn one (the
                          state SQLite recovers), which rows of the lost pages may be salvaged as
    OUT/sibling/<name>    a healthy store of the same model and no rows (the original's schema,
                          Z_PRIMARYKEY with Z_MAX 0, Z_METADATA with another UUID, Z_MODELCACHE):
                          what a support engineer has from a fresh install, for --schema-from
    OUT/damage.json       {"kind", "seed", "pages": damaged pages (logical numbers), "note"}

Kinds (pages are never chosen where a -wal frame supersedes them, so every damage is real):
    random-1, random-5, random-20  1 %, 5 %, 20 % of the pages 2..N overwritten with random bytes
    page-header-zeroed              the B-tree header of one table page (interior if any) zeroed
    interior-destroyed              one interior page of a table tree (not a root when one exists)
                                    overwritten with random bytes
    truncated                       the main file cut in the middle of a page at 80 % of its length
    wal-torn                        the -wal cut in the middle of its last frame (the last commit lost)
    schema-destroyed                page 1 (the header and sqlite_schema's root) overwritten with
                                    random bytes
    header-zeroed                   the first 100 bytes zeroed
    freelist-loop                   the last freelist trunk made to point back at the first; a store
                                    without a freelist gets one first (a table of filler rows made
                                    and dropped in the copy: the same rows, free pages added)
Standard library only. Exit 0 done, 3 the kind does not apply to this store (no -wal, no interior
page), 2 usage.
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqlitefile import Database, PageMap  # noqa: E402

KINDS = ["random-1", "random-5", "random-20", "page-header-zeroed", "interior-destroyed", "truncated", "wal-torn",
         "schema-destroyed", "header-zeroed", "freelist-loop"]


def copy_set(src, folder):
    os.makedirs(folder, exist_ok=True)
    name = os.path.basename(src)
    dst = os.path.join(folder, name)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(src + suffix):
            shutil.copyfile(src + suffix, dst + suffix)
    base = os.path.splitext(name)[0]
    support = os.path.join(os.path.dirname(src), "." + base + "_SUPPORT")
    if os.path.isdir(support):
        shutil.copytree(support, os.path.join(folder, "." + base + "_SUPPORT"))
    return dst


def checkpointed(path):
    """Folds the -wal of the copy at path into its main file (same rows)."""
    c = sqlite3.connect(path)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def with_freelist(path):
    """Adds free pages to the copy at path: a filler table made and dropped (rows unchanged)."""
    c = sqlite3.connect(path)
    c.execute("PRAGMA auto_vacuum")  # keeps whatever the store had
    c.execute("CREATE TABLE usm_bench_filler (x BLOB)")
    c.executemany("INSERT INTO usm_bench_filler VALUES (?)", [(os.urandom(1500),) for _ in range(400)])
    c.commit()
    c.execute("DROP TABLE usm_bench_filler")
    c.commit()
    c.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def make_sibling(original, folder):
    """A store with the original's schema and bookkeeping rows and no data, at folder/<name>."""
    os.makedirs(folder, exist_ok=True)
    work = copy_set(original, os.path.join(folder, ".work"))
    dst = os.path.join(folder, os.path.basename(original))
    src = sqlite3.connect(work)
    page_size = src.execute("PRAGMA page_size").fetchone()[0]
    vacuum = src.execute("PRAGMA auto_vacuum").fetchone()[0]
    rows = src.execute("""SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'
        ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid""").fetchall()
    src.close()
    out = sqlite3.connect(dst)
    out.execute(f"PRAGMA page_size = {page_size}")
    out.execute(f"PRAGMA auto_vacuum = {vacuum}")
    for _, _, sql in rows:
        out.execute(sql)
    out.execute("ATTACH DATABASE ? AS src", (work,))
    names = {name.upper(): name for kind, name, _ in rows if kind == "table"}
    if "Z_PRIMARYKEY" in names:
        out.execute(f"INSERT INTO main.{names['Z_PRIMARYKEY']} SELECT Z_ENT, Z_NAME, Z_SUPER, 0 FROM src.{names['Z_PRIMARYKEY']}")
    if "Z_METADATA" in names:
        out.execute(f"INSERT INTO main.{names['Z_METADATA']} SELECT Z_VERSION, '00000000-1111-2222-3333-444444444444', Z_PLIST FROM src.{names['Z_METADATA']}")
    if "Z_MODELCACHE" in names:
        out.execute(f"INSERT INTO main.{names['Z_MODELCACHE']} SELECT * FROM src.{names['Z_MODELCACHE']}")
    out.commit()
    out.close()
    shutil.rmtree(os.path.join(folder, ".work"))
    return dst


def write_at(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(f"{a.kind}/{a.seed}/{os.path.basename(a.src)}")
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    original = copy_set(a.src, os.path.join(a.out, "original"))
    note = ""
    db = Database(original)
    if a.kind == "freelist-loop" and struct.unpack(">I", db.main[36:40])[0] == 0:
        with_freelist(original)
        note = "free pages added to the original first (filler table made and dropped)"
        db = Database(original)
    if a.kind == "schema-destroyed" and 1 in db.wal.frames:
        checkpointed(original)
        note = "page 1 lived in the -wal: the original was checkpointed first (same rows)"
        db = Database(original)
    damaged = copy_set(original, os.path.join(a.out, "damaged"))
    make_sibling(original, os.path.join(a.out, "sibling"))
    ps = db.page_size
    main_pages = len(db.main) // ps
    in_main = [n for n in range(2, main_pages + 1) if n not in db.wal.frames]
    pages = []

    def table_tree_pages():
        """[(interior page, its table's root)], [leaf pages] of every table (sqlite_master's too)."""
        tree = PageMap(original)
        try:
            # sqlite_master's own pages are schema-destroyed's case.
            interior = [(n, tree.roots.get(name, 0)) for name, ns in tree.interior.items() if name != "sqlite_master" for n in ns]
            leaves = [page for name, ls in tree.leaves.items() if name != "sqlite_master" for _, page, _ in ls]
            return interior, leaves
        finally:
            tree.close()

    if a.kind.startswith("random-"):
        share = int(a.kind.split("-")[1]) / 100
        count = max(1, round(len(in_main) * share))
        pages = sorted(rng.sample(in_main, min(count, len(in_main))))
        for n in pages:
            write_at(damaged, (n - 1) * ps, bytes(rng.getrandbits(8) for _ in range(ps)))
    elif a.kind == "page-header-zeroed":
        interior, leaves = table_tree_pages()
        candidates = [n for n, _ in interior if n in in_main] or [n for n in leaves if n in in_main and n != 1]
        if not candidates:
            return 3
        n = rng.choice(sorted(candidates))
        kind = db.page(n)[0]
        write_at(damaged, (n - 1) * ps, bytes(12 if kind in (2, 5) else 8))
        pages = [n]
    elif a.kind == "interior-destroyed":
        interior, _ = table_tree_pages()
        usable = [(n, r) for n, r in interior if n in in_main]
        non_root = [n for n, r in usable if n != r]
        candidates = non_root or [n for n, _ in usable]
        if not candidates:
            return 3
        n = rng.choice(sorted(candidates))
        write_at(damaged, (n - 1) * ps, bytes(rng.getrandbits(8) for _ in range(ps)))
        pages = [n]
        note = (note + "; " if note else "") + ("a non-root interior page" if non_root else "a root page (no other interior page)")
    elif a.kind == "truncated":
        cut_page = max(2, int(main_pages * 0.8))
        size = (cut_page - 1) * ps + ps // 2
        with open(damaged, "r+b") as f:
            f.truncate(size)
        pages = [n for n in range(cut_page, main_pages + 1) if n not in db.wal.frames]
    elif a.kind == "wal-torn":
        if not db.wal.frames or db.wal.last_frame_offset is None:
            return 3
        cut = db.wal.last_frame_offset + 24 + ps // 2
        with open(damaged + "-wal", "r+b") as f:
            f.truncate(cut)
        last = db.wal.transactions[-1]
        # Pages whose newest committed version was in the lost transaction.
        pages = sorted(last)
        # The state SQLite itself recovers: the -wal up to the commit before (what rows of those
        # pages may be salvaged as; the scorer accepts them as the previous commit's, and says so).
        previous = copy_set(original, os.path.join(a.out, "previous"))
        with open(previous + "-wal", "r+b") as f:
            f.truncate(db.wal.commit_ends[-2] if len(db.wal.commit_ends) > 1 else 0)
    elif a.kind == "schema-destroyed":
        write_at(damaged, 0, bytes(rng.getrandbits(8) for _ in range(ps)))
        pages = [1]
    elif a.kind == "header-zeroed":
        write_at(damaged, 0, bytes(100))
        pages = []
    elif a.kind == "freelist-loop":
        trunks = []
        t = struct.unpack(">I", db.page(1)[32:36])[0]
        while t and t not in trunks:
            trunks.append(t)
            t = struct.unpack(">I", db.page(t)[:4])[0]
        last = trunks[-1]
        if last in db.wal.frames:
            return 3
        write_at(damaged, (last - 1) * ps, struct.pack(">I", trunks[0]))
        pages = []
        note = (note + "; " if note else "") + f"{len(trunks)} trunk pages; the last points at the first"
    with open(os.path.join(a.out, "damage.json"), "w") as f:
        json.dump({"kind": a.kind, "seed": a.seed, "pages": pages, "note": note,
                   "name": os.path.basename(a.src)}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
