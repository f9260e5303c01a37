"""A small reader of SQLite's file format for the salvage benchmark (standard library only).

Used on *healthy* stores: to know, page by page, what a damage generator destroys and which rows
lived on those pages. Pages are read with the store's -wal applied (frames up to its last valid
commit, salts and checksums checked), as SQLite reads them.
"""
import os
import shutil
import sqlite3
import struct
import tempfile


def _wal_checksum(data, big_endian, s0, s1):
    fmt = ">%dI" if big_endian else "<%dI"
    words = struct.unpack(fmt % (len(data) // 4), data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


class WAL:
    """The committed frames of a -wal: page -> (offset of the page data, frame index)."""

    def __init__(self, path):
        self.frames = {}
        self.transactions = []  # per commit: the set of pages it wrote
        self.page_size = 0
        self.db_pages = None
        self.valid_bytes = 0
        self.last_frame_offset = None
        self.commit_ends = []  # byte length of the -wal up to and including each commit
        try:
            data = open(path, "rb").read()
        except OSError:
            return
        if len(data) < 32:
            return
        magic, version, page_size = struct.unpack(">III", data[:12])
        if magic & 0xFFFFFFFE != 0x377F0682 or version != 3007000:
            return
        big = magic & 1 == 1
        s0, s1 = _wal_checksum(data[:24], big, 0, 0)
        if (s0, s1) != struct.unpack(">II", data[24:32]):
            return
        self.page_size = page_size
        salts = data[16:24]
        off = 32
        pending = {}
        index = 0
        while off + 24 + page_size <= len(data):
            header = data[off:off + 24]
            page, commit = struct.unpack(">II", header[:8])
            if header[8:16] != salts or page == 0:
                break
            n0, n1 = _wal_checksum(header[:8], big, s0, s1)
            n0, n1 = _wal_checksum(data[off + 24:off + 24 + page_size], big, n0, n1)
            if (n0, n1) != struct.unpack(">II", header[16:24]):
                break
            s0, s1 = n0, n1
            pending[page] = (off + 24, index)
            if commit:
                self.frames.update(pending)
                self.transactions.append(set(pending))
                pending = {}
                self.db_pages = commit
                self.valid_bytes = off + 24 + page_size
                self.last_frame_offset = off
                self.commit_ends.append(self.valid_bytes)
            off += 24 + page_size
            index += 1


class Database:
    """Pages of a healthy database file with its WAL applied."""

    def __init__(self, path):
        self.path = path
        self.main = open(path, "rb").read()
        self.wal = WAL(path + "-wal")
        self.wal_data = open(path + "-wal", "rb").read() if self.wal.frames else b""
        raw = struct.unpack(">H", self.main[16:18])[0]
        self.page_size = 65536 if raw == 1 else raw
        self.reserved = self.main[20]
        self.usable = self.page_size - self.reserved
        main_pages = len(self.main) // self.page_size
        self.page_count = self.wal.db_pages or struct.unpack(">I", self.main[28:32])[0] or main_pages
        self.encoding = struct.unpack(">I", self.main[56:60])[0] or 1

    def page(self, n):
        if n in self.wal.frames:
            off = self.wal.frames[n][0]
            return self.wal_data[off:off + self.page_size]
        off = (n - 1) * self.page_size
        return self.main[off:off + self.page_size]

    def header(self):
        return self.page(1)[:100]

    # -- B-trees

    @staticmethod
    def varint(b, i):
        v = 0
        for k in range(8):
            c = b[i + k]
            v = (v << 7) | (c & 0x7F)
            if c < 0x80:
                return v, k + 1
        return (v << 8) | b[i + 8], 9

    def local_size(self, payload):
        u = self.usable
        x = u - 35
        if payload <= x:
            return payload
        m = ((u - 12) * 32 // 255) - 23
        k = m + (payload - m) % (u - 4)
        return k if k <= x else m

    def cells(self, n):
        """(kind, [(child or None, rowid, cell offset)], right child) of page n."""
        b = self.page(n)
        h = 100 if n == 1 else 0
        kind = b[h]
        count = struct.unpack(">H", b[h + 3:h + 5])[0]
        size = 12 if kind in (2, 5) else 8
        right = struct.unpack(">I", b[h + 8:h + 12])[0] if kind in (2, 5) else None
        out = []
        for i in range(count):
            off = struct.unpack(">H", b[h + size + 2 * i:h + size + 2 * i + 2])[0]
            out.append(off)
        return kind, out, right, b

    def table_pages(self, root):
        """Yields (leaf page, [(rowid, [overflow pages])]) and interior pages of a table tree."""
        stack = [root]
        interior = []
        leaves = []
        while stack:
            n = stack.pop()
            kind, offs, right, b = self.cells(n)
            if kind == 5:
                interior.append(n)
                children = [struct.unpack(">I", b[o:o + 4])[0] for o in offs]
                stack.extend(reversed(children + [right]))
            elif kind == 13:
                rows = []
                for o in offs:
                    payload, a = self.varint(b, o)
                    rowid, c = self.varint(b, o + a)
                    if rowid >= 1 << 63:
                        rowid -= 1 << 64
                    local = self.local_size(payload)
                    overflow = []
                    if local < payload:
                        nxt = struct.unpack(">I", b[o + a + c + local:o + a + c + local + 4])[0]
                        remaining = payload - local
                        while nxt and remaining > 0:
                            overflow.append(nxt)
                            nxt = struct.unpack(">I", self.page(nxt)[:4])[0]
                            remaining -= self.usable - 4
                    rows.append((rowid, overflow))
                leaves.append((n, rows))
        return interior, leaves

    def schema(self):
        """[(type, name, tbl_name, rootpage)] from sqlite_schema."""
        out = []
        _, leaves = self.table_pages(1)
        for page, rows in leaves:
            kind, offs, _, b = self.cells(page)
            for o in offs:
                payload, a = self.varint(b, o)
                _, c = self.varint(b, o + a)
                rec = b[o + a + c:o + a + c + min(payload, self.local_size(payload))]
                hsize, k = self.varint(rec, 0)
                types = []
                while k < hsize:
                    t, d = self.varint(rec, k)
                    types.append(t)
                    k += d
                vals = []
                pos = hsize
                for t in types:
                    if t >= 13 and t % 2:
                        ln = (t - 13) // 2
                        vals.append(rec[pos:pos + ln].decode("utf-8", "replace"))
                        pos += ln
                    elif t >= 12:
                        ln = (t - 12) // 2
                        vals.append(rec[pos:pos + ln])
                        pos += ln
                    elif t in (8, 9):
                        vals.append(t - 8)
                    elif t == 0:
                        vals.append(None)
                    elif t == 7:
                        vals.append(struct.unpack(">d", rec[pos:pos + 8])[0])
                        pos += 8
                    else:
                        ln = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}[t]
                        vals.append(int.from_bytes(rec[pos:pos + ln], "big", signed=True))
                        pos += ln
                if len(vals) >= 4:
                    out.append((vals[0], vals[1], vals[2], vals[3]))
        return out


class PageMap:
    """Where each table's pages and rows lie, from SQLite's own dbstat table on a private copy of a
    healthy store (its -wal applied): interior pages, leaves in key order with their cell counts,
    and the overflow pages of each cell. Fast at any size (no cell is parsed in Python)."""

    def __init__(self, path):
        work = tempfile.mkdtemp(prefix="usm-pagemap-")
        try:
            copy = os.path.join(work, "s.sqlite")
            shutil.copyfile(path, copy)
            if os.path.exists(path + "-wal"):
                shutil.copyfile(path + "-wal", copy + "-wal")
            con = sqlite3.connect(copy)
            self.kinds = {name: kind for kind, name in con.execute("SELECT type, name FROM sqlite_master")}
            self.kinds["sqlite_master"] = "table"
            self.roots = {name: root for name, root in con.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'table'")}
            self.roots["sqlite_master"] = 1
            self.interior, self.leaves, self.overflow = {}, {}, {}
            for name, path_, page, kind, cells in con.execute("SELECT name, path, pageno, pagetype, ncell FROM dbstat ORDER BY name, path"):
                if self.kinds.get(name) != "table":
                    continue
                if kind == "internal":
                    self.interior.setdefault(name, []).append(page)
                elif kind == "leaf":
                    self.leaves.setdefault(name, []).append((path_, page, cells))
                elif kind == "overflow":
                    cell_path, _ = path_.split("+", 1)
                    self.overflow.setdefault(name, {}).setdefault(cell_path, []).append(page)
            self.con = con
            self.work = work
        except Exception:
            shutil.rmtree(work, ignore_errors=True)
            raise

    def close(self):
        self.con.close()
        shutil.rmtree(self.work, ignore_errors=True)

    def rows_on(self, damaged):
        """{table: set of rowids} of the rows whose leaf or an overflow page is in `damaged`."""
        out = {}
        for name, leaves in self.leaves.items():
            hit_leaves = [(i, leaf) for i, leaf in enumerate(leaves) if leaf[1] in damaged]
            hit_cells = {cell for cell, pages in self.overflow.get(name, {}).items() if any(p in damaged for p in pages)}
            if not hit_leaves and not hit_cells:
                continue
            table = "sqlite_master" if name == "sqlite_master" else '"' + name.replace('"', '""') + '"'
            keys = [r[0] for r in self.con.execute(f"SELECT rowid FROM {table} ORDER BY rowid")]
            start, found = 0, set()
            for path_, page, cells in leaves:
                if page in damaged:
                    found.update(keys[start:start + cells])
                for k in range(cells):
                    if f"{path_}{k:03x}" in hit_cells and start + k < len(keys):
                        found.add(keys[start + k])
                start += cells
            out[name] = found
        return out
