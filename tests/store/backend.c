/*
 * backend.c -- see backend.h. The clusters are started and stopped by
 * with-etcd.sh (start DIR / stop DIR), run through the shell.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "testutil.h"

int tb_is_etcd(void)
{
    const char *s = getenv("KP_TEST_ETCD");
    return s && *s;
}

static FILE *script(const char *cmd, const char *dir)
{
    char line[8192];
    snprintf(line, sizeof line, "'%s' %s '%s'", getenv("KP_TEST_ETCD"), cmd, dir);
    return popen(line, "r");
}

char *tb_store_url(const char *dir)
{
    if (!tb_is_etcd()) return tu_lmdb_url(dir);
    FILE *f = script("start", dir);
    char url[256] = "";
    if (!f || !fgets(url, sizeof url, f)) {
        fprintf(stderr, "backend: starting etcd in %s failed\n", dir);
        abort();
    }
    pclose(f);
    url[strcspn(url, "\r\n")] = '\0';
    char *u = strdup(url);
    if (!u || strncmp(u, "etcd://", 7)) abort();
    return u;
}

void tb_store_stop(const char *dir)
{
    if (!tb_is_etcd()) return;
    FILE *f = script("stop", dir);
    if (f) pclose(f);
}

void tb_store_restart(const char *dir)
{
    FILE *f = tb_is_etcd() ? script("restart", dir) : NULL;
    char url[256];
    if (!f || !fgets(url, sizeof url, f)) {
        fprintf(stderr, "backend: restarting etcd in %s failed\n", dir);
        abort();
    }
    pclose(f);
}
