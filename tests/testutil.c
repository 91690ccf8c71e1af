#include "testutil.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *tu_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    size_t n = strlen(base) + strlen(tag) + 32;
    char *p = malloc(n);
    if (!p) abort();
    snprintf(p, n, "%s/kp-%s-XXXXXX", base, tag);
    if (!mkdtemp(p)) {
        perror("mkdtemp");
        abort();
    }
    return p;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void tu_rmtree(const char *path)
{
    if (path) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_lmdb_url(const char *dir)
{
    size_t n = strlen(dir) + 8;
    char *u = malloc(n);
    if (!u) abort();
    snprintf(u, n, "lmdb:%s", dir);
    return u;
}
