/*
 * file.c -- the audit log's file, rotated as kube-apiserver's lumberjack
 * rotates it (--audit-log-maxsize, -maxbackup, -maxage): a write that would
 * take the file past its size first renames it to NAME-<UTC time>EXT and
 * starts a new one; then the backups beyond the count, and those older
 * than the age (by the time in their names), are removed. "-" is standard
 * output, never rotated.
 *
 * One writer (the log's thread): no locking.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apiserver/audit/audit.h"
#include "lib/err.h"

#define DEFAULT_MAX_BYTES ((size_t)100 << 20) /* lumberjack's 100 MB */
#define STAMP_LEN         23                  /* 2006-01-02T15-04-05.000 */
#define BACKUPS_SCAN_MAX  100000              /* directory entries looked at */

struct api_audit_file {
    char *path;
    char *dir, *prefix, *ext; /* dir/prefix-<stamp>ext are its backups */
    size_t max;
    int backups, age_days;
    int fd;
    int is_stdout;
    size_t size;
};

/* filepath.Ext of the base name: from its last '.', "" when none. */
static const char *ext_of(const char *base)
{
    const char *dot = strrchr(base, '.');
    return dot ? dot : base + strlen(base);
}

static void stamp(int64_t ns, char out[STAMP_LEN + 1])
{
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char t[64];
    size_t n = strftime(t, sizeof t, "%Y-%m-%dT%H-%M-%S", &tm);
    snprintf(t + n, sizeof t - n, ".%03d", (int)(ns % 1000000000 / 1000000));
    memcpy(out, t, STAMP_LEN); /* (a year past 9999 is cut) */
    out[STAMP_LEN] = '\0';
}

void api_audit_backup_name(const char *path, int64_t now_ns, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *ext = ext_of(base);
    char t[STAMP_LEN + 1];
    stamp(now_ns, t);
    snprintf(out, len, "%.*s-%s%s", (int)(ext - path), path, t, ext);
}

/* The time in a backup's name (its stamp), or -1 when `name` is none of
 * ours. */
static int64_t backup_time(const api_audit_file_t *f, const char *name)
{
    size_t pl = strlen(f->prefix), el = strlen(f->ext), n = strlen(name);
    if (n != pl + 1 + STAMP_LEN + el || strncmp(name, f->prefix, pl) || name[pl] != '-' ||
        strcmp(name + n - el, f->ext))
        return -1;
    const char *t = name + pl + 1;
    int y, mo, d, h, mi, s, ms;
    char tail;
    if (sscanf(t, "%4d-%2d-%2dT%2d-%2d-%2d.%3d%c", &y, &mo, &d, &h, &mi, &s, &ms, &tail) < 7)
        return -1;
    for (size_t i = 0; i < STAMP_LEN; i++) /* digits where the layout has them */
        if ((t[i] >= '0' && t[i] <= '9') !=
            !(i == 4 || i == 7 || i == 10 || i == 13 || i == 16 || i == 19))
            return -1;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = s};
    time_t secs = timegm(&tm);
    if (secs == (time_t)-1) return -1;
    return (int64_t)secs * 1000000000 + (int64_t)ms * 1000000;
}

typedef struct backup {
    char *name;
    int64_t t;
} backup_t;

static int newest_first(const void *a, const void *b)
{
    const backup_t *x = a, *y = b;
    return x->t < y->t ? 1 : x->t > y->t ? -1 : strcmp(y->name, x->name);
}

/* lumberjack's millRunOnce: keep the newest `backups`, none older than
 * the age. */
static void mill(api_audit_file_t *f, int64_t now_ns)
{
    if (f->is_stdout || (!f->backups && !f->age_days)) return;
    DIR *d = opendir(f->dir);
    if (!d) return;
    backup_t *v = NULL;
    size_t n = 0, cap = 0, seen = 0;
    struct dirent *e;
    while ((e = readdir(d)) && seen++ < BACKUPS_SCAN_MAX) {
        int64_t t = backup_time(f, e->d_name);
        if (t < 0) continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            backup_t *nv = realloc(v, nc * sizeof *v);
            if (!nv) break;
            v = nv, cap = nc;
        }
        if (!(v[n].name = strdup(e->d_name))) break;
        v[n++].t = t;
    }
    closedir(d);
    if (n) qsort(v, n, sizeof *v, newest_first);
    int64_t cutoff = now_ns - (int64_t)f->age_days * 86400 * 1000000000;
    for (size_t i = 0; i < n; i++) {
        if ((f->backups && i >= (size_t)f->backups) || (f->age_days && v[i].t < cutoff)) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", f->dir, v[i].name);
            unlink(p);
        }
        free(v[i].name);
    }
    free(v);
}

/* mkdir -p (0755, as lumberjack's MkdirAll). */
static int make_dirs(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0755) && errno != EEXIST) return -1;
        *s = '/';
    }
    return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

static int open_file(api_audit_file_t *f, int flags, mode_t mode)
{
    f->fd = open(f->path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, mode);
    if (f->fd < 0) return KP_EIO;
    struct stat st;
    f->size = fstat(f->fd, &st) ? 0 : (size_t)st.st_size;
    return 0;
}

void api_audit_file_close(api_audit_file_t *f)
{
    if (!f) return;
    if (!f->is_stdout && f->fd >= 0) close(f->fd);
    free(f->path);
    free(f->dir);
    free(f->prefix);
    free(f->ext);
    free(f);
}

int api_audit_file_open(const api_audit_file_opts_t *o, int64_t now_ns, api_audit_file_t **out,
                        char *err, size_t errlen)
{
    *out = NULL;
    api_audit_file_t *f = calloc(1, sizeof *f);
    if (!f) return KP_ENOMEM;
    f->fd = -1;
    f->max = o->max_bytes ? o->max_bytes : DEFAULT_MAX_BYTES;
    f->backups = o->max_backups > 0 ? o->max_backups : 0;
    f->age_days = o->max_age_days > 0 ? o->max_age_days : 0;
    if (!strcmp(o->path, "-")) {
        f->is_stdout = 1;
        f->fd = STDOUT_FILENO;
        *out = f;
        return 0;
    }
    const char *slash = strrchr(o->path, '/');
    const char *base = slash ? slash + 1 : o->path;
    const char *ext = ext_of(base);
    f->path = strdup(o->path);
    f->dir =
        slash ? strndup(o->path, slash == o->path ? 1 : (size_t)(slash - o->path)) : strdup(".");
    f->prefix = strndup(base, (size_t)(ext - base));
    f->ext = strdup(ext);
    if (!f->path || !f->dir || !f->prefix || !f->ext) {
        api_audit_file_close(f);
        return KP_ENOMEM;
    }
    if (!*base) {
        snprintf(err, errlen, "%s: names a directory, not a file", o->path);
        api_audit_file_close(f);
        return KP_EIO;
    }
    mill(f, now_ns);
    if (make_dirs(f->dir) || open_file(f, O_APPEND, 0600)) {
        snprintf(err, errlen, "%s: %s", o->path, strerror(errno));
        api_audit_file_close(f);
        return KP_EIO;
    }
    *out = f;
    return 0;
}

/* Rename the file to a backup and start a new one with its mode. */
static int rotate(api_audit_file_t *f, int64_t now_ns)
{
    struct stat st;
    mode_t mode = fstat(f->fd, &st) ? 0600 : (st.st_mode & 07777);
    close(f->fd);
    f->fd = -1;
    char name[4096];
    /* Two rotations within a millisecond: the next free name (lumberjack
     * would overwrite the first). */
    for (int i = 0; i < 1000; i++) {
        api_audit_backup_name(f->path, now_ns + (int64_t)i * 1000000, name, sizeof name);
        if (access(name, F_OK)) break;
    }
    if (rename(f->path, name) && errno != ENOENT) return KP_EIO;
    if (make_dirs(f->dir) || open_file(f, O_TRUNC, mode)) return KP_EIO;
    fchmod(f->fd, mode); /* (the umask narrowed it) */
    mill(f, now_ns);
    return 0;
}

size_t api_audit_file_room(const api_audit_file_t *f)
{
    return f->is_stdout ? SIZE_MAX : f->size < f->max ? f->max - f->size : 0;
}

int api_audit_file_write(api_audit_file_t *f, const void *p, size_t n, int64_t now_ns)
{
    if (!f->is_stdout) {
        if (n > f->max) return KP_ETOOLARGE;
        if (f->fd < 0 && open_file(f, O_APPEND, 0600)) return KP_EIO; /* a failed rotation */
        if (f->size + n > f->max && rotate(f, now_ns)) return KP_EIO;
    }
    const char *b = p;
    for (size_t done = 0; done < n;) {
        ssize_t w = write(f->fd, b + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return KP_EIO;
        done += (size_t)w;
        f->size += (size_t)w;
    }
    return 0;
}
