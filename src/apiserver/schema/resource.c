/*
 * resource.c -- names a resource descriptor gives: its group-version and
 * store keys. Pure functions, any thread.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/schema/resource.h"
#include "apiserver/schema/strategy.h"
#include "lib/err.h"

const char *api_group_version(const api_resource_t *r, char *buf, size_t n)
{
    if (!*r->group) snprintf(buf, n, "%s", r->version);
    else snprintf(buf, n, "%s/%s", r->group, r->version);
    return buf;
}

int api_key_prefix(const api_resource_t *r, char *buf, size_t n)
{
    return api_ns_prefix(r, "", buf, n);
}

/* The group ("core" for "") and resource of r's store keys. */
static void key_names(const api_resource_t *r, const char **group, const char **resource)
{
    *group = r->storage_resource ? r->storage_group : r->group;
    *resource = r->storage_resource ? r->storage_resource : r->resource;
    if (!**group) *group = "core";
}

int api_ns_prefix(const api_resource_t *r, const char *ns, char *buf, size_t n)
{
    const char *g, *res;
    key_names(r, &g, &res);
    int w = r->namespaced && ns && *ns ? snprintf(buf, n, "/registry/%s/%s/%s/", g, res, ns)
                                       : snprintf(buf, n, "/registry/%s/%s/", g, res);
    return w < 0 || (size_t)w >= n ? KP_EINVAL : 0;
}

int api_object_key(const api_resource_t *r, const char *ns, const char *name, char *buf,
                   size_t n)
{
    const char *g, *res;
    key_names(r, &g, &res);
    int w = r->namespaced ? snprintf(buf, n, "/registry/%s/%s/%s/%s", g, res, ns, name)
                          : snprintf(buf, n, "/registry/%s/%s/%s", g, res, name);
    return w < 0 || (size_t)w >= n ? KP_EINVAL : 0;
}

const api_sub_t *api_strategy_sub(const api_strategy_t *st, const char *name)
{
    for (const api_sub_t *s = st ? st->subs : NULL; s && s->name; s++)
        if (!strcmp(s->name, name)) return s;
    return NULL;
}

int api_resource_serves_sub(const api_resource_t *r, const char *name)
{
    if (!strcmp(name, "status")) return !!(r->subresources & API_SUB_STATUS);
    if (!strcmp(name, "scale")) return !!(r->subresources & API_SUB_SCALE);
    return api_strategy_sub(r->strategy, name) != NULL;
}
