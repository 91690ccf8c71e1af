/*
 * discovery.c -- what the server serves, as clients discover it: health,
 * /version, /api, /apis and the per group-version resource lists, all from
 * the request's view (built-ins and CustomResourceDefinitions' resources).
 * The OpenAPI documents are openapi.c's; requests for them are passed on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/docs/docs.h"
#include "apiserver/docs/openapi.h"
#include "lib/err.h"
#include "apiserver/schema/strategy.h"

#define KUBE_VERSION_MAJOR "1"
#define KUBE_VERSION_MINOR "32"
#define KUBE_GIT_VERSION "v1.32.0-kplane"

static json_t *verbs_json(const char *const *verbs)
{
    json_t *a = json_array();
    for (; *verbs; verbs++) json_array_append_new(a, json_string(*verbs));
    return a;
}

/* A resource's API_V_* verbs in Kubernetes' (alphabetical) order. */
static json_t *verb_bits_json(unsigned verbs)
{
    static const struct { unsigned bit; const char *name; } names[] = {
        {API_V_CREATE, "create"}, {API_V_DELETE, "delete"},
        {API_V_DELETECOLLECTION, "deletecollection"}, {API_V_GET, "get"},
        {API_V_LIST, "list"}, {API_V_PATCH, "patch"}, {API_V_UPDATE, "update"},
        {API_V_WATCH, "watch"},
    };
    json_t *a = json_array();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (verbs & names[i].bit) json_array_append_new(a, json_string(names[i].name));
    return a;
}

static const char *const sub_verbs[] = {"get", "patch", "update", NULL};

static json_t *sub_entry(const api_resource_t *r, const char *sub, const char *group,
                         const char *version, const char *kind, const char *const *verbs)
{
    char name[128];
    snprintf(name, sizeof name, "%s/%s", r->resource, sub);
    /* metav1.APIResource's member order: group and version before kind. */
    if (group)
        return json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:o}", "name", name, "singularName", "",
                         "namespaced", r->namespaced, "group", group, "version", version, "kind",
                         kind, "verbs", verbs_json(verbs));
    return json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", name, "singularName", "",
                     "namespaced", r->namespaced, "kind", kind, "verbs", verbs_json(verbs));
}

static int by_name(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
                  json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

/* Append the entries of `from` (consumed) to `to`, sorted by name. */
static void append_sorted(json_t *to, json_t *from)
{
    size_t n = json_array_size(from), i;
    json_t **e = n ? calloc(n, sizeof *e) : NULL, *x;
    if (!e) { /* none, or no memory: unsorted rather than missing */
        json_array_extend(to, from);
        json_decref(from);
        return;
    }
    json_array_foreach(from, i, x) e[i] = x;
    qsort(e, n, sizeof *e, by_name);
    for (i = 0; i < n; i++) json_array_append(to, e[i]);
    free(e);
    json_decref(from);
}

static json_t *resource_list(const api_view_t *v, const char *group, const char *version)
{
    json_t *list = json_array();
    for (size_t i = 0; i < v->count; i++) {
        const api_resource_t *r = v->res[i];
        if (strcmp(r->group, group) || strcmp(r->version, version)) continue;
        json_t *e = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", r->resource, "singularName",
                              r->singular, "namespaced", r->namespaced, "kind", r->kind,
                              "verbs", verb_bits_json(r->verbs));
        if (r->short_names[0]) {
            json_t *sn = json_array();
            for (int k = 0; k < 4 && r->short_names[k]; k++)
                json_array_append_new(sn, json_string(r->short_names[k]));
            json_object_set_new(e, "shortNames", sn);
        }
        if (r->categories[0]) {
            json_t *cat = json_array();
            for (int k = 0; k < 4 && r->categories[k]; k++)
                json_array_append_new(cat, json_string(r->categories[k]));
            json_object_set_new(e, "categories", cat);
        }
        json_array_append_new(list, e);

        /* Its subresources sorted by name, as kube-apiserver's installer
         * registers paths (pods/attach ... pods/status). */
        json_t *subs = json_array();
        if (r->subresources & API_SUB_STATUS)
            json_array_append_new(subs, sub_entry(r, "status", NULL, NULL, r->kind, sub_verbs));
        if (r->subresources & API_SUB_SCALE)
            json_array_append_new(subs,
                                  sub_entry(r, "scale", "autoscaling", "v1", "Scale", sub_verbs));
        /* The kind's own subresources (strategy.h). */
        for (const api_sub_t *s = r->strategy ? r->strategy->subs : NULL; s && s->name; s++)
            json_array_append_new(subs, sub_entry(r, s->name, s->group, s->version,
                                                  s->kind ? s->kind : r->kind, s->verbs));
        append_sorted(list, subs);
    }
    if (json_array_size(list) == 0) {
        json_decref(list);
        return NULL;
    }
    char gv[128];
    snprintf(gv, sizeof gv, "%s%s%s", group, *group ? "/" : "", version);
    return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                     "groupVersion", gv, "resources", list);
}

/* An API group with its versions in view order, the first preferred (a
 * CustomResourceDefinition lists its versions in that order). */
static json_t *group_json(const api_view_t *v, const char *group)
{
    json_t *versions = json_array();
    for (size_t i = 0; i < v->count; i++) {
        const api_resource_t *r = v->res[i];
        if (strcmp(r->group, group)) continue;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(v->res[j]->group, group) && !strcmp(v->res[j]->version, r->version);
        if (seen) continue;
        char gv[320];
        snprintf(gv, sizeof gv, "%s/%s", r->group, r->version);
        json_array_append_new(versions,
                              json_pack("{s:s, s:s}", "groupVersion", gv, "version", r->version));
    }
    if (json_array_size(versions) == 0) {
        json_decref(versions);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:s, s:o, s:O}", "kind", "APIGroup", "apiVersion", "v1", "name",
                     group, "versions", versions, "preferredVersion",
                     json_array_get(versions, 0));
}

static json_t *group_list(const api_view_t *v)
{
    json_t *groups = json_array();
    for (size_t i = 0; i < v->count; i++) {
        const api_resource_t *r = v->res[i];
        if (!*r->group) continue;
        int seen = 0;
        for (size_t j = 0; j < i; j++) seen |= !strcmp(v->res[j]->group, r->group);
        if (seen) continue;
        json_t *g = group_json(v, r->group);
        json_object_del(g, "kind");
        json_object_del(g, "apiVersion");
        json_array_append_new(groups, g);
    }
    return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
                     groups);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* GET /: the paths served, sorted, as kube-apiserver lists them. */
static json_t *root_paths(const api_view_t *v)
{
    static const char *const fixed[] = {"/api",       "/api/v1",      "/apis",
                                        "/apis/",     "/healthz",     "/livez",
                                        "/metrics",   "/openapi/v2",  "/openapi/v3",
                                        "/openapi/v3/", "/readyz",    "/version"};
    json_t *set = json_object();
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        json_object_set_new(set, fixed[i], json_true());
    for (size_t i = 0; v && i < v->count; i++) {
        const api_resource_t *r = v->res[i];
        if (!*r->group) continue;
        char p[400];
        snprintf(p, sizeof p, "/apis/%s", r->group);
        json_object_set_new(set, p, json_true());
        snprintf(p, sizeof p, "/apis/%s/%s", r->group, r->version);
        json_object_set_new(set, p, json_true());
    }
    json_t *list = json_array();
    const char *k;
    json_t *val;
    json_object_foreach(set, k, val) json_array_append_new(list, json_string(k));
    json_decref(set);
    size_t n = json_array_size(list);
    json_t **items = calloc(n ? n : 1, sizeof *items);
    if (!items) {
        json_decref(list);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        items[i] = json_incref(json_array_get(list, i));
    qsort(items, n, sizeof *items, cmp_str);
    json_array_clear(list);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, items[i]);
    free(items);
    return json_pack("{s:o}", "paths", list);
}

int api_serve_discovery(api_req_t *r)
{
    const api_route_t *rt = &r->route;
    if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD"))
        return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                                "the server does not allow this method on the requested resource");
    json_t *doc = NULL;
    switch (rt->kind) {
    case API_ROUTE_ROOT:
        doc = root_paths(r->view);
        break;
    case API_ROUTE_HEALTH:
        return api_serve_health(r);
    case API_ROUTE_VERSION:
        doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major",
                        KUBE_VERSION_MAJOR, "minor", KUBE_VERSION_MINOR, "gitVersion",
                        KUBE_GIT_VERSION, "gitCommit", "kplane", "gitTreeState", "clean",
                        "buildDate", "2026-01-01T00:00:00Z", "goVersion", "none", "compiler",
                        "gcc", "platform", "linux/amd64");
        break;
    case API_ROUTE_API: {
        char addr[64];
        snprintf(addr, sizeof addr, "127.0.0.1:%d", r->srv->port);
        doc = json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions", "v1",
                        "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0",
                        "serverAddress", addr);
        break;
    }
    case API_ROUTE_APIS:
        doc = group_list(r->view);
        break;
    case API_ROUTE_GROUP:
        doc = group_json(r->view, rt->group);
        break;
    case API_ROUTE_GROUP_VERSION:
        doc = resource_list(r->view, rt->group, rt->version);
        break;
    case API_ROUTE_OPENAPI:
        return api_serve_openapi(r);
    default:
        break;
    }
    if (!doc)
        return api_reply_status(r, 404, "NotFound", NULL,
                                "the server could not find the requested resource");
    return api_reply_json(r, 200, doc);
}
