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
#include <fcntl.h>
#include <string.h>
#include <sys/statvfs.h>
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
static atomic_int g_full;
static atomic_long g_full_hits;

void faultio_full(int on)
{
    atomic_store(&g_full, on);
}

long faultio_full_hits(void)
{
    return atomic_load(&g_full_hits);
}

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

/* Full-disk mode: how many of `n` bytes at `off` fit (the file may not
 * grow); n when the mode is off or fd is not a regular file. */
static size_t full_fits(int fd, off_t off, size_t n)
{
    struct stat st;
    if (!atomic_load(&g_full) || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return n;
    if ((off_t)(off + (off_t)n) <= st.st_size) return n;
    atomic_fetch_add(&g_full_hits, 1);
    return off < st.st_size ? (size_t)(st.st_size - off) : 0;
}

static size_t iov_len(const struct iovec *iov, int cnt)
{
    size_t n = 0;
    for (int i = 0; i < cnt; i++) n += iov[i].iov_len;
    return n;
}

#define REAL(name) ((__typeof__(&name))real(&real_##name, #name))
static void *_Atomic real_pwrite, *_Atomic real_pwrite64, *_Atomic real_write, *_Atomic real_writev,
    *_Atomic real_pwritev, *_Atomic real_fsync, *_Atomic real_fdatasync, *_Atomic real_msync,
    *_Atomic real_fallocate, *_Atomic real_fallocate64, *_Atomic real_fstatvfs,
    *_Atomic real_fstatvfs64;

/* Write the first `n` bytes of iov at `off` with the real pwrite (a write
 * that full-disk mode cuts short). */
static ssize_t pwrite_prefix(int fd, const struct iovec *iov, int cnt, off_t off, size_t n)
{
    size_t done = 0;
    for (int i = 0; i < cnt && done < n; i++) {
        size_t len = iov[i].iov_len < n - done ? iov[i].iov_len : n - done;
        ssize_t w = REAL(pwrite)(fd, iov[i].iov_base, len, off + (off_t)done);
        if (w < 0) return done ? (ssize_t)done : -1;
        done += (size_t)w;
        if ((size_t)w < len) break;
    }
    return (ssize_t)done;
}

/* A write cut by full-disk mode: ENOSPC if nothing fits, else the prefix
 * (moving the file offset when `seek`, as write/writev do). */
static ssize_t cut_write(int fd, const struct iovec *iov, int cnt, off_t off, size_t fits, int seek)
{
    if (fits == 0) {
        errno = ENOSPC;
        return -1;
    }
    ssize_t w = pwrite_prefix(fd, iov, cnt, off, fits);
    if (w > 0 && seek) lseek(fd, off + w, SEEK_SET);
    return w;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    int err;
    if (should_fail(FAULTIO_WRITE, fd, &err)) {
        errno = err;
        return -1;
    }
    size_t fits = full_fits(fd, off, n);
    if (fits < n) {
        struct iovec v = {(void *)buf, n};
        return cut_write(fd, &v, 1, off, fits, 0);
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
    size_t fits = full_fits(fd, (off_t)off, n);
    if (fits < n) {
        struct iovec v = {(void *)buf, n};
        return cut_write(fd, &v, 1, (off_t)off, fits, 0);
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
    if (atomic_load(&g_full)) {
        off_t off = lseek(fd, 0, SEEK_CUR);
        size_t fits = off < 0 ? n : full_fits(fd, off, n);
        if (fits < n) {
            struct iovec v = {(void *)buf, n};
            return cut_write(fd, &v, 1, off, fits, 1);
        }
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
    if (atomic_load(&g_full)) {
        off_t off = lseek(fd, 0, SEEK_CUR);
        size_t n = iov_len(iov, cnt), fits = off < 0 ? n : full_fits(fd, off, n);
        if (fits < n) return cut_write(fd, iov, cnt, off, fits, 1);
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
    size_t n = iov_len(iov, cnt), fits = full_fits(fd, off, n);
    if (fits < n) return cut_write(fd, iov, cnt, off, fits, 0);
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

int fallocate(int fd, int mode, off_t off, off_t len)
{
    if (atomic_load(&g_full)) {
        errno = ENOSPC;
        return -1;
    }
    return REAL(fallocate)(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
    if (atomic_load(&g_full)) {
        errno = ENOSPC;
        return -1;
    }
    return REAL(fallocate64)(fd, mode, off, len);
}

int fstatvfs(int fd, struct statvfs *buf)
{
    int rc = REAL(fstatvfs)(fd, buf);
    if (rc == 0 && atomic_load(&g_full)) buf->f_bavail = buf->f_bfree = 0;
    return rc;
}

int fstatvfs64(int fd, struct statvfs64 *buf)
{
    int rc = REAL(fstatvfs64)(fd, buf);
    if (rc == 0 && atomic_load(&g_full)) buf->f_bavail = buf->f_bfree = 0;
    return rc;
}
