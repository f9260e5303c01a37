#ifndef USM_CDIGEST_H
#define USM_CDIGEST_H

/* Registers the aggregate SQL function usm_digest(v1, v2, ...) on an open sqlite3 connection
   (passed as void * so Swift sees no second sqlite3 type). It hashes each row's values (storage
   class and bytes, 64-bit) and returns the wrapping sum over the rows as an integer: an
   order-independent content digest, equal for two tables holding the same multiset of rows.
   Also registers usm_rowhash(v1, ...), the same per-row hash as a scalar, so tables wider than
   SQLite's 127-argument limit are hashed in chunks, and usm_valuehash(table, column, rowid), the
   hash of one large BLOB read in pieces (never held whole). Returns an SQLite result code. */
int usm_register_digest(void *connection);

/* The number of parameters of a prepared statement and the name of the i-th (1-based; NULL for
   a nameless `?`), so named values can be bound from a dictionary. */
int usm_parameter_count(void *statement);
const char *usm_parameter_name(void *statement, int index);

#endif
