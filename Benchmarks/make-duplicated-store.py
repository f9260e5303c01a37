#!/usr/bin/env python3
"""Write a store for `Benchmarks/dedupe-benchmark.sh`: `make-migrate-store.py`'s model with
OBJECTS / 1.1 objects (no -wal), then every tenth folder, tag and item copied (same entity and
attributes, new keys above every existing one), so that 10% of the objects have a duplicate and the
store holds OBJECTS in all. The relationships are split between the copies: half the items of a
copied folder move to its copy, half the join rows of a copied tag or item move to the copy. An
item copy keeps its original's folder (or that folder's copy: the same object), its cover (an
external-data reference too). Standard library only.

    make-duplicated-store.py PATH [--objects N]
"""
import argparse
import os
import sqlite3
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("path")
p.add_argument("--objects", type=int, default=200_000)
a = p.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
subprocess.run([sys.executable, os.path.join(here, "make-migrate-store.py"), a.path,
                "--objects", str(round(a.objects / 1.1)), "--wal-rows", "0", "--local"], check=True)
db = sqlite3.connect(a.path, isolation_level=None)
top = {t: db.execute(f"SELECT MAX(Z_PK) FROM {t}").fetchone()[0] for t in ("ZFOLDER", "ZTAG", "ZITEM")}
db.executescript(f"""
BEGIN;
CREATE TEMP TABLE fmap AS SELECT Z_PK AS old, Z_PK + {top['ZFOLDER']} AS new FROM ZFOLDER WHERE Z_PK % 10 = 0;
INSERT INTO ZFOLDER SELECT m.new, f.Z_ENT, f.Z_OPT, f.ZNAME FROM ZFOLDER f JOIN fmap m ON f.Z_PK = m.old;
UPDATE ZITEM SET ZFOLDER = (SELECT new FROM fmap WHERE old = ZITEM.ZFOLDER)
  WHERE ZFOLDER IN (SELECT old FROM fmap) AND Z_PK % 2 = 0;
CREATE TEMP TABLE tmap AS SELECT Z_PK AS old, Z_PK + {top['ZTAG']} AS new FROM ZTAG WHERE Z_PK % 10 = 0;
INSERT INTO ZTAG SELECT m.new, t.Z_ENT, t.Z_OPT, t.ZNAME FROM ZTAG t JOIN tmap m ON t.Z_PK = m.old;
UPDATE Z_2TAGS SET Z_4TAGS = (SELECT new FROM tmap WHERE old = Z_2TAGS.Z_4TAGS)
  WHERE Z_4TAGS IN (SELECT old FROM tmap) AND Z_2ITEMS % 2 = 0;
CREATE TEMP TABLE imap AS SELECT Z_PK AS old, Z_PK + {top['ZITEM']} AS new FROM ZITEM WHERE Z_PK % 10 = 0;
INSERT INTO ZITEM SELECT m.new, i.Z_ENT, i.Z_OPT, i.ZFOLDER, i.ZCREATED, i.ZTITLE, i.ZCOVER
  FROM ZITEM i JOIN imap m ON i.Z_PK = m.old;
INSERT INTO Z_2TAGS SELECT m.new, j.Z_4TAGS FROM Z_2TAGS j JOIN imap m ON j.Z_2ITEMS = m.old WHERE j.Z_4TAGS % 2 = 1;
DELETE FROM Z_2TAGS WHERE Z_2ITEMS IN (SELECT old FROM imap) AND Z_4TAGS % 2 = 1;
UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZFOLDER) WHERE Z_ENT = 1;
UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZITEM) WHERE Z_ENT IN (2, 3);
UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZTAG) WHERE Z_ENT = 4;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
""")
total = sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("ZFOLDER", "ZTAG", "ZITEM"))
copies = sum(db.execute(f"SELECT COUNT(*) FROM {m}").fetchone()[0] for m in ("fmap", "tmap", "imap"))
db.close()
print(f"{a.path}: {total} objects, {copies} of them copies of another", file=sys.stderr)
