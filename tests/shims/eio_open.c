/* An LD_PRELOAD shim for the storage-fault tests: opening a file under a
 * directory fails with EIO, as it does on a disk that died (the kernel
 * fails the inode read), while the file $RAFTFS_SHIM_EIO_DIR/eio-open-<pid>
 * holds that directory's absolute path (the test arms one process, one
 * volume, at a time). Other opens are the real calls. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

/* Whether `path` is under the armed directory. Reads the arm file with
 * the raw syscall-level functions looked up below, so the shim never
 * recurses into itself. */
static int armed_for(const char *path) {
    static open_fn real_open;
    const char *dir = getenv("RAFTFS_SHIM_EIO_DIR");
    char arm[4096], prefix[4096];
    int fd;
    ssize_t n;
    size_t len;
    if (dir == NULL || path == NULL || path[0] != '/') {
        return 0;
    }
    if (snprintf(arm, sizeof arm, "%s/eio-open-%d", dir, (int)getpid()) >= (int)sizeof arm) {
        return 0;
    }
    if (real_open == NULL) {
        real_open = (open_fn)dlsym(RTLD_NEXT, "open");
    }
    fd = real_open(arm, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    n = read(fd, prefix, sizeof prefix - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    prefix[n] = '\0';
    len = strcspn(prefix, "\n");
    prefix[len] = '\0';
    return len > 0 && strncmp(path, prefix, len) == 0 && (path[len] == '/' || path[len] == '\0');
}

static mode_t mode_of(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define OPEN_SHIM(name)                                                    \
    int name(const char *path, int flags, ...) {                          \
        static open_fn real;                                               \
        va_list ap;                                                        \
        mode_t mode;                                                       \
        va_start(ap, flags);                                               \
        mode = mode_of(flags, ap);                                         \
        va_end(ap);                                                        \
        if (armed_for(path)) {                                             \
            errno = EIO;                                                   \
            return -1;                                                     \
        }                                                                  \
        if (real == NULL) {                                                \
            real = (open_fn)dlsym(RTLD_NEXT, #name);                       \
        }                                                                  \
        return real(path, flags, mode);                                    \
    }

#define OPENAT_SHIM(name)                                                  \
    int name(int dirfd, const char *path, int flags, ...) {               \
        static openat_fn real;                                             \
        va_list ap;                                                        \
        mode_t mode;                                                       \
        va_start(ap, flags);                                               \
        mode = mode_of(flags, ap);                                         \
        va_end(ap);                                                        \
        if (armed_for(path)) {                                             \
            errno = EIO;                                                   \
            return -1;                                                     \
        }                                                                  \
        if (real == NULL) {                                                \
            real = (openat_fn)dlsym(RTLD_NEXT, #name);                     \
        }                                                                  \
        return real(dirfd, path, flags, mode);                             \
    }

OPEN_SHIM(open)
OPEN_SHIM(open64)
OPENAT_SHIM(openat)
OPENAT_SHIM(openat64)
