#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

void buf_init(buf_t *b, size_t max)
{
    b->p = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

/* Room for n more bytes and the NUL; exact when `exact`, else doubling. */
static int grow(buf_t *b, size_t n, int exact)
{
    if (n > b->max - b->len) return KP_ETOOLARGE;
    size_t need = b->len + n + 1;
    if (need <= b->cap) return 0;
    size_t cap = exact ? need : b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return KP_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int buf_reserve(buf_t *b, size_t n)
{
    int rc = grow(b, n, 1);
    if (!rc && b->p) b->p[b->len] = '\0';
    return rc;
}

char *buf_detach(buf_t *b, size_t *len)
{
    char *p = b->p;
    *len = b->len;
    buf_init(b, b->max);
    return p;
}

int buf_append(buf_t *b, const void *data, size_t n)
{
    int rc = grow(b, n, 0);
    if (rc) return rc;
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int buf_printf(buf_t *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return KP_EINVAL;
    return buf_append(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void buf_reset(buf_t *b)
{
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

void buf_free(buf_t *b)
{
    free(b->p);
    buf_init(b, b->max);
}

int buf_append_file(buf_t *b, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT || errno == ENOTDIR ? KP_ENOTFOUND : KP_EIO;
    char chunk[8192];
    size_t n;
    int rc = buf_append(b, "", 0);
    while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = buf_append(b, chunk, n);
    if (!rc && ferror(f)) rc = KP_EIO;
    int saved = errno;
    fclose(f);
    errno = saved;
    return rc;
}
