#include "cdigest.h"
#include <sqlite3.h>
#include <stdint.h>
#include <string.h>

/* One 64-bit hash per row (FNV-1a over a type tag and the value's bytes, then a final mix so
   that summing rows does not cancel simple patterns). Written in C because it runs once per row
   of every verified table: a Swift callback per row costs more than the copy it verifies. */

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t row_hash(int argc, sqlite3_value **argv) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < argc; i++) {
        unsigned char tag = (unsigned char)sqlite3_value_type(argv[i]);
        h = fnv(h, &tag, 1);
        switch (tag) {
        case SQLITE_INTEGER: {
            sqlite3_int64 v = sqlite3_value_int64(argv[i]);
            h = fnv(h, (const unsigned char *)&v, sizeof v);
            break;
        }
        case SQLITE_FLOAT: {
            double v = sqlite3_value_double(argv[i]);
            h = fnv(h, (const unsigned char *)&v, sizeof v);
            break;
        }
        case SQLITE_TEXT: {
            const unsigned char *p = sqlite3_value_text(argv[i]);
            int n = sqlite3_value_bytes(argv[i]);
            uint32_t len = (uint32_t)n;
            h = fnv(h, (const unsigned char *)&len, sizeof len);
            if (p != NULL) h = fnv(h, p, (size_t)n);
            break;
        }
        case SQLITE_BLOB: {
            const void *p = sqlite3_value_blob(argv[i]);
            int n = sqlite3_value_bytes(argv[i]);
            uint32_t len = (uint32_t)n;
            h = fnv(h, (const unsigned char *)&len, sizeof len);
            if (p != NULL) h = fnv(h, (const unsigned char *)p, (size_t)n);
            break;
        }
        default:
            break;
        }
    }
    return mix(h);
}

/* usm_idhash(v1, v2, ...): a 64-bit hash of a list of values, equal for two lists whose values are
   equal one by one under `IS` (the equality `usm_idkey` encodes): an INTEGER and a REAL holding the
   same integer hash alike (1 and 1.0, 0 and -0.0), TEXT and BLOB by their bytes, apart by type.
   Equal hashes say nothing: callers compare the values of objects whose hashes meet. */
static uint64_t id_hash(int argc, sqlite3_value **argv) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < argc; i++) {
        unsigned char tag;
        switch (sqlite3_value_type(argv[i])) {
        case SQLITE_INTEGER: {
            sqlite3_int64 v = sqlite3_value_int64(argv[i]);
            tag = 1;
            h = fnv(h, &tag, 1);
            h = fnv(h, (const unsigned char *)&v, sizeof v);
            break;
        }
        case SQLITE_FLOAT: {
            double d = sqlite3_value_double(argv[i]);
            /* -2^63 <= d < 2^63, integral: the doubles an int64 holds (usm_idkey's rule). */
            if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && (double)(sqlite3_int64)d == d) {
                sqlite3_int64 v = (sqlite3_int64)d;
                tag = 1;
                h = fnv(h, &tag, 1);
                h = fnv(h, (const unsigned char *)&v, sizeof v);
            } else {
                tag = 2;
                h = fnv(h, &tag, 1);
                h = fnv(h, (const unsigned char *)&d, sizeof d);
            }
            break;
        }
        case SQLITE_TEXT:
        case SQLITE_BLOB: {
            tag = sqlite3_value_type(argv[i]) == SQLITE_TEXT ? 3 : 4;
            /* The bytes as stored, as usm_idkey reads them (no conversion of TEXT). */
            const void *p = sqlite3_value_blob(argv[i]);
            int n = sqlite3_value_bytes(argv[i]);
            uint32_t len = (uint32_t)n;
            h = fnv(h, &tag, 1);
            h = fnv(h, (const unsigned char *)&len, sizeof len);
            if (p != NULL) h = fnv(h, (const unsigned char *)p, (size_t)n);
            break;
        }
        default:
            tag = 0;
            h = fnv(h, &tag, 1);
            break;
        }
    }
    return mix(h);
}

static void idhash_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    sqlite3_result_int64(ctx, (sqlite3_int64)id_hash(argc, argv));
}

static void digest_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    uint64_t *acc = (uint64_t *)sqlite3_aggregate_context(ctx, 2 * sizeof(uint64_t));
    if (acc == NULL) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    acc[0] += row_hash(argc, argv);
    acc[1] += 1;
}

static void rowhash_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    sqlite3_result_int64(ctx, (sqlite3_int64)row_hash(argc, argv));
}

/* usm_digest_slots(slot, slots, v1, v2, ...): usm_digest for `slots` groups at once, in one scan
   and without sorting: a row adds its hash to group `slot` (0 ..< slots; NULL or out of range:
   the row is left out). Returns a BLOB of `slots` pairs (row count, wrapping hash sum), 64-bit
   each in the host's byte order, or NULL when no row was read. Groups are a table's entities
   (Z_ENT): GROUP BY Z_ENT would look every row up through the Z_ENT index or sort whole rows. */
#define USM_MAX_SLOTS 65536
static void digest_slots_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    if (argc < 2) {
        sqlite3_result_error(ctx, "usm_digest_slots takes a slot, a number of slots and values", -1);
        return;
    }
    sqlite3_int64 slots = sqlite3_value_int64(argv[1]);
    if (slots < 1 || slots > USM_MAX_SLOTS) {
        sqlite3_result_error(ctx, "usm_digest_slots: the number of slots is out of range", -1);
        return;
    }
    uint64_t *acc = (uint64_t *)sqlite3_aggregate_context(ctx, (int)((1 + 2 * slots) * sizeof(uint64_t)));
    if (acc == NULL) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    if (acc[0] == 0) acc[0] = (uint64_t)slots;
    if ((sqlite3_int64)acc[0] != slots) {
        sqlite3_result_error(ctx, "usm_digest_slots: the number of slots changed", -1);
        return;
    }
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) return;
    sqlite3_int64 slot = sqlite3_value_int64(argv[0]);
    if (slot < 0 || slot >= slots) return;
    acc[1 + 2 * slot] += 1;
    acc[2 + 2 * slot] += row_hash(argc - 2, argv + 2);
}

static void digest_slots_final(sqlite3_context *ctx) {
    uint64_t *acc = (uint64_t *)sqlite3_aggregate_context(ctx, 0);
    if (acc == NULL || acc[0] == 0) {
        sqlite3_result_null(ctx);
        return;
    }
    sqlite3_result_blob(ctx, acc + 1, (int)(2 * acc[0] * sizeof(uint64_t)), SQLITE_TRANSIENT);
}

static void digest_final(sqlite3_context *ctx) {
    uint64_t *acc = (uint64_t *)sqlite3_aggregate_context(ctx, 0);
    sqlite3_result_int64(ctx, acc == NULL ? 0 : (sqlite3_int64)acc[0]);
}

/* usm_valuehash(table, column, rowid): a hash of one large BLOB read through SQLite's incremental
   BLOB I/O in 64 KiB pieces, so that a value of hundreds of megabytes is never held whole (passing
   it to usm_digest would make SQLite read it into memory first). The digest's SQL calls it only for
   a BLOB longer than its threshold (typeof() and length() of a BLOB column do not read the value),
   the same for the two stores compared, so equal values still hash equal. Returns the hash as an
   8-byte BLOB (an INTEGER could equal a small value of the column). */
static void valuehash_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *table = (const char *)sqlite3_value_text(argv[0]);
    const char *column = (const char *)sqlite3_value_text(argv[1]);
    sqlite3_int64 rowid = sqlite3_value_int64(argv[2]);
    if (table == NULL || column == NULL) {
        sqlite3_result_error(ctx, "usm_valuehash: no table or column", -1);
        return;
    }
    sqlite3_blob *blob = NULL;
    int rc = sqlite3_blob_open(sqlite3_context_db_handle(ctx), "main", table, column, rowid, 0, &blob);
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        if (blob != NULL) sqlite3_blob_close(blob);
        return;
    }
    int size = sqlite3_blob_bytes(blob);
    uint32_t len = (uint32_t)size;
    uint64_t h = fnv(0xcbf29ce484222325ULL, (const unsigned char *)&len, sizeof len);
    unsigned char piece[65536];
    for (int offset = 0; offset < size;) {
        int n = size - offset < (int)sizeof piece ? size - offset : (int)sizeof piece;
        rc = sqlite3_blob_read(blob, piece, n, offset);
        if (rc != SQLITE_OK) {
            sqlite3_blob_close(blob);
            sqlite3_result_error_code(ctx, rc);
            return;
        }
        h = fnv(h, piece, (size_t)n);
        offset += n;
    }
    sqlite3_blob_close(blob);
    uint64_t out = mix(h);
    sqlite3_result_blob(ctx, &out, sizeof out, SQLITE_TRANSIENT);
}

/* ---- SHA-256 (FIPS 180-4), for usm_valueid: object identity must not be forgeable by a
   stranger's store (two different large values of equal FNV hash would make two objects one). */

struct usm_sha256 {
    uint32_t h[8];
    unsigned char buf[64];
    uint64_t bytes;
    size_t used;
};

static const uint32_t usm_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define USM_ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void usm_sha256_block(struct usm_sha256 *s, const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
               (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = USM_ROR(w[i - 15], 7) ^ USM_ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = USM_ROR(w[i - 2], 17) ^ USM_ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6],
             h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (USM_ROR(e, 6) ^ USM_ROR(e, 11) ^ USM_ROR(e, 25)) + ((e & f) ^ (~e & g)) + usm_k[i] + w[i];
        uint32_t t2 = (USM_ROR(a, 2) ^ USM_ROR(a, 13) ^ USM_ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
    s->h[5] += f;
    s->h[6] += g;
    s->h[7] += h;
}

static void usm_sha256_init(struct usm_sha256 *s) {
    static const uint32_t init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, init, sizeof init);
    s->bytes = 0;
    s->used = 0;
}

static void usm_sha256_update(struct usm_sha256 *s, const unsigned char *p, size_t n) {
    s->bytes += n;
    while (n > 0) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->buf + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == 64) {
            usm_sha256_block(s, s->buf);
            s->used = 0;
        }
    }
}

static void usm_sha256_final(struct usm_sha256 *s, unsigned char out[32]) {
    uint64_t bits = s->bytes * 8;
    unsigned char pad = 0x80, zero = 0;
    usm_sha256_update(s, &pad, 1);
    while (s->used != 56) usm_sha256_update(s, &zero, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    usm_sha256_update(s, len, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void usm_sha256(const void *data, size_t count, unsigned char out[32]) {
    struct usm_sha256 s;
    usm_sha256_init(&s);
    usm_sha256_update(&s, (const unsigned char *)data, count);
    usm_sha256_final(&s, out);
}

/* usm_valueid(schema, table, column, rowid): the SHA-256 of one value's bytes (a TEXT value's in
   the database's encoding, as a BLOB's), read through incremental BLOB I/O in 64 KiB pieces. Object
   identity orders and compares large values by it (with their storage class and length beside it)
   instead of sorting values of hundreds of megabytes whole. Returns a 32-byte BLOB. */
static void valueid_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *schema = (const char *)sqlite3_value_text(argv[0]);
    const char *table = (const char *)sqlite3_value_text(argv[1]);
    const char *column = (const char *)sqlite3_value_text(argv[2]);
    sqlite3_int64 rowid = sqlite3_value_int64(argv[3]);
    if (schema == NULL || table == NULL || column == NULL) {
        sqlite3_result_error(ctx, "usm_valueid: no schema, table or column", -1);
        return;
    }
    sqlite3_blob *blob = NULL;
    int rc = sqlite3_blob_open(sqlite3_context_db_handle(ctx), schema, table, column, rowid, 0, &blob);
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        if (blob != NULL) sqlite3_blob_close(blob);
        return;
    }
    int size = sqlite3_blob_bytes(blob);
    struct usm_sha256 s;
    usm_sha256_init(&s);
    unsigned char piece[65536];
    for (int offset = 0; offset < size;) {
        int n = size - offset < (int)sizeof piece ? size - offset : (int)sizeof piece;
        rc = sqlite3_blob_read(blob, piece, n, offset);
        if (rc != SQLITE_OK) {
            sqlite3_blob_close(blob);
            sqlite3_result_error_code(ctx, rc);
            return;
        }
        usm_sha256_update(&s, piece, (size_t)n);
        offset += n;
    }
    sqlite3_blob_close(blob);
    unsigned char out[32];
    usm_sha256_final(&s, out);
    sqlite3_result_blob(ctx, out, sizeof out, SQLITE_TRANSIENT);
}

int usm_register_digest(void *connection) {
    int rc = sqlite3_create_function_v2((sqlite3 *)connection, "usm_digest", -1,
                                        SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
                                        digest_step, digest_final, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_create_function_v2((sqlite3 *)connection, "usm_digest_slots", -1,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
                                    digest_slots_step, digest_slots_final, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_create_function_v2((sqlite3 *)connection, "usm_idhash", -1,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, idhash_func, NULL,
                                    NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_create_function_v2((sqlite3 *)connection, "usm_rowhash", -1,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, rowhash_func,
                                    NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_create_function_v2((sqlite3 *)connection, "usm_valuehash", 3, SQLITE_UTF8, NULL,
                                    valuehash_func, NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    return sqlite3_create_function_v2((sqlite3 *)connection, "usm_valueid", 4, SQLITE_UTF8, NULL, valueid_func, NULL,
                                      NULL, NULL);
}

int usm_parameter_count(void *statement) {
    return sqlite3_bind_parameter_count((sqlite3_stmt *)statement);
}

const char *usm_parameter_name(void *statement, int index) {
    return sqlite3_bind_parameter_name((sqlite3_stmt *)statement, index);
}

/* ---- Untrusted database files ---- */

struct usm_budget {
    long long budget;
    long long used;
    int exhausted;
};

#define USM_PROGRESS_STEP 1000

static int usm_progress(void *arg) {
    struct usm_budget *b = (struct usm_budget *)arg;
    b->used += USM_PROGRESS_STEP;
    if (b->budget > 0 && b->used > b->budget) {
        b->exhausted = 1;
        return 1;
    }
    return 0;
}

/* Never called: a function that holds the budget so SQLite frees it when the connection closes. */
static void usm_budget_holder(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    struct usm_budget *b = (struct usm_budget *)sqlite3_user_data(context);
    sqlite3_result_int(context, b->exhausted);
}

int usm_untrusted(void *connection, long long budget, int max_length) {
    sqlite3 *db = (sqlite3 *)connection;
    int rc, on = 0;
    rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, &on);
    if (rc != SQLITE_OK) return rc;
    if (!on) return SQLITE_ERROR;
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
    rc = sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &on);
    if (rc != SQLITE_OK) return rc;
    if (on) return SQLITE_ERROR;
#endif
    rc = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &on);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 1, &on);
    if (rc != SQLITE_OK) return rc;
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
    if (max_length > 0) sqlite3_limit(db, SQLITE_LIMIT_LENGTH, max_length);
    sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 4 * 1024 * 1024);
    sqlite3_limit(db, SQLITE_LIMIT_COLUMN, 2000);
    sqlite3_limit(db, SQLITE_LIMIT_EXPR_DEPTH, 500);
    sqlite3_limit(db, SQLITE_LIMIT_VDBE_OP, 250000);
    sqlite3_limit(db, SQLITE_LIMIT_FUNCTION_ARG, 127);
    sqlite3_limit(db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 100);
    sqlite3_limit(db, SQLITE_LIMIT_VARIABLE_NUMBER, 32766);
    sqlite3_limit(db, SQLITE_LIMIT_TRIGGER_DEPTH, 10);
    if (budget > 0) {
        struct usm_budget *b = sqlite3_malloc(sizeof *b);
        if (!b) return SQLITE_NOMEM;
        b->budget = budget;
        b->used = 0;
        b->exhausted = 0;
        rc = sqlite3_create_function_v2(db, "usm_budget_exhausted", 0, SQLITE_UTF8, b, usm_budget_holder, 0, 0,
                                        sqlite3_free);
        if (rc != SQLITE_OK) {
            sqlite3_free(b);
            return rc;
        }
        sqlite3_progress_handler(db, USM_PROGRESS_STEP, usm_progress, b);
    }
    return SQLITE_OK;
}

int usm_budget_exhausted(void *connection) {
    sqlite3_stmt *statement = 0;
    int exhausted = 0;
    sqlite3 *db = (sqlite3 *)connection;
    /* Read through the holder function: its few VM steps stay below the progress handler's
       period, so it runs even once the budget is spent. */
    if (sqlite3_prepare_v2(db, "SELECT usm_budget_exhausted()", -1, &statement, 0) == SQLITE_OK &&
        sqlite3_step(statement) == SQLITE_ROW)
        exhausted = sqlite3_column_int(statement, 0);
    sqlite3_finalize(statement);
    return exhausted;
}

void usm_allow_attach(void *connection, int count) {
    /* `count` more databases than are attached now (0: none more). Schemas 0 and 1 are main and
       temp; the tool's own attaches come after them. */
    sqlite3 *db = (sqlite3 *)connection;
    int attached = 0;
    while (sqlite3_db_name(db, attached + 2) != 0) attached++;
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, count > 0 ? attached + count : 0);
}
