/*
 * route.c -- what a request path names.
 *
 *   /healthz /livez /readyz /version /metrics /openapi/...
 *   /.well-known/openid-configuration /openid/v1/jwks
 *   /ui /ui/...                  the dashboard (ui/ui.h serves it)
 *   /api                         /apis   /apis/G
 *   /api/v1                      /apis/G/V
 *   .../R[/NAME[/SUB]]           cluster-scoped, or all namespaces for a list
 *   .../namespaces/NS/R[/NAME[/SUB]]
 *   .../namespaces/NAME[/SUB]    a namespace itself, SUB one of its
 *                                subresources (its row and strategy say which)
 *
 * The scope segment ("namespaces") is api_namespace_scope, a fact of the
 * OpenAPI document's paths generated with the registry: no kind is named
 * here.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/schema/strategy.h"
#include "lib/err.h"

#define MAX_SEGS 10

/* Split "/a/b/c" into segments in `copy`; returns the count, -1 if too many. */
static int split(const char *path, char *copy, size_t n, char *segs[MAX_SEGS])
{
    snprintf(copy, n, "%s", path);
    int count = 0;
    char *save = NULL;
    for (char *s = strtok_r(copy, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (count == MAX_SEGS) return -1;
        segs[count++] = s;
    }
    return count;
}

static int fits(const char *s, size_t cap) { return strlen(s) < cap; }

static int set(char *dst, size_t cap, const char *src)
{
    if (!fits(src, cap)) return KP_ENOTFOUND;
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* segs[0..n) follow "/api/v1" or "/apis/G/V". */
static int parse_resource(const api_view_t *v, api_route_t *rt, char **segs, int n)
{
    int rc = 0;
    rt->kind = API_ROUTE_RESOURCE;
    if (n >= 2 && !strcmp(segs[0], api_namespace_scope)) {
        size_t idx = 0;
        const api_resource_t *inner =
            n >= 3 ? api_view_find(v, rt->group, rt->version, segs[2], &idx) : NULL;
        if (n >= 3 && inner && inner->namespaced) {
            /* namespaces/NS/R[/NAME[/SUB]] */
            if (n > 5) return KP_ENOTFOUND;
            if ((rc = set(rt->ns, sizeof rt->ns, segs[1])) ||
                (rc = set(rt->resource, sizeof rt->resource, segs[2])) ||
                (n >= 4 && (rc = set(rt->name, sizeof rt->name, segs[3]))) ||
                (n == 5 && (rc = set(rt->sub, sizeof rt->sub, segs[4]))))
                return rc;
            rt->res = inner;
            rt->index = idx;
            return 0;
        }
        const api_resource_t *outer =
            n == 3 ? api_view_find(v, rt->group, rt->version, segs[0], NULL) : NULL;
        if (n == 3 && !(outer && api_resource_serves_sub(outer, segs[2]))) {
            /* namespaces/NS/<unknown resource> */
            set(rt->resource, sizeof rt->resource, segs[2]);
            rt->res = NULL;
            return 0;
        }
    }
    /* R[/NAME[/SUB]] */
    if (n < 1 || n > 3) return KP_ENOTFOUND;
    if ((rc = set(rt->resource, sizeof rt->resource, segs[0])) ||
        (n >= 2 && (rc = set(rt->name, sizeof rt->name, segs[1]))) ||
        (n == 3 && (rc = set(rt->sub, sizeof rt->sub, segs[2]))))
        return rc;
    rt->res = api_view_find(v, rt->group, rt->version, rt->resource, &rt->index);
    return 0;
}

int api_route_parse(const api_view_t *v, const char *path, api_route_t *rt)
{
    char copy[1024];
    char *segs[MAX_SEGS];
    memset(rt, 0, sizeof *rt);
    if (strlen(path) >= sizeof copy) return KP_ENOTFOUND;
    int n = split(path, copy, sizeof copy, segs);
    if (n == 0 && !strcmp(path, "/")) {
        rt->kind = API_ROUTE_ROOT;
        return 0;
    }
    if (n <= 0) return KP_ENOTFOUND;

    const char *s0 = segs[0];
    if (!strcmp(s0, "healthz") || !strcmp(s0, "livez") || !strcmp(s0, "readyz")) {
        rt->kind = API_ROUTE_HEALTH;
        return 0;
    }
    if (n == 1 && !strcmp(s0, "version")) {
        rt->kind = API_ROUTE_VERSION;
        return 0;
    }
    if (n == 1 && !strcmp(s0, "metrics")) {
        rt->kind = API_ROUTE_METRICS;
        return 0;
    }
    if (!strcmp(s0, "ui")) {
        rt->kind = API_ROUTE_UI;
        return 0;
    }
    if (!strcmp(s0, "openapi")) {
        rt->kind = API_ROUTE_OPENAPI;
        return 0;
    }
    if ((n == 2 && !strcmp(s0, ".well-known") && !strcmp(segs[1], "openid-configuration")) ||
        (n == 3 && !strcmp(s0, "openid") && !strcmp(segs[1], "v1") && !strcmp(segs[2], "jwks"))) {
        rt->kind = API_ROUTE_OIDC;
        return 0;
    }
    if (!strcmp(s0, "api")) {
        if (n == 1) {
            rt->kind = API_ROUTE_API;
            return 0;
        }
        if (set(rt->version, sizeof rt->version, segs[1])) return KP_ENOTFOUND;
        if (n == 2) {
            rt->kind = API_ROUTE_GROUP_VERSION;
            return 0;
        }
        return parse_resource(v, rt, segs + 2, n - 2);
    }
    if (!strcmp(s0, "apis")) {
        if (n == 1) {
            rt->kind = API_ROUTE_APIS;
            return 0;
        }
        if (set(rt->group, sizeof rt->group, segs[1])) return KP_ENOTFOUND;
        if (n == 2) {
            rt->kind = API_ROUTE_GROUP;
            return 0;
        }
        if (set(rt->version, sizeof rt->version, segs[2])) return KP_ENOTFOUND;
        if (n == 3) {
            rt->kind = API_ROUTE_GROUP_VERSION;
            return 0;
        }
        return parse_resource(v, rt, segs + 3, n - 3);
    }
    return KP_ENOTFOUND;
}
