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

int fsync(int fd) {
    static int (*real)(int);
    if (armed()) {
        errno = EIO;
        return -1;
    }
    if (real == NULL) {
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    }
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (armed()) {
        errno = EIO;
        return -1;
    }
    if (real == NULL) {
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    }
    return real(fd);
}
