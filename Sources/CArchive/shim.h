#ifndef USM_CARCHIVE_SHIM_H
#define USM_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>

/* C macros Swift cannot import: re-declared as constants. */
static const unsigned int USM_AE_IFREG = 0100000;
static const unsigned int USM_AE_IFDIR = 0040000;
static const unsigned int USM_AE_IFLNK = 0120000;

/* The libarchive version this binary was built against, as text. */
static inline const char *usm_archive_version(void) { return archive_version_string(); }
#endif
