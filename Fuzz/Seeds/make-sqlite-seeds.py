#!/usr/bin/env python3
"""Seeds for the salvage targets (SQLitePage, SQLiteRecord, SalvageRead): a small Core Data-shaped
store written here with SQLite itself (512-byte pages so that seeds stay small; incremental
auto-vacuum, so it has a pointer map; an inheritance table, a join table, a blob spilling to
overflow pages, a freelist, rows only in its -wal), its pages one by one, records of every serial
type, and damaged copies (header zeroed, a page overwritten, cut short, the -wal torn).

    make-sqlite-seeds.py CORPUS_FOLDER      (writes CORPUS/SQLitePage, SQLiteRecord, SalvageRead)
"""
import os
import random
import shutil
import sqlite3
import struct
import sys
import tempfile

corpus = sys.argv[1]
work = tempfile.mkdtemp()
rng = random.Random(17)
SEP = b"USMWAL!!"


def seed(target, name, data):
    os.makedirs(os.path.join(corpus, target), exist_ok=True)
    with open(os.path.join(corpus, target, name), "wb") as f:
        f.write(data)


path = os.path.join(work, "s.sqlite")
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA page_size = 512")
db.execute("PRAGMA auto_vacuum = INCREMENTAL")
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA wal_autocheckpoint = 0")
db.executescript("""
CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER INTEGER, ZTITLE VARCHAR, ZPRICE FLOAT, ZDATA BLOB );
CREATE INDEX ZITEM_ZOWNER_INDEX ON ZITEM (ZOWNER);
CREATE TABLE ZOWNER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
CREATE TABLE Z_1TAGS ( Z_1ITEMS INTEGER, Z_3TAGS INTEGER, PRIMARY KEY (Z_1ITEMS, Z_3TAGS) );
CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);
CREATE TABLE filler (x BLOB);
""")
db.execute("BEGIN")
for i in range(1, 6):
    db.execute("INSERT INTO ZOWNER VALUES (?, 3, 1, ?)", (i, f"owner {i}"))
for i in range(1, 41):
    blob = bytes(rng.getrandbits(8) for _ in range(700 if i == 7 else 8))
    db.execute("INSERT INTO ZITEM VALUES (?, ?, ?, ?, ?, ?, ?)",
               (i, 1 + i % 2, i, 1 + i % 5, f"item {i} " + "é" * (i % 3), i * 1.25 if i % 4 else None, blob))
    db.execute("INSERT INTO Z_1TAGS VALUES (?, ?)", (i, 1 + i % 3))
db.execute("INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 40), (2, 'Book', 1, 0), (3, 'Owner', 0, 5)")
db.execute("INSERT INTO Z_METADATA VALUES (1, '6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D', x'62706c6973743030d0080000000000000101000000000000000100000000000000000000000000000009')")
db.execute("INSERT INTO filler SELECT randomblob(400) FROM ZITEM")
db.execute("COMMIT")
db.execute("DELETE FROM filler")  # free pages
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.execute("BEGIN")
for i in range(41, 46):
    db.execute("INSERT INTO ZITEM VALUES (?, 1, 1, 1, ?, NULL, x'01')", (i, f"wal item {i}"))
db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 45 WHERE Z_ENT = 1")
db.execute("COMMIT")
main = open(path, "rb").read()
wal = open(path + "-wal", "rb").read()
db.close()

# SalvageRead: the file set whole, and damaged.
seed("SalvageRead", "healthy-with-wal", main + SEP + wal)
seed("SalvageRead", "healthy-main-only", main)
seed("SalvageRead", "header-zeroed", bytes(100) + main[100:] + SEP + wal)
page = 512
seed("SalvageRead", "page-3-overwritten", main[:2 * page] + bytes(rng.getrandbits(8) for _ in range(page)) + main[3 * page:])
seed("SalvageRead", "page-1-overwritten", bytes(rng.getrandbits(8) for _ in range(page)) + main[page:])
seed("SalvageRead", "cut-mid-page", main[:len(main) * 3 // 4 + 100])
seed("SalvageRead", "wal-torn", main + SEP + wal[:len(wal) - page // 2])
trunk = struct.unpack(">I", main[32:36])[0]
if trunk:
    looped = bytearray(main)
    looped[(trunk - 1) * page:(trunk - 1) * page + 4] = struct.pack(">I", trunk)
    seed("SalvageRead", "freelist-loop", bytes(looped))

# SQLitePage: every distinct kind of page.
kinds = {}
for n in range(1, len(main) // page + 1):
    b = main[(n - 1) * page:n * page]
    kind = "page1" if n == 1 else {2: "index-interior", 5: "table-interior", 10: "index-leaf", 13: "table-leaf"}.get(b[0], f"other{b[0]}")
    kinds.setdefault(kind, []).append(b)
for kind, pages in kinds.items():
    for i, b in enumerate(pages[:2]):
        seed("SQLitePage", f"{kind}-{i}", b)

# SQLiteRecord: records of every serial type.
def varint(v):
    if v < 0x80:
        return bytes([v])
    out = []
    while v:
        out.append(v & 0x7F)
        v >>= 7
    out.reverse()
    return bytes([b | 0x80 for b in out[:-1]] + [out[-1]])


def record(values):
    types, body = [], b""
    for v in values:
        if v is None:
            types.append(0)
        elif isinstance(v, bool):
            types.append(9 if v else 8)
        elif isinstance(v, int):
            for t, w in ((1, 1), (2, 2), (3, 3), (4, 4), (5, 6), (6, 8)):
                if -(1 << (8 * w - 1)) <= v < (1 << (8 * w - 1)):
                    types.append(t)
                    body += v.to_bytes(w, "big", signed=True)
                    break
        elif isinstance(v, float):
            types.append(7)
            body += struct.pack(">d", v)
        elif isinstance(v, str):
            e = v.encode()
            types.append(13 + 2 * len(e))
            body += e
        else:
            types.append(12 + 2 * len(v))
            body += v
    header = b"".join(varint(t) for t in types)
    size = len(header) + 1
    if size >= 0x80:
        size += 1
    return varint(size) + header + body


seed("SQLiteRecord", "core-data-row", record([None, 2, 1, 4, "a title", 743906532.0, b"\x02" + b"6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D"]))
seed("SQLiteRecord", "every-int-width", record([0, 1, -1, 300, -70000, 1 << 40, -(1 << 62), True, False]))
seed("SQLiteRecord", "schema-row", record(["table", "ZITEM", "ZITEM", 3, "CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER )"]))
seed("SQLiteRecord", "long-text", record(["x" * 200, b"", None]))
seed("SQLiteRecord", "empty", record([]))
shutil.rmtree(work)
