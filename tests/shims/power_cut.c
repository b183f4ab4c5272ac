/* An LD_PRELOAD shim for the power-cut test: it keeps, beside the real
 * files under $RAFTFS_SHIM_DURABLE_ROOT, a copy of what a disk would still
 * hold after a power cut: for each file, its bytes as of its last fsync or
 * fdatasync, under the same relative path in $RAFTFS_SHIM_DURABLE_SHADOW.
 * The test kills every process (SIGKILL), replaces the real directories
 * with the shadow ones, and restarts: everything not fsynced is gone.
 *
 * How: writes (write, pwrite, writev, pwritev, ftruncate) mark the lowest
 * offset of their file (by inode) changed since its last sync; fsync and
 * fdatasync copy the file from that offset to its end into the shadow and
 * cut the shadow to the file's length (a file the shadow lacks is copied
 * whole). rename, link, unlink and rmdir under the root do the same to the
 * shadow (a hard link of a synced file is as durable as the file), so a
 * name is as durable as the content last synced under it (a directory
 * fsync is not needed: lenient about directory entries, strict about
 * content). Not modelled: mmap writes, O_SYNC/O_DSYNC opens, sync(2),
 * syncfs(2), copy_file_range and sendfile into files (the processes tested
 * use none of them for their data). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define DIRTY_SLOTS 65536
#define COPY_CHUNK (1 << 20)

struct dirty {
    dev_t dev;
    ino_t ino;
    off_t from; /* lowest offset changed since the last sync */
    int used;
};

static struct dirty table[DIRTY_SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Set while the shim itself writes the shadow, so it does not track that. */
static __thread int inside;

#define REAL(ret, name, args)                                       \
    static ret(*real_##name) args;                                  \
    static void load_##name(void) {                                 \
        if (real_##name == NULL) {                                  \
            real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);     \
        }                                                           \
    }

REAL(ssize_t, write, (int, const void *, size_t))
REAL(ssize_t, pwrite, (int, const void *, size_t, off_t))
REAL(ssize_t, pwrite64, (int, const void *, size_t, off_t))
REAL(ssize_t, writev, (int, const struct iovec *, int))
REAL(ssize_t, pwritev, (int, const struct iovec *, int, off_t))
REAL(ssize_t, pwritev64, (int, const struct iovec *, int, off_t))
REAL(int, ftruncate, (int, off_t))
REAL(int, ftruncate64, (int, off_t))
REAL(int, fsync, (int))
REAL(int, fdatasync, (int))
REAL(int, rename, (const char *, const char *))
REAL(int, renameat, (int, const char *, int, const char *))
REAL(int, unlink, (const char *))
REAL(int, unlinkat, (int, const char *, int))
REAL(int, link, (const char *, const char *))
REAL(int, linkat, (int, const char *, int, const char *, int))
REAL(int, rmdir, (const char *))

static const char *root(void) { return getenv("RAFTFS_SHIM_DURABLE_ROOT"); }
static const char *shadow(void) { return getenv("RAFTFS_SHIM_DURABLE_SHADOW"); }

/* The slot of (dev, ino), claimed if `claim`; NULL when absent or full. */
static struct dirty *slot(dev_t dev, ino_t ino, int claim) {
    size_t h = ((size_t)ino * 2654435761u + (size_t)dev) % DIRTY_SLOTS;
    for (size_t i = 0; i < DIRTY_SLOTS; i++) {
        struct dirty *d = &table[(h + i) % DIRTY_SLOTS];
        if (d->used && d->dev == dev && d->ino == ino) {
            return d;
        }
        if (!d->used) {
            if (!claim) {
                return NULL;
            }
            d->used = 1;
            d->dev = dev;
            d->ino = ino;
            d->from = -1;
            return d;
        }
    }
    return NULL;
}

/* A write to `fd` changed bytes from `from` on. */
static void mark(int fd, off_t from) {
    struct stat st;
    if (inside || root() == NULL || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        return;
    }
    pthread_mutex_lock(&lock);
    struct dirty *d = slot(st.st_dev, st.st_ino, 1);
    if (d != NULL && (d->from < 0 || from < d->from)) {
        d->from = from < 0 ? 0 : from;
    }
    pthread_mutex_unlock(&lock);
}

/* The shadow path of `path` if it lies under the root, into `out`. */
static int shadow_of(const char *path, char *out, size_t n) {
    const char *r = root(), *s = shadow();
    size_t rl;
    if (r == NULL || s == NULL || path == NULL || path[0] != '/') {
        return 0;
    }
    rl = strlen(r);
    if (strncmp(path, r, rl) != 0 || (path[rl] != '/' && path[rl] != '\0')) {
        return 0;
    }
    return snprintf(out, n, "%s%s", s, path + rl) < (int)n;
}

static void mkdirs_for(const char *file) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", file);
    for (char *p = dir + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    }
}

/* fsync/fdatasync of `fd` succeeded: bring its shadow copy up to date. */
static void persist(int fd) {
    char link[64], path[PATH_MAX], dest[PATH_MAX];
    struct stat st, sst;
    ssize_t n;
    off_t from = 0;
    if (inside || root() == NULL) {
        return;
    }
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n <= 0) {
        return;
    }
    path[n] = '\0';
    if (!shadow_of(path, dest, sizeof dest)) {
        return;
    }
    /* The size is taken under the lock: a write that lands after it marks
     * its file only once this copy is done, so its mark is not lost. */
    pthread_mutex_lock(&lock);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        pthread_mutex_unlock(&lock);
        return;
    }
    struct dirty *d = slot(st.st_dev, st.st_ino, 0);
    int have = stat(dest, &sst) == 0;
    if (have) {
        from = d == NULL || d->from < 0 ? st.st_size : d->from;
    }
    inside = 1;
    mkdirs_for(dest);
    /* Read through a descriptor of its own: `fd` may be write-only. */
    int in = open(link, O_RDONLY | O_CLOEXEC);
    int out = open(dest, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (in >= 0 && out >= 0) {
        char *buf = malloc(COPY_CHUNK);
        off_t at = from;
        while (buf != NULL && at < st.st_size) {
            ssize_t got = pread(in, buf, COPY_CHUNK, at);
            if (got <= 0) {
                break;
            }
            load_pwrite();
            if (real_pwrite(out, buf, (size_t)got, at) != got) {
                break;
            }
            at += got;
        }
        free(buf);
        load_ftruncate();
        real_ftruncate(out, st.st_size);
    }
    if (in >= 0) {
        close(in);
    }
    if (out >= 0) {
        close(out);
    }
    inside = 0;
    if (d != NULL) {
        d->from = -1;
    }
    pthread_mutex_unlock(&lock);
}

/* Each write marks its file after the real call, so that an fsync racing
 * with it (RocksDB syncs its WAL from another thread) either copies the
 * bytes already or leaves them marked for the next one. */
ssize_t write(int fd, const void *b, size_t n) {
    load_write();
    off_t at = lseek(fd, 0, SEEK_CUR);
    ssize_t r = real_write(fd, b, n);
    mark(fd, at);
    return r;
}

ssize_t pwrite(int fd, const void *b, size_t n, off_t off) {
    load_pwrite();
    ssize_t r = real_pwrite(fd, b, n, off);
    mark(fd, off);
    return r;
}

ssize_t pwrite64(int fd, const void *b, size_t n, off_t off) {
    load_pwrite64();
    ssize_t r = real_pwrite64(fd, b, n, off);
    mark(fd, off);
    return r;
}

ssize_t writev(int fd, const struct iovec *v, int c) {
    load_writev();
    off_t at = lseek(fd, 0, SEEK_CUR);
    ssize_t r = real_writev(fd, v, c);
    mark(fd, at);
    return r;
}

ssize_t pwritev(int fd, const struct iovec *v, int c, off_t off) {
    load_pwritev();
    ssize_t r = real_pwritev(fd, v, c, off);
    mark(fd, off);
    return r;
}

ssize_t pwritev64(int fd, const struct iovec *v, int c, off_t off) {
    load_pwritev64();
    ssize_t r = real_pwritev64(fd, v, c, off);
    mark(fd, off);
    return r;
}

int ftruncate(int fd, off_t len) {
    load_ftruncate();
    int r = real_ftruncate(fd, len);
    mark(fd, len);
    return r;
}

int ftruncate64(int fd, off_t len) {
    load_ftruncate64();
    int r = real_ftruncate64(fd, len);
    mark(fd, len);
    return r;
}

int fsync(int fd) {
    load_fsync();
    int r = real_fsync(fd);
    if (r == 0) {
        persist(fd);
    }
    return r;
}

int fdatasync(int fd) {
    load_fdatasync();
    int r = real_fdatasync(fd);
    if (r == 0) {
        persist(fd);
    }
    return r;
}

/* An absolute path for `path` relative to `dirfd`, into `out`. */
static int absolute(int dirfd, const char *path, char *out, size_t n) {
    char link[64], dir[PATH_MAX];
    ssize_t len;
    if (path[0] == '/') {
        return snprintf(out, n, "%s", path) < (int)n;
    }
    if (dirfd == AT_FDCWD) {
        if (getcwd(dir, sizeof dir) == NULL) {
            return 0;
        }
    } else {
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        len = readlink(link, dir, sizeof dir - 1);
        if (len <= 0) {
            return 0;
        }
        dir[len] = '\0';
    }
    return snprintf(out, n, "%s/%s", dir, path) < (int)n;
}

static void shadow_rename(int olddir, const char *old, int newdir, const char *new) {
    char a[PATH_MAX], b[PATH_MAX], sa[PATH_MAX], sb[PATH_MAX];
    if (!absolute(olddir, old, a, sizeof a) || !absolute(newdir, new, b, sizeof b)) {
        return;
    }
    if (shadow_of(a, sa, sizeof sa) && shadow_of(b, sb, sizeof sb)) {
        pthread_mutex_lock(&lock);
        load_rename();
        mkdirs_for(sb);
        real_rename(sa, sb);
        pthread_mutex_unlock(&lock);
    }
}

static void shadow_link(int olddir, const char *old, int newdir, const char *new) {
    char a[PATH_MAX], b[PATH_MAX], sa[PATH_MAX], sb[PATH_MAX];
    if (!absolute(olddir, old, a, sizeof a) || !absolute(newdir, new, b, sizeof b)) {
        return;
    }
    if (shadow_of(a, sa, sizeof sa) && shadow_of(b, sb, sizeof sb)) {
        pthread_mutex_lock(&lock);
        load_link();
        mkdirs_for(sb);
        real_link(sa, sb);
        pthread_mutex_unlock(&lock);
    }
}

static void shadow_unlink(int dirfd, const char *path, int flags) {
    char a[PATH_MAX], sa[PATH_MAX];
    if (absolute(dirfd, path, a, sizeof a) && shadow_of(a, sa, sizeof sa)) {
        pthread_mutex_lock(&lock);
        if (flags & AT_REMOVEDIR) {
            load_rmdir();
            real_rmdir(sa);
        } else {
            load_unlink();
            real_unlink(sa);
        }
        pthread_mutex_unlock(&lock);
    }
}

int rename(const char *old, const char *new) {
    load_rename();
    int r = real_rename(old, new);
    if (r == 0) {
        shadow_rename(AT_FDCWD, old, AT_FDCWD, new);
    }
    return r;
}

int renameat(int olddir, const char *old, int newdir, const char *new) {
    load_renameat();
    int r = real_renameat(olddir, old, newdir, new);
    if (r == 0) {
        shadow_rename(olddir, old, newdir, new);
    }
    return r;
}

int unlink(const char *path) {
    load_unlink();
    int r = real_unlink(path);
    if (r == 0) {
        shadow_unlink(AT_FDCWD, path, 0);
    }
    return r;
}

int unlinkat(int dirfd, const char *path, int flags) {
    load_unlinkat();
    int r = real_unlinkat(dirfd, path, flags);
    if (r == 0) {
        shadow_unlink(dirfd, path, flags);
    }
    return r;
}

int link(const char *old, const char *new) {
    load_link();
    int r = real_link(old, new);
    if (r == 0) {
        shadow_link(AT_FDCWD, old, AT_FDCWD, new);
    }
    return r;
}

int linkat(int olddir, const char *old, int newdir, const char *new, int flags) {
    load_linkat();
    int r = real_linkat(olddir, old, newdir, new, flags);
    if (r == 0) {
        shadow_link(olddir, old, newdir, new);
    }
    return r;
}

int rmdir(const char *path) {
    load_rmdir();
    int r = real_rmdir(path);
    if (r == 0) {
        shadow_unlink(AT_FDCWD, path, AT_REMOVEDIR);
    }
    return r;
}
