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

int usm_birth_time(int dirfd, const char *path, int flags, long long *seconds, long *nanoseconds) {
#if defined(__linux__) && defined(STATX_BTIME)
    struct statx sx;
    if (!path) { path = ""; flags |= AT_EMPTY_PATH; }
    if (statx(dirfd, path, flags, STATX_BTIME, &sx) != 0) return -1;
    if (!(sx.stx_mask & STATX_BTIME)) { errno = ENOTSUP; return -1; }
    *seconds = sx.stx_btime.tv_sec;
    *nanoseconds = sx.stx_btime.tv_nsec;
    return 0;
#elif defined(__APPLE__)
    struct stat st;
    int r = path ? fstatat(dirfd, path, &st, flags) : fstat(dirfd, &st);
    if (r != 0) return -1;
    *seconds = st.st_birthtimespec.tv_sec;
    *nanoseconds = st.st_birthtimespec.tv_nsec;
    return 0;
#else
    errno = ENOTSUP;
    return -1;
#endif
}

int usm_sync_filesystem(int fd) {
#if defined(__linux__)
    return syncfs(fd);
#else
    (void)fd;
    errno = ENOSYS;
    return -1;
#endif
}

void usm_release_freed_memory(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}
