/*
 * health.c -- /livez, /readyz and /healthz, in Kubernetes' format
 * (k8s.io/apiserver/pkg/server/healthz).
 *
 * Each path runs a list of named checks. All pass: 200 "ok", or with
 * ?verbose one line per check ("[+]ping ok") and "<path> check passed". One
 * fails: 500 with every line ("[-]store failed: reason withheld": the root
 * path is public, so the reason is not shown there) and "<path> check
 * failed". /<path>/<check> runs one check: 200 "ok", or 500 "internal server
 * error: <reason>". ?exclude=<check> skips a check ("[+]<check> excluded:
 * ok").
 *
 * The checks: ping (always passes) everywhere; store on /readyz only: the
 * store takes writes (store_health(): for lmdb, not out of space nor
 * poisoned; for etcd, a revision read answers). /livez and /healthz leave
 * the store out: the process is alive, and a store out of space recovers by
 * itself, so a restart would not help (Kubernetes too dropped etcd from
 * /livez).
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/docs/docs.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "store/store.h"

#define HEALTH_WHY_MAX 512
#define HEALTH_EXCLUDE_MAX 8

typedef struct check {
    const char *name;
    int (*run)(api_req_t *r, char *why, size_t len);
    int ready_only; /* only on /readyz */
} check_t;

static int check_ping(api_req_t *r, char *why, size_t len)
{
    (void)r;
    snprintf(why, len, "ok");
    return 0;
}

static int check_store(api_req_t *r, char *why, size_t len)
{
    return store_health(r->srv->cfg.store, why, len);
}

static const check_t checks[] = {
    {"ping", check_ping, 0},
    {"store", check_store, 1},
};

typedef struct args {
    int verbose;
    const char *exclude[HEALTH_EXCLUDE_MAX];
    size_t n_exclude;
} args_t;

static int on_arg(void *cls, const char *key, const char *value)
{
    args_t *a = cls;
    if (!strcmp(key, "verbose")) a->verbose = 1;
    else if (!strcmp(key, "exclude") && value && a->n_exclude < HEALTH_EXCLUDE_MAX)
        a->exclude[a->n_exclude++] = value;
    return 0;
}

static int excluded(const args_t *a, const char *name, int *used)
{
    for (size_t i = 0; i < a->n_exclude; i++) {
        if (!strcmp(a->exclude[i], name)) {
            used[i] = 1;
            return 1;
        }
    }
    return 0;
}

static int reply_text(api_req_t *r, int code, buf_t *b, int err)
{
    if (err)
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    return api_reply_bytes(r, code, "text/plain; charset=utf-8", b->p ? b->p : "", b->len);
}

int api_serve_health(api_req_t *r)
{
    /* "/readyz", "/readyz/", "/readyz/store" */
    const char *p = r->path + (r->path[0] == '/');
    size_t plen = strcspn(p, "/");
    char path[16];
    if (plen >= sizeof path) plen = sizeof path - 1;
    memcpy(path, p, plen);
    path[plen] = '\0';
    const char *one = p[plen] == '/' && p[plen + 1] ? p + plen + 1 : NULL;
    int ready = !strcmp(path, "readyz");

    char why[HEALTH_WHY_MAX];
    buf_t b;
    buf_init(&b, 64 * 1024);
    int rc;
    if (one) {
        for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
            const check_t *c = &checks[i];
            if (strcmp(c->name, one) || (c->ready_only && !ready)) continue;
            if (c->run(r, why, sizeof why) == 0)
                rc = reply_text(r, 200, &b, buf_append(&b, "ok", 2));
            else
                rc = reply_text(r, 500, &b, buf_printf(&b, "internal server error: %s\n", why));
            buf_free(&b);
            return rc;
        }
        buf_free(&b);
        return api_reply_status(r, 404, "NotFound", NULL,
                                "the server could not find the requested resource");
    }

    args_t a = {0};
    int used[HEALTH_EXCLUDE_MAX] = {0};
    api_query_each(r, on_arg, &a);
    int failed = 0, err = 0;
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        const check_t *c = &checks[i];
        if (c->ready_only && !ready) continue;
        if (excluded(&a, c->name, used)) {
            err |= buf_printf(&b, "[+]%s excluded: ok\n", c->name);
        } else if (c->run(r, why, sizeof why) == 0) {
            err |= buf_printf(&b, "[+]%s ok\n", c->name);
        } else {
            err |= buf_printf(&b, "[-]%s failed: reason withheld\n", c->name);
            failed = 1;
        }
    }
    for (size_t i = 0; i < a.n_exclude; i++)
        if (!used[i])
            err |= buf_printf(&b, "warn: some health checks cannot be excluded: no matches "
                              "for \"%s\"\n", a.exclude[i]);
    if (failed) {
        err |= buf_printf(&b, "%s check failed\n", path);
        rc = reply_text(r, 500, &b, err);
    } else if (a.verbose) {
        err |= buf_printf(&b, "%s check passed\n", path);
        rc = reply_text(r, 200, &b, err);
    } else {
        buf_reset(&b);
        rc = reply_text(r, 200, &b, buf_append(&b, "ok", 2));
    }
    buf_free(&b);
    return rc;
}
