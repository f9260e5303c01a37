#define _GNU_SOURCE
#include "csupport.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/syscall.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#endif

int usm_rename_exchange(const char *from, const char *to) {
#if defined(__APPLE__)
    return renamex_np(from, to, RENAME_SWAP);
#elif defined(__linux__) && defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int usm_set_times(const char *path, long long seconds, long nanoseconds) {
    struct timespec times[2];
    times[0].tv_sec = (time_t)seconds;
    times[0].tv_nsec = nanoseconds;
    times[1].tv_sec = (time_t)seconds;
    times[1].tv_nsec = nanoseconds;
    return utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW);
}

void usm_release_freed_memory(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}
