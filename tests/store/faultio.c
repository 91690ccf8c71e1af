/*
 * faultio.c -- link-time interposition of the I/O calls LMDB makes; see
 * faultio.h for the contract.
 *
 * liblmdb 0.9 writes pages with pwrite (one page) or lseek + writev (a run of
 * pages), writes the meta page with pwrite (on an O_DSYNC fd unless
 * MDB_NOMETASYNC/MDB_NOSYNC), makes the data durable with fdatasync (msync
 * with MDB_WRITEMAP) and copies an env with write. Each wrapper below asks
 * should_fail() whether it is the armed call; if not it forwards to the next
 * definition in lookup order (libc, or the sanitizer's interceptor first).
 */
#include "faultio.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static atomic_uint g_kinds; /* armed kinds; 0 when disarmed */
static atomic_long g_nth;
static atomic_long g_count;
static atomic_int g_err;

void faultio_arm(unsigned kinds, long nth, int err)
{
    atomic_store(&g_kinds, 0u);
    atomic_store(&g_count, 0);
    atomic_store(&g_nth, nth);
    atomic_store(&g_err, err);
    atomic_store(&g_kinds, kinds);
}

void faultio_disarm(void)
{
    atomic_store(&g_kinds, 0u);
}

long faultio_count(void)
{
    return atomic_load(&g_count);
}

/* The real function `name`; looked up once (a racing second lookup finds the
 * same pointer, so no lock is needed). */
static void *real(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load(slot);
    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        if (!p) {
            fprintf(stderr, "faultio: dlsym(%s) failed\n", name);
            abort();
        }
        atomic_store(slot, p);
    }
    return p;
}

/* 1 if this call is the armed one: it then must fail with errno = *err. */
static int should_fail(unsigned kind, int fd, int *err)
{
    if (!(atomic_load(&g_kinds) & kind)) return 0;
    if (kind == FAULTIO_WRITE) {
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    }
    long n = atomic_fetch_add(&g_count, 1) + 1;
    if (n != atomic_load(&g_nth)) return 0;
    *err = atomic_load(&g_err);
    return 1;
}

#define REAL(name) ((__typeof__(&name))real(&real_##name, #name))
static void *_Atomic real_pwrite, *_Atomic real_pwrite64, *_Atomic real_write, *_Atomic real_writev,
    *_Atomic real_pwritev, *_Atomic real_fsync, *_Atomic real_fdatasync, *_Atomic real_msync;

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    int err;
    if (should_fail(FAULTIO_WRITE, fd, &err)) {
        errno = err;
        return -1;
    }
    return REAL(pwrite)(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    int err;
    if (should_fail(FAULTIO_WRITE, fd, &err)) {
        errno = err;
        return -1;
    }
    return REAL(pwrite64)(fd, buf, n, off);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    int err;
    if (should_fail(FAULTIO_WRITE, fd, &err)) {
        errno = err;
        return -1;
    }
    return REAL(write)(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    int err;
    if (should_fail(FAULTIO_WRITE, fd, &err)) {
        errno = err;
        return -1;
    }
    return REAL(writev)(fd, iov, cnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    int err;
    if (should_fail(FAULTIO_WRITE, fd, &err)) {
        errno = err;
        return -1;
    }
    return REAL(pwritev)(fd, iov, cnt, off);
}

int fsync(int fd)
{
    int err;
    if (should_fail(FAULTIO_SYNC, fd, &err)) {
        errno = err;
        return -1;
    }
    return REAL(fsync)(fd);
}

int fdatasync(int fd)
{
    int err;
    if (should_fail(FAULTIO_SYNC, fd, &err)) {
        errno = err;
        return -1;
    }
    return REAL(fdatasync)(fd);
}

int msync(void *addr, size_t len, int flags)
{
    int err;
    if (should_fail(FAULTIO_SYNC, -1, &err)) {
        errno = err;
        return -1;
    }
    return REAL(msync)(addr, len, flags);
}
