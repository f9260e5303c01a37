#ifndef USM_CSUPPORT_H
#define USM_CSUPPORT_H

/* Atomically exchanges two existing paths (Linux renameat2 RENAME_EXCHANGE, macOS renamex_np
   RENAME_SWAP). Returns 0 on success, -1 with errno set (EINVAL/ENOSYS where unsupported). */
int usm_rename_exchange(const char *from, const char *to);

/* Renames `from` (relative to the folder `fromdir`) to `to` (relative to `todir`) only when nothing
   is at `to` (Linux renameat2 RENAME_NOREPLACE, macOS renameatx_np RENAME_EXCL): fails with EEXIST
   otherwise, and with EINVAL/ENOSYS where the file system or system cannot promise that. */
int usm_renameat_noreplace(int fromdir, const char *from, int todir, const char *to);

/* Sets a path's access and modification times with nanoseconds, without following a symlink. */
int usm_set_times(const char *path, long long seconds, long nanoseconds);

/* The birth time of `path` relative to `dirfd` (statx STATX_BTIME on Linux; of `dirfd` itself when
   `path` is NULL). Returns 0, or -1 where the file system does not keep it. */
int usm_birth_time(int dirfd, const char *path, int flags, long long *seconds, long *nanoseconds);

/* Flushes every file of the file system holding `fd` to disk (Linux syncfs). Returns 0, or -1 with
   errno ENOSYS where there is no such call (the caller then fsyncs file by file). */
int usm_sync_filesystem(int fd);

/* Returns memory freed with free() to the system where the C library allows it (glibc malloc_trim). */
void usm_release_freed_memory(void);

/* Starts `path` with `argv` and `envp` in a process group of its own, with an empty signal mask and
   default handling of SIGPIPE, SIGXFSZ, SIGTERM and SIGINT, in the folder `cwd`, its stdin and
   stdout the given descriptors, its stderr `stderr_fd` (-1: inherited). Returns 0 and the pid, or an errno value. */
int usm_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd, int stdin_fd, int stdout_fd, int stderr_fd, int *pid);

/* The width in columns of the terminal on `fd` (TIOCGWINSZ), or 0 when `fd` is not a terminal or
   the terminal does not say. */
int usm_terminal_columns(int fd);

/* Removes `count` entries of the open folder `dirfd` that are not folders (files, symlinks as links;
   never following a link) on up to `lanes` threads: a removal that waits on the device (a discard
   on a file system mounted with `discard`, a journal commit) overlaps the others. `results[i]`: 0
   when removed, 1 when the entry is a folder (left for the caller), or the errno value of the failed
   call. Returns 0 (a lane that cannot be started runs on the calling thread). */
int usm_unlink_files(int dirfd, const char *const names[], int count, int lanes, int results[]);

#endif
