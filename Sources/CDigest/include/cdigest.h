#ifndef USM_CDIGEST_H
#define USM_CDIGEST_H

#include <stddef.h>

/* Registers the aggregate SQL function usm_digest(v1, v2, ...) on an open sqlite3 connection
   (passed as void * so Swift sees no second sqlite3 type). It hashes each row's values (storage
   class and bytes, 64-bit) and returns the wrapping sum over the rows as an integer: an
   order-independent content digest, equal for two tables holding the same multiset of rows.
   Also registers usm_digest_slots(slot, slots, v1, ...), the same digest for `slots` groups in one
   scan (a BLOB of (count, sum) pairs), usm_idhash(v1, ...) (a hash equal for lists equal under
   `IS`, 1 and 1.0 alike), usm_rowhash(v1, ...), the same per-row hash as a scalar, so tables wider than
   SQLite's 127-argument limit are hashed in chunks, and usm_valuehash(table, column, rowid), the
   hash of one large BLOB read in pieces (never held whole), and usm_valueid(schema, table, column,
   rowid), the SHA-256 of one value read in pieces. Returns an SQLite result code. */
int usm_register_digest(void *connection);

/* The SHA-256 of `count` bytes at `data` into `out` (what usm_valueid computes in pieces). */
void usm_sha256(const void *data, size_t count, unsigned char out[32]);

/* The number of parameters of a prepared statement and the name of the i-th (1-based; NULL for
   a nameless `?`), so named values can be bound from a dictionary. */
int usm_parameter_count(void *statement);
const char *usm_parameter_name(void *statement, int index);

/* Applies SQLite's guidance for untrusted database files to an open connection: defensive mode on,
   untrusted schema (no function with side effects in a schema's expressions or views), no
   extension loading, no attached database (ATTACH and VACUUM INTO fail; `usm_allow_attach`
   lifts it for the tool's own attach), limits on lengths, SQL text, columns, expression depth,
   compound selects, LIKE patterns, function arguments, trigger depth and variables, and a
   progress handler ending any statement once the connection has run `budget` VM steps in all
   (0: none). `max_length` bounds a string or BLOB (0 keeps SQLite's). Returns an SQLite result code. */
int usm_untrusted(void *connection, long long budget, int max_length);

/* Whether the connection's step budget ran out (its last interrupted statement was ours). */
int usm_budget_exhausted(void *connection);

/* Lets `connection` attach `count` more databases (0: none again). */
void usm_allow_attach(void *connection, int count);

#endif
