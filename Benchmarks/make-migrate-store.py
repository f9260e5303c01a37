#!/usr/bin/env python3
"""Write a Core Data-shaped store for `Benchmarks/migrate-benchmark.sh`.

    Folder (Z_ENT 1)                      -> ZFOLDER
    Item   (Z_ENT 2)                      -> ZITEM   (to-one ZFOLDER; ZCOVER BLOB, some external)
    Note   (Z_ENT 3, sub-entity of Item)  -> ZITEM   (told apart by Z_ENT = 3)
    Tag    (Z_ENT 4)                      -> ZTAG
    Item.tags <<->> Tag.items             -> Z_2TAGS (join table)

Objects are 1% folders, 10% tags, the rest items (half of them notes). One item in a thousand
keeps its cover as an external-data file (.<Name>_SUPPORT/_EXTERNAL_DATA/<UUID>, 4 KiB). After a
checkpoint, --wal-rows more items are committed and the process exits without closing, so they
exist only in the -wal. Rows are generated in SQL (recursive CTEs), deterministic for --prefix.
Standard library only.
"""
import argparse
import os
import plistlib
import sqlite3
import uuid

p = argparse.ArgumentParser()
p.add_argument("path")
p.add_argument("--objects", type=int, default=1_000_000)
p.add_argument("--wal-rows", type=int, default=1000)
p.add_argument("--prefix", default="a", help="text prefix (two stores with different prefixes merge without conflicts)")
a = p.parse_args()

for suffix in ("", "-wal", "-shm"):
    if os.path.exists(a.path + suffix):
        os.remove(a.path + suffix)
folders = max(a.objects // 100, 1)
tags = max(a.objects // 10, 1)
items = a.objects - folders - tags
external = max(items // 1000, 1)
db = sqlite3.connect(a.path, isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA wal_autocheckpoint = 0")
db.executescript("""
CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);
CREATE TABLE ZFOLDER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZFOLDER INTEGER, ZCREATED TIMESTAMP, ZTITLE VARCHAR, ZCOVER BLOB );
CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
CREATE TABLE Z_2TAGS ( Z_2ITEMS INTEGER, Z_4TAGS INTEGER, PRIMARY KEY (Z_2ITEMS, Z_4TAGS) );
""")
db.execute("BEGIN")
db.execute("INSERT INTO Z_PRIMARYKEY VALUES (1, 'Folder', 0, 0), (2, 'Item', 0, 0), (3, 'Note', 2, 0), (4, 'Tag', 0, 0)")
db.execute(f"""WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {folders})
    INSERT INTO ZFOLDER SELECT i, 1, 1, '{a.prefix} folder ' || i FROM n""")
db.execute(f"""WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {tags})
    INSERT INTO ZTAG SELECT i, 4, 1, '{a.prefix} tag ' || i FROM n""")
db.execute(f"""WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {items})
    INSERT INTO ZITEM SELECT i, 2 + (i % 2), 1, 1 + (i * 7919) % {folders}, 700000000.0 + i,
        '{a.prefix} item ' || i || ' ' || hex(randomblob(12)), x'01' || randomblob(48) FROM n""")
db.execute(f"""INSERT INTO Z_2TAGS SELECT Z_PK, 1 + (Z_PK * 104729) % {tags} FROM ZITEM""")
names = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"{a.prefix}/{k}")).upper() for k in range(external)]
support = os.path.join(os.path.dirname(os.path.abspath(a.path)),
                       "." + os.path.splitext(os.path.basename(a.path))[0] + "_SUPPORT", "_EXTERNAL_DATA")
os.makedirs(support, exist_ok=True)
for k, name in enumerate(names):
    db.execute("UPDATE ZITEM SET ZCOVER = ? WHERE Z_PK = ?", (b"\x02" + name.encode(), 1 + k * 997 % items))
    with open(os.path.join(support, name), "wb") as f:
        f.write(os.urandom(4096))
for index in ("CREATE INDEX ZITEM_ZFOLDER_INDEX ON ZITEM (ZFOLDER)", "CREATE INDEX ZITEM_Z_ENT_INDEX ON ZITEM (Z_ENT)",
              "CREATE INDEX Z_2TAGS_Z_4TAGS_INDEX ON Z_2TAGS (Z_4TAGS, Z_2ITEMS)"):
    db.execute(index)
db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZFOLDER) WHERE Z_ENT = 1")
db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZITEM) WHERE Z_ENT IN (2, 3)")
db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZTAG) WHERE Z_ENT = 4")
plist = plistlib.dumps({"NSStoreType": "SQLite", "NSPersistenceFrameworkVersion": 1345,
                        "NSStoreModelVersionHashes": {n: bytes(32) for n in ("Folder", "Item", "Note", "Tag")},
                        "com.apple.coredata.ubiquity.ubiquitized": True}, fmt=plistlib.FMT_BINARY)
db.execute("INSERT INTO Z_METADATA VALUES (1, ?, ?)", (str(uuid.uuid4()).upper(), plist))
db.execute("COMMIT")
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
if a.wal_rows:
    db.execute("BEGIN")
    db.execute(f"""WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {a.wal_rows})
        INSERT INTO ZITEM SELECT {items} + i, 2, 1, 1, 800000000.0 + i, '{a.prefix} wal item ' || i, x'01' FROM n""")
    db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZITEM) WHERE Z_ENT IN (2, 3)")
    db.execute("COMMIT")
print(f"{a.path}: {folders + tags + items + a.wal_rows} objects ({a.wal_rows} only in the -wal), {external} external-data files")
os._exit(0)  # without closing: the last rows stay in the -wal
