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

int usm_register_digest(void *connection) {
    int rc = sqlite3_create_function_v2((sqlite3 *)connection, "usm_digest", -1,
                                        SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
                                        digest_step, digest_final, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_create_function_v2((sqlite3 *)connection, "usm_rowhash", -1,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, rowhash_func,
                                    NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    return sqlite3_create_function_v2((sqlite3 *)connection, "usm_valuehash", 3, SQLITE_UTF8, NULL,
                                      valuehash_func, NULL, NULL, NULL);
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
