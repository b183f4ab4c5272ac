/* An LD_PRELOAD shim for the storage-fault tests: fsync and fdatasync fail
 * with EIO, as a dying disk makes the kernel fail them, while the file
 * $RAFTFS_SHIM_EIO_DIR/eio-<pid> exists (the test arms one process at a
 * time by its pid). Otherwise they are the real calls. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*sync_fn)(int);

static int armed(void) {
    const char *dir = getenv("RAFTFS_SHIM_EIO_DIR");
    char path[4096];
    if (dir == NULL) {
        return 0;
    }
    if (snprintf(path, sizeof path, "%s/eio-%d", dir, (int)getpid()) >= (int)sizeof path) {
        return 0;
    }
    return access(path, F_OK) == 0;
}

/* EIO when armed, else the real `name` (looked up once into `*real`). */
static int fail_or_call(sync_fn *real, const char *name, int fd) {
    if (armed()) {
        errno = EIO;
        return -1;
    }
    if (*real == NULL) {
        *real = (sync_fn)dlsym(RTLD_NEXT, name);
    }
    return (*real)(fd);
}

int fsync(int fd) {
    static sync_fn real;
    return fail_or_call(&real, "fsync", fd);
}

int fdatasync(int fd) {
    static sync_fn real;
    return fail_or_call(&real, "fdatasync", fd);
}
