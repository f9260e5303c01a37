#!/usr/bin/env python3
"""Write a large, Core Data-shaped SQLite store for benchmarking `usm-repair status`.

The store imitates what NSPersistentContainer writes for a small model:

    Folder (Z_ENT 1)                      -> ZFOLDER
    Item   (Z_ENT 2)                      -> ZITEM
    Note   (Z_ENT 3, sub-entity of Item)  -> ZITEM (told apart by Z_ENT = 3)
    Tag    (Z_ENT 4)                      -> ZTAG
    Item.tags <<->> Tag.items             -> Z_2TAGS (join table)

plus Z_PRIMARYKEY (with correct Z_MAX) and Z_METADATA (binary plist).

"Objects" are rows of the entity tables (ZFOLDER + ZITEM + ZTAG); join-table rows
are relationships, not objects, and are reported separately.

After the bulk load the store is checkpointed, then `--wal-rows` more Item rows are
committed with auto-checkpointing disabled and the process exits without closing
the connection, so those rows exist only in the -wal file (as after a crash or a
copy taken while the app was running).

Standard library only. Output is deterministic for a given --seed.
"""

import argparse
import os
import plistlib
import random
import sqlite3
import sys
import time
import uuid

# Entity numbers (Z_ENT) and names, in Z_PRIMARYKEY order.
ENT_FOLDER, ENT_ITEM, ENT_NOTE, ENT_TAG = 1, 2, 3, 4

# Core Data stores dates as seconds since 2001-01-01 00:00:00 UTC.
REFERENCE_DATE_UNIX = 978307200.0

SCHEMA = """
CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
CREATE TABLE ZFOLDER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR, ZCREATED TIMESTAMP, ZFOLDER INTEGER, ZPAYLOAD BLOB );
CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
CREATE TABLE Z_2TAGS ( Z_2ITEMS INTEGER, Z_4TAGS INTEGER, PRIMARY KEY (Z_2ITEMS, Z_4TAGS) );
"""

# Secondary indexes are created after the bulk insert (much faster than maintaining them row by row).
INDEXES = """
CREATE INDEX ZITEM_ZFOLDER_INDEX ON ZITEM (ZFOLDER);
CREATE INDEX Z_2TAGS_Z_4TAGS_INDEX ON Z_2TAGS (Z_4TAGS, Z_2ITEMS);
"""

WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have from or one had by "
    "word but not what all were we when your can said there use an each which she do how their if will up "
    "other about out many then them these so some her would make like him into time has look two more write "
    "go see number no way could people my than first water been call who oil its now find long down day did "
    "get come made may part over new sound take only little work know place year live me back give most very "
    "after thing our just name good sentence man think say great where help through much before line right "
    "too mean old any same tell boy follow came want show also around form three small set put end does "
    "another well large must big even such because turn here why ask went men read need land different home "
    "us move try kind hand picture again change off play spell air away animal house point page letter mother "
    "answer found study still learn should America world invoice meeting groceries project budget backup "
    "recipe travel passport receipt draft review quarterly summary agenda follow-up reminder archive"
).split()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="store file to create (e.g. /tmp/usm-bench/Bench.sqlite)")
    p.add_argument("--objects", type=int, default=1_000_000,
                   help="total number of objects (Folder + Item + Note + Tag rows), default 1000000")
    p.add_argument("--wal-rows", type=int, default=1000,
                   help="extra Item rows left uncheckpointed in the -wal file, default 1000 (0: no -wal)")
    p.add_argument("--seed", type=int, default=20240601, help="random seed (output is deterministic)")
    p.add_argument("--force", action="store_true", help="replace an existing store (and its -wal/-shm)")
    args = p.parse_args(argv)
    if args.objects < 10:
        p.error("--objects must be at least 10")
    if args.wal_rows < 0:
        p.error("--wal-rows must be >= 0")
    return args


def sidecars(path):
    return [path + "-wal", path + "-shm", path + "-journal"]


class Gen:
    """Deterministic fake data."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def text(self, lo=40, hi=100):
        """A sentence-like string of lo..hi characters."""
        rng = self.rng
        target = rng.randint(lo, hi)
        s = " ".join(rng.choices(WORDS, k=target // 4 + 4))
        while len(s) < target:
            s += " " + rng.choice(WORDS)
        s = s[:target].rstrip()
        if len(s) < lo:  # the cut can leave trailing blank; pad deterministically
            s = s + "." * (lo - len(s))
        return s[0].upper() + s[1:]

    def created(self):
        # Somewhere in 2019-2024, as Core Data TIMESTAMP (seconds since 2001-01-01).
        start = 1546300800.0 - REFERENCE_DATE_UNIX
        return round(start + self.rng.random() * 6 * 365 * 86400, 3)

    def payload(self):
        """About 30 % of the rows carry a small blob (16..128 bytes)."""
        if self.rng.random() < 0.30:
            return self.rng.randbytes(self.rng.randint(16, 128))
        return None


def plan(total):
    """Split the total object count over the entities."""
    folders = max(1, total // 200)       # 0.5 %
    tags = max(1, total // 500)          # 0.2 %
    items_all = total - folders - tags   # Items + Notes share ZITEM
    notes = items_all * 3 // 10          # 30 % of the ZITEM rows are Notes
    items = items_all - notes
    return folders, items, notes, tags


def metadata_plist(store_uuid, rng):
    hashes = {name: rng.randbytes(32) for name in ("Folder", "Item", "Note", "Tag")}
    meta = {
        "NSStoreType": "SQLite",
        "NSStoreUUID": store_uuid,
        "NSPersistenceFrameworkVersion": 1345,
        "NSStoreModelVersionHashesVersion": 3,
        "NSStoreModelVersionHashes": hashes,
        "NSStoreModelVersionHashesDigest": rng.randbytes(48).hex(),
        "NSStoreModelVersionIdentifiers": [""],
        "NSStoreModelVersionChecksumKey": rng.randbytes(24).hex(),
        "_NSAutoVacuumLevel": "2",
    }
    return plistlib.dumps(meta, fmt=plistlib.FMT_BINARY, sort_keys=True)


def item_rows(g, first_pk, count, notes, folders):
    """ZITEM rows; exactly `notes` of them (spread evenly) are Notes, the rest Items."""
    for i in range(count):
        pk = first_pk + i
        is_note = (i + 1) * notes // count != i * notes // count
        ent = ENT_NOTE if is_note else ENT_ITEM
        folder = g.rng.randint(1, folders) if g.rng.random() < 0.97 else None  # a few unfiled items
        yield (pk, ent, g.rng.randint(1, 4), g.text(), g.created(), folder, g.payload())


def tag_links(g, first_item, count, tags):
    """Z_2TAGS rows in (Z_2ITEMS, Z_4TAGS) order, 0..3 tags per item (mean 1.5)."""
    for item in range(first_item, first_item + count):
        k = g.rng.choice((0, 1, 1, 2, 2, 3))
        if k:
            for t in sorted(g.rng.sample(range(1, tags + 1), min(k, tags))):
                yield (item, t)


def census(db):
    """Row counts per entity, Z_2TAGS rows, and (Z_SUPER, Z_MAX, max Z_PK of the hierarchy) per entity."""
    count = {
        ENT_FOLDER: db.execute("SELECT count(*) FROM ZFOLDER").fetchone()[0],
        ENT_ITEM: db.execute("SELECT count(*) FROM ZITEM WHERE Z_ENT = ?", (ENT_ITEM,)).fetchone()[0],
        ENT_NOTE: db.execute("SELECT count(*) FROM ZITEM WHERE Z_ENT = ?", (ENT_NOTE,)).fetchone()[0],
        ENT_TAG: db.execute("SELECT count(*) FROM ZTAG").fetchone()[0],
    }
    table_max = {
        "ZFOLDER": db.execute("SELECT coalesce(max(Z_PK), 0) FROM ZFOLDER").fetchone()[0],
        "ZITEM": db.execute("SELECT coalesce(max(Z_PK), 0) FROM ZITEM").fetchone()[0],
        "ZTAG": db.execute("SELECT coalesce(max(Z_PK), 0) FROM ZTAG").fetchone()[0],
    }
    table_of = {ENT_FOLDER: "ZFOLDER", ENT_ITEM: "ZITEM", ENT_NOTE: "ZITEM", ENT_TAG: "ZTAG"}
    pk = {ent: (sup, zmax, table_max[table_of[ent]])
          for ent, sup, zmax in db.execute("SELECT Z_ENT, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY")}
    links = db.execute("SELECT count(*) FROM Z_2TAGS").fetchone()[0]
    return {"count": count, "pk": pk, "links": links}


def main(argv):
    args = parse_args(argv)
    path = os.path.abspath(args.path)
    existing = [p for p in [path] + sidecars(path) if os.path.exists(p)]
    if existing:
        if not args.force:
            sys.exit(f"error: {existing[0]} exists (use --force to replace)")
        for p in existing:
            os.remove(p)
    os.makedirs(os.path.dirname(path), exist_ok=True)

    g = Gen(args.seed)
    n_folders, n_items, n_notes, n_tags = plan(args.objects)
    n_zitem = n_items + n_notes
    t0 = time.monotonic()

    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA page_size = 4096")
    db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # as Core Data does (_NSAutoVacuumLevel 2)
    mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if mode.lower() != "wal":
        sys.exit(f"error: could not switch {path} to WAL (got {mode})")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA cache_size = -262144")  # 256 MiB while building
    db.execute("PRAGMA temp_store = MEMORY")

    db.execute("BEGIN")
    for stmt in SCHEMA.split(";"):
        if stmt.strip():
            db.execute(stmt)

    db.executemany("INSERT INTO ZFOLDER VALUES (?,?,?,?)",
                   ((pk, ENT_FOLDER, 1, g.text(8, 40)) for pk in range(1, n_folders + 1)))
    db.executemany("INSERT INTO ZTAG VALUES (?,?,?,?)",
                   ((pk, ENT_TAG, 1, f"{g.rng.choice(WORDS)}-{pk}") for pk in range(1, n_tags + 1)))
    db.executemany("INSERT INTO ZITEM VALUES (?,?,?,?,?,?,?)",
                   item_rows(g, 1, n_zitem, n_notes, n_folders))
    db.executemany("INSERT INTO Z_2TAGS VALUES (?,?)", tag_links(g, 1, n_zitem, n_tags))
    for stmt in INDEXES.split(";"):
        if stmt.strip():
            db.execute(stmt)

    store_uuid = str(uuid.UUID(bytes=g.rng.randbytes(16), version=4)).upper()
    db.execute("INSERT INTO Z_METADATA VALUES (1, ?, ?)", (store_uuid, metadata_plist(store_uuid, g.rng)))
    # Z_MAX: Item and Note share one primary-key space (the ZITEM hierarchy).
    db.executemany("INSERT INTO Z_PRIMARYKEY VALUES (?,?,?,?)", [
        (ENT_FOLDER, "Folder", 0, n_folders),
        (ENT_ITEM, "Item", 0, n_zitem),
        (ENT_NOTE, "Note", ENT_ITEM, n_zitem),
        (ENT_TAG, "Tag", 0, n_tags),
    ])
    db.execute("COMMIT")
    before = census(db)

    # Move everything into the main file and empty the -wal.
    busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        sys.exit("error: checkpoint after bulk load did not complete")
    t_bulk = time.monotonic() - t0
    main_size = os.path.getsize(path)

    # Extra Items that only live in the -wal.
    if args.wal_rows:
        db.execute("PRAGMA wal_autocheckpoint = 0")
        db.execute("BEGIN")
        first = n_zitem + 1
        db.executemany("INSERT INTO ZITEM VALUES (?,?,?,?,?,?,?)",
                       item_rows(g, first, args.wal_rows, 0, n_folders))
        db.executemany("INSERT INTO Z_2TAGS VALUES (?,?)", tag_links(g, first, args.wal_rows, n_tags))
        new_max = n_zitem + args.wal_rows
        db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT IN (?, ?)", (new_max, ENT_ITEM, ENT_NOTE))
        db.execute("COMMIT")
    after = census(db)

    wal = path + "-wal"
    wal_size = os.path.getsize(wal) if os.path.exists(wal) else 0
    objects = sum(after["count"].values())
    objects_main = sum(before["count"].values())
    print(f"store:        {path}")
    print(f"objects:      {objects:,} (main file {objects_main:,} + -wal {objects - objects_main:,})")
    for ent, name in ((1, "Folder"), (2, "Item"), (3, "Note"), (4, "Tag")):
        c, c0 = after["count"][ent], before["count"][ent]
        sup, zmax, hmax = after["pk"][ent]
        extra = f" (-wal +{c - c0:,})" if c != c0 else ""
        print(f"  {name:<6} ({ent}): {c:>10,}{extra}   Z_SUPER {sup}  Z_MAX {zmax}  max(Z_PK) {hmax}")
    links, links0 = after["links"], before["links"]
    print(f"Z_2TAGS rows: {links:,} (-wal +{links - links0:,})")
    print(f"main file:    {main_size:,} bytes ({main_size / 1048576:.1f} MiB)")
    print(f"-wal file:    {wal_size:,} bytes ({wal_size / 1048576:.1f} MiB)")
    print(f"time:         {time.monotonic() - t0:.1f} s (bulk load + checkpoint {t_bulk:.1f} s)")
    bad = [ent for ent, (_, zmax, hmax) in after["pk"].items() if zmax != hmax]
    if bad:
        print(f"error: Z_MAX does not match max(Z_PK) for Z_ENT {bad}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()

    if args.wal_rows:
        if wal_size == 0:
            print("error: the -wal file is missing or empty after the extra commit", file=sys.stderr)
            sys.stderr.flush()
            os._exit(1)
        # Leave without closing the connection: a clean close would checkpoint and delete the -wal.
        os._exit(0)
    db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
