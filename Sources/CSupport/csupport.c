#define _GNU_SOURCE
#include "csupport.h"
#include <pthread.h>
#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/syscall.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
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

int usm_renameat_noreplace(int fromdir, const char *from, int todir, const char *to) {
#if defined(__APPLE__)
    return renameatx_np(fromdir, from, todir, to, RENAME_EXCL);
#elif defined(__linux__) && defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, fromdir, from, todir, to, RENAME_NOREPLACE);
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

int usm_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd, int stdin_fd, int stdout_fd, int stderr_fd, int *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) { posix_spawn_file_actions_destroy(&actions); return rc; }
    posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    if (stdin_fd != 0) posix_spawn_file_actions_addclose(&actions, stdin_fd);
    if (stdout_fd != 1) posix_spawn_file_actions_addclose(&actions, stdout_fd);
    if (stderr_fd >= 0) {
        posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
        if (stderr_fd != 2) posix_spawn_file_actions_addclose(&actions, stderr_fd);
    }
    if (cwd) posix_spawn_file_actions_addchdir_np(&actions, cwd);
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGXFSZ);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    posix_spawnattr_setsigmask(&attributes, &empty);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t child = 0;
    rc = posix_spawn(&child, path, &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (rc == 0) *pid = child;
    return rc;
}

int usm_terminal_columns(int fd) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return 0;
    return (int)size.ws_col;
}

struct usm_unlink_lane {
    int dirfd;
    const char *const *names;
    int count;
    int lane;
    int lanes;
    int *results;
};

static void *usm_unlink_lane_run(void *argument) {
    struct usm_unlink_lane *work = argument;
    for (int i = work->lane; i < work->count; i += work->lanes) {
        struct stat st;
        if (fstatat(work->dirfd, work->names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
            work->results[i] = errno;
        } else if (S_ISDIR(st.st_mode)) {
            work->results[i] = 1;
        } else {
            work->results[i] = unlinkat(work->dirfd, work->names[i], 0) == 0 ? 0 : errno;
        }
    }
    return NULL;
}

int usm_unlink_files(int dirfd, const char *const names[], int count, int lanes, int results[]) {
    if (lanes < 1) lanes = 1;
    if (lanes > count) lanes = count;
    if (lanes <= 1) {
        struct usm_unlink_lane only = {dirfd, names, count, 0, 1, results};
        usm_unlink_lane_run(&only);
        return 0;
    }
    struct usm_unlink_lane *work = calloc((size_t)lanes, sizeof *work);
    pthread_t *threads = calloc((size_t)lanes, sizeof *threads);
    char *started = calloc((size_t)lanes, 1);
    if (work == NULL || threads == NULL || started == NULL) {
        free(work);
        free(threads);
        free(started);
        struct usm_unlink_lane only = {dirfd, names, count, 0, 1, results};
        usm_unlink_lane_run(&only);
        return 0;
    }
    for (int lane = 0; lane < lanes; lane++) {
        work[lane] = (struct usm_unlink_lane){dirfd, names, count, lane, lanes, results};
        started[lane] = lane > 0 && pthread_create(&threads[lane], NULL, usm_unlink_lane_run, &work[lane]) == 0;
    }
    for (int lane = 0; lane < lanes; lane++) {
        if (!started[lane]) usm_unlink_lane_run(&work[lane]);
    }
    for (int lane = 1; lane < lanes; lane++) {
        if (started[lane]) pthread_join(threads[lane], NULL);
    }
    free(work);
    free(threads);
    free(started);
    return 0;
}
