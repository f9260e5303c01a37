#!/usr/bin/env python3
"""Write the inputs of `memory-benchmark.sh`: each one large in a single dimension that a
careless reader would decode whole (issue 6, item 12).

    make-memory-inputs.py DIR [--only NAME]

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

Standard library only; deterministic.
"""

import argparse
import json
import os
import plistlib
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


def main():
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


if __name__ == "__main__":
    main()
