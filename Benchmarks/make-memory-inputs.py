#!/usr/bin/env python3
"""Write the inputs of `memory-benchmark.sh`: each one large in a single dimension that a
careless reader would decode whole (issue 6, item 12; issue 20, finding 10).

    make-memory-inputs.py DIR [--only NAME]
    make-memory-inputs.py --pending PREFS STATE LINES   (an operation to recover, see below)

Writes into DIR (each input once; delete it to rebuild):

    app/                     a small store (1,000 objects) for the preferences inputs
    prefs-15mb.plist         binary preferences plist of about 15 MB (210,000 keys)
    prefs-15mb-xml.plist     XML preferences plist of about 15 MB
    prefs-200mb.plist        binary preferences plist of about 200 MB (1M keys, 140 blobs of 1 MiB)
    manifest-250mb/          manifest.json of about 250 MB (400,000 file records) and container/
    logs-200k/               ubiquity container with 200,000 transaction logs in CloudLogs/
    zplist-200mb.sqlite      store whose Z_METADATA.Z_PLIST is about 200 MB
    modelcache-31mib.sqlite  store whose Z_MODELCACHE inflates to about 31 MiB
    primarykey-200k.sqlite   store with 200,000 Z_PRIMARYKEY rows
    row-200mb/Store.sqlite   store of 1,000 objects, one of whose rows holds a 200 MB value
    string-200mb/Store.sqlite  the same with the 200 MB (a BLOB) in a string column (ZTITLE)
    schema-50mb/Store.sqlite   store one of whose schema rows is 50 MB (for salvage)
    model-1m-nested.xml      a model's contents XML of 1,000,000 nested elements (for --model)
    plugin-300mb/            an external plugin that prints 300 MB of note lines, then copies the store
    plan-200mb/              preferences folder holding an interrupted operation whose plan.json is
                             200 MB, and record.json (this machine's record of that operation)
    recipe-100mb.json        a recipe of 100 MB
    prefs-200k-keys.plist    binary preferences plist of 200,000 keys (and -xml.plist)
    prefs-50mb-value.plist   binary preferences plist with one 50 MB value (and -xml.plist)

`--pending PREFS STATE LINES` writes, beside the preferences file PREFS, an interrupted operation of
`cloud disable` as usm-repair would have left it (plan.json, journal.jsonl of LINES lines, this
machine's record of it in STATE/usm-repair/operations/): `recover` then reads the whole journal.

Standard library only; deterministic.
"""

import argparse
import hashlib
import json
import os
import plistlib
import random
import sqlite3
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
UUID = "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B"
STORE_UUID = "6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D"


def many_keys(count, blobs=0):
    """A dictionary of `count` small string values and `blobs` 1 MiB data values."""
    d = {"USMCloudEnabledKey": True}
    for i in range(count):
        d["key.%07d" % i] = "value %d of a preference nobody reads" % i
    for i in range(blobs):
        d["blob.%03d" % i] = bytes([i % 256]) * (1 << 20)
    return d


def write_plist(path, value, fmt):
    with open(path + ".tmp", "wb") as f:
        plistlib.dump(value, f, fmt=fmt, sort_keys=False)
    os.replace(path + ".tmp", path)


def core_data_store(path, plist=None, primary_keys=None, model_cache=None):
    """A minimal Core Data store: Z_PRIMARYKEY, Z_METADATA (and Z_MODELCACHE when given)."""
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);"
        "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);"
        "CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR);")
    meta = plist if plist is not None else plistlib.dumps(
        {"NSStoreType": "SQLite", "NSStoreUUID": STORE_UUID, "NSPersistenceFrameworkVersion": 1000}, fmt=plistlib.FMT_BINARY)
    db.execute("INSERT INTO Z_METADATA VALUES (1, ?, ?)", (STORE_UUID, meta))
    if primary_keys:
        db.executemany("INSERT INTO Z_PRIMARYKEY VALUES (?, ?, 0, 0)", (((i, "Entity%d" % i) for i in range(1, primary_keys + 1))))
    else:
        db.execute("INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 3)")
        db.executemany("INSERT INTO ZITEM VALUES (?, 1, 1, ?)", [(i, "item %d" % i) for i in range(1, 4)])
    if model_cache is not None:
        db.execute("CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)")
        db.execute("INSERT INTO Z_MODELCACHE VALUES (?)", (model_cache,))
    db.commit()
    db.close()


def model_cache(target_bytes):
    """An NSKeyedArchiver-shaped binary plist of about `target_bytes`, raw-DEFLATE compressed."""
    objects = ["$null", {"$class": plistlib.UID(2), "NS.objects": []}, {"$classname": "NSManagedObjectModel", "$classes": ["NSManagedObjectModel", "NSObject"]}]
    i = 0
    while True:
        objects.append("attribute name number %08d of a model far too large" % i)
        i += 1
        if i % 50000 == 0 and len(plistlib.dumps({"$objects": objects}, fmt=plistlib.FMT_BINARY)) >= target_bytes:
            break
    archive = plistlib.dumps({"$archiver": "NSKeyedArchiver", "$version": 100000, "$top": {"root": plistlib.UID(1)}, "$objects": objects},
                             fmt=plistlib.FMT_BINARY)
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(archive) + c.flush(), len(archive)


def manifest(folder, records):
    os.makedirs(os.path.join(folder, "container"), exist_ok=True)
    path = os.path.join(folder, "manifest.json")
    with open(path + ".tmp", "w") as f:
        f.write('{"archiveFormat": "tar.zst", "content": "full", "format": "usm-repair-bundle", "formatVersion": 1,\n')
        f.write(' "roots": [{"name": "container", "source": "/Users/someone/Downloads/com.example.notes.xcappdata"}],\n')
        f.write(' "files": [\n')
        for i in range(records):
            rel = "iCloud/CloudLogs/%s/mobile.8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A/%s/%07d.cdt" % (UUID, UUID, i)
            rec = {"kind": "file", "linkTarget": None, "mode": "0644", "mtime": "2026-11-21T10:15:00.123456789Z",
                   "mtimeNanos": 1795256100123456789, "path": "container/" + rel, "sha256": "%064x" % i, "size": 100 + i % 900,
                   "source": "/Users/someone/Downloads/com.example.notes.xcappdata/" + rel, "transformed": None}
            f.write(("  " if i == 0 else ", ") + json.dumps(rec) + "\n")
        f.write(' ], "skipped": [], "stores": [], "snapshot": null, "status": null}\n')
    os.replace(path + ".tmp", path)


def logs(folder, count):
    base = os.path.join(folder, "CloudLogs")
    os.makedirs(base, exist_ok=True)
    with open(os.path.join(base, "StoreUUID+"), "w") as f:
        f.write(UUID)
    for i in range(count):
        d = os.path.join(base, UUID, "mobile.peer%03d" % (i // 1000), UUID)
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "%07d.cdt" % i), "w") as f:
            f.write("transaction log %d\n" % i * 4)


def plan_bytes(op_id, root, notes=None):
    """A plan of usm-repair (snapshot, commit, purge) working in `root`, as JSON bytes."""
    plan = {"id": op_id, "operation": "cloud disable", "expected": {}, "stores": [], "snapshotItems": [],
            "roots": [{"name": "preferences", "path": root, "privateFolder": ".usm-repair"}],
            "steps": [{"action": {"snapshot": {}}, "reason": "archive first"},
                      {"action": {"commit": {}}, "reason": "the point of no return"},
                      {"action": {"purge": {}}, "reason": "clean up"}],
            "notes": notes or []}
    return json.dumps(plan).encode()


def write_record(state, op_id, data, root):
    folder = os.path.join(state, "usm-repair", "operations")
    os.makedirs(folder, exist_ok=True)
    record = {"id": op_id, "sha256": hashlib.sha256(data).hexdigest(), "roots": [root], "operation": "cloud disable",
              "created": "2026-11-26T00:00:00.000000000Z"}
    with open(os.path.join(folder, op_id + ".json"), "w") as f:
        json.dump(record, f)


def pending(prefs, state, lines):
    """An interrupted operation beside `prefs` whose journal has `lines` lines, and its record."""
    root = os.path.dirname(os.path.abspath(prefs))
    op_id = "3b9f0c2e-7d41-4a5e-9c1b-2f6a8d0e4b17"
    folder = os.path.join(root, ".usm-repair", "operations", op_id)
    os.makedirs(folder, exist_ok=True)
    data = plan_bytes(op_id, root)
    with open(os.path.join(folder, "plan.json"), "wb") as f:
        f.write(data)
    line = b'{"event":"begin","step":0}\n'
    with open(os.path.join(folder, "journal.jsonl"), "wb") as f:
        for _ in range(lines // 10000):
            f.write(line * 10000)
        f.write(line * (lines % 10000))
    write_record(state, op_id, data, root)


def flood_plugin(path, example, megabytes):
    """A plugin printing `megabytes` MB of note lines before running the example plugin."""
    with open(path, "w") as f:
        f.write("""#!/usr/bin/env python3
import subprocess, sys
request = sys.stdin.buffer.read()
line = b'{"note": "' + b"x" * 1000 + b'"}\\n'
out = sys.stdout.buffer
for _ in range(%d * 1000 * 1000 // len(line)):
    out.write(line)
out.flush()
sys.exit(subprocess.run([%r, "migrate"], input=request).returncode)
""" % (megabytes, example))
    os.chmod(path, 0o755)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--pending":
        return pending(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--only")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)

    def want(name):
        path = os.path.join(a.dir, name)
        if a.only and a.only not in name:
            return None
        if os.path.exists(path):
            return None
        print("writing %s ..." % name, file=sys.stderr)
        return path

    if (path := want("app")):
        os.makedirs(path + ".tmp", exist_ok=True)
        subprocess.run([sys.executable, os.path.join(HERE, "make-large-store.py"), os.path.join(path + ".tmp", "UbiquityStore.sqlite"),
                        "--objects", "1000", "--wal-rows", "10"], check=True, stdout=subprocess.DEVNULL)
        os.rename(path + ".tmp", path)
    if (path := want("prefs-15mb.plist")):
        write_plist(path, many_keys(210000), plistlib.FMT_BINARY)
    if (path := want("prefs-15mb-xml.plist")):
        write_plist(path, many_keys(190000), plistlib.FMT_XML)
    if (path := want("prefs-200mb.plist")):
        write_plist(path, many_keys(1000000, blobs=140), plistlib.FMT_BINARY)
    if (path := want("manifest-250mb")):
        manifest(path + ".tmp", 400000)
        os.rename(path + ".tmp", path)
    if (path := want("logs-200k")):
        logs(path + ".tmp", 200000)
        os.rename(path + ".tmp", path)
    if (path := want("zplist-200mb.sqlite")):
        meta = many_keys(1000000, blobs=140)
        meta.update({"NSStoreType": "SQLite", "NSStoreUUID": STORE_UUID})
        core_data_store(path + ".tmp", plist=plistlib.dumps(meta, fmt=plistlib.FMT_BINARY))
        os.rename(path + ".tmp", path)
    if (path := want("modelcache-31mib.sqlite")):
        blob, inflated = model_cache(31 << 20)
        print("  model cache: %d bytes inflating to %d" % (len(blob), inflated), file=sys.stderr)
        core_data_store(path + ".tmp", model_cache=blob)
        os.rename(path + ".tmp", path)
    if (path := want("primarykey-200k.sqlite")):
        core_data_store(path + ".tmp", primary_keys=200000)
        os.rename(path + ".tmp", path)
    if (path := want("row-200mb")):
        os.makedirs(path + ".tmp", exist_ok=True)
        store = os.path.join(path + ".tmp", "Store.sqlite")
        subprocess.run([sys.executable, os.path.join(HERE, "make-migrate-store.py"), store, "--objects", "1000", "--wal-rows", "0",
                        "--local"], check=True, stdout=subprocess.DEVNULL)
        db = sqlite3.connect(store)
        # One item's cover, inline (Core Data's 0x01 prefix): 200 MB of bytes that do not compress,
        # bound as a BLOB as Core Data writes a binary attribute (SQL's || would make it TEXT).
        cover = b"\x01" + random.Random(200).randbytes(200000000)
        db.execute("UPDATE ZITEM SET ZCOVER = ? WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM)", (cover,))
        del cover
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        os.rename(path + ".tmp", path)
    if (path := want("string-200mb")):
        # Issue 28, finding 6: the same 200 MB, bound as a BLOB, in a string column (ZTITLE).
        os.makedirs(path + ".tmp", exist_ok=True)
        store = os.path.join(path + ".tmp", "Store.sqlite")
        subprocess.run([sys.executable, os.path.join(HERE, "make-migrate-store.py"), store, "--objects", "1000", "--wal-rows", "0",
                        "--local"], check=True, stdout=subprocess.DEVNULL)
        db = sqlite3.connect(store)
        title = random.Random(201).randbytes(200000000)
        db.execute("UPDATE ZITEM SET ZTITLE = ? WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM)", (title,))
        del title
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        os.rename(path + ".tmp", path)
    if (path := want("schema-50mb")):
        # Issue 28, finding 6: one schema row of 50 MB (a DEFAULT of 50 million x), for salvage.
        os.makedirs(path + ".tmp", exist_ok=True)
        store = os.path.join(path + ".tmp", "Store.sqlite")
        subprocess.run([sys.executable, os.path.join(HERE, "make-migrate-store.py"), store, "--objects", "1000", "--wal-rows", "0",
                        "--local"], check=True, stdout=subprocess.DEVNULL)
        db = sqlite3.connect(store)
        db.execute("CREATE TABLE ZNOTE (Z_PK INTEGER PRIMARY KEY, ZTEXT VARCHAR DEFAULT '%s')" % ("x" * 50000000))
        db.commit()
        db.close()
        os.rename(path + ".tmp", path)
    if (path := want("model-1m-nested.xml")):
        # Issue 28, finding 6: a --model whose <model> holds 1,000,000 nested elements.
        with open(path + ".tmp", "w") as f:
            f.write('<?xml version="1.0"?><model>' + "<a>" * 1000000 + "</a>" * 1000000 + "</model>")
        os.replace(path + ".tmp", path)
    if (path := want("plugin-300mb")):
        os.makedirs(path + ".tmp", exist_ok=True)
        flood_plugin(os.path.join(path + ".tmp", "usm-repair-strategy-flood"),
                     os.path.join(HERE, "..", "Examples", "usm-repair-strategy-sqlite-copy"), 300)
        os.rename(path + ".tmp", path)
    if (path := want("plan-200mb")):
        root = os.path.abspath(path)
        op_id = "5d2e8a41-0c3b-4f7e-a9d6-1b8c4e2f7a90"
        folder = os.path.join(path + ".tmp", ".usm-repair", "operations", op_id)
        os.makedirs(folder, exist_ok=True)
        write_plist(os.path.join(path + ".tmp", "com.example.notes.plist"), {"USMCloudEnabledKey": True}, plistlib.FMT_BINARY)
        note = "a note of a plan far larger than any usm-repair writes " * 18
        data = plan_bytes(op_id, root, [note] * (200 * 1000 * 1000 // (len(note) + 4)))
        with open(os.path.join(folder, "plan.json"), "wb") as f:
            f.write(data)
        with open(os.path.join(folder, "journal.jsonl"), "wb") as f:
            f.write(b'{"event":"begin","step":0}\n')
        write_record(os.path.join(path + ".tmp", "state"), op_id, data, root)
        os.rename(path + ".tmp", path)
    if (path := want("recipe-100mb.json")):
        with open(path + ".tmp", "w") as f:
            f.write('{"format": "usm-repair-recipe", "formatVersion": 1, "id": "recipe-100mb", "version": "1",\n')
            f.write(' "summary": "' + "a recipe far larger than any recipe " * (100 * 1000 * 1000 // 36) + '",\n')
            f.write(' "steps": [{"why": "copy everything", "copy": "store"}]}\n')
        os.replace(path + ".tmp", path)
    for fmt, suffix in ((plistlib.FMT_BINARY, ""), (plistlib.FMT_XML, "-xml")):
        if (path := want("prefs-200k-keys%s.plist" % suffix)):
            write_plist(path, many_keys(200000), fmt)
        if (path := want("prefs-50mb-value%s.plist" % suffix)):
            write_plist(path, {"USMCloudEnabledKey": True, "LastLaunchVersion": "2.4", "big": os.urandom(50 * 1000 * 1000)}, fmt)


if __name__ == "__main__":
    main()
