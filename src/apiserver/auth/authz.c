/*
 * authz.c -- the authorizer chain of --authorization-mode, the rules a user
 * holds (SelfSubjectRulesReview) and Kubernetes' escalation check
 * (pkg/registry/rbac/validation: Covers, BreakdownRule, ruleCovers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>

#include "apiserver/auth/authz.h"
#include "apiserver/auth/node.h"
#include "apiserver/auth/rbac.h"
#include "apiserver/rest/rest.h"
#include "apiserver/schema/strategy.h"
#include "lib/err.h"

enum { MODE_ALWAYS_ALLOW = 1, MODE_RBAC = 2, MODE_NODE = 4 };

struct api_authz {
    int order[3]; /* the modes in their order, 0-terminated */
    apiserver_t *srv;
    rbac_t *rbac;
    json_t *node_rules; /* the Node authorizer's static rules (system:node's) */
};

static int mode_of(const char *s, size_t n)
{
    if (n == 11 && !strncmp(s, "AlwaysAllow", n)) return MODE_ALWAYS_ALLOW;
    if (n == 4 && !strncmp(s, "RBAC", n)) return MODE_RBAC;
    if (n == 4 && !strncmp(s, "Node", n)) return MODE_NODE;
    return 0;
}

/* modes parsed into order[] (3 entries, 0-terminated when fewer). */
static int parse_modes(const char *modes, int order[3], char *err, size_t errlen)
{
    memset(order, 0, 3 * sizeof *order);
    if (!modes || !*modes) modes = API_AUTHZ_DEFAULT_MODES;
    int seen = 0, n = 0;
    for (const char *p = modes;;) {
        size_t len = strcspn(p, ",");
        int m = mode_of(p, len);
        if (!m) {
            snprintf(err, errlen,
                     "--authorization-mode: unknown authorization mode \"%.*s\" (AlwaysAllow, "
                     "RBAC and Node are supported)",
                     (int)len, p);
            return KP_EINVAL;
        }
        if (seen & m) {
            snprintf(err, errlen, "--authorization-mode: \"%.*s\" is listed twice", (int)len, p);
            return KP_EINVAL;
        }
        seen |= m;
        order[n++] = m;
        if (!p[len]) break;
        p += len + 1;
    }
    return 0;
}

int api_authz_check_modes(const char *modes, char *err, size_t errlen)
{
    int order[3];
    return parse_modes(modes, order, err, errlen);
}

int api_authz_start(apiserver_t *s, const char *modes, api_authz_t **out)
{
    *out = NULL;
    char err[256];
    api_authz_t *z = calloc(1, sizeof *z);
    if (!z) return KP_ENOMEM;
    int rc = parse_modes(modes, z->order, err, sizeof err);
    int want_rbac = 0, want_node = 0;
    for (int i = 0; i < 3; i++) {
        want_rbac |= z->order[i] == MODE_RBAC;
        want_node |= z->order[i] == MODE_NODE;
    }
    z->srv = s;
    if (!rc && want_rbac) rc = rbac_start(s, &z->rbac);
    if (!rc && want_node && !(z->node_rules = api_node_static_rules())) rc = KP_ENOMEM;
    if (rc) {
        free(z);
        return rc;
    }
    *out = z;
    return 0;
}

void api_authz_stop(api_authz_t *z)
{
    if (!z) return;
    rbac_stop(z->rbac);
    json_decref(z->node_rules);
    free(z);
}

int api_authorize(api_authz_t *z, const api_attrs_t *a, char *reason, size_t reasonlen)
{
    if (reason && reasonlen) reason[0] = '\0';
    /* kube-apiserver's privileged-group authorizer comes first. */
    if (api_user_in_group(a->user, API_GROUP_MASTERS)) return 1;
    /* As Kubernetes' union authorizer: the first that allows decides; the
     * reasons of those with no opinion are joined by newlines. */
    char one[1024];
    size_t used = 0;
    for (int i = 0; i < 3 && z->order[i]; i++) {
        int ok = 0;
        one[0] = '\0';
        switch (z->order[i]) {
        case MODE_ALWAYS_ALLOW:
            ok = 1;
            break;
        case MODE_RBAC:
            ok = rbac_allows(z->rbac, a, one, sizeof one);
            break;
        default:
            ok = api_node_authorize(z->srv, z->node_rules, a, one, sizeof one);
            break;
        }
        if (ok == API_AUTHZ_LATER) return ok;
        if (ok) {
            if (reason && reasonlen) snprintf(reason, reasonlen, "%s", one);
            return 1;
        }
        if (*one && reason && used < reasonlen)
            used +=
                (size_t)snprintf(reason + used, reasonlen - used, "%s%s", used ? "\n" : "", one);
    }
    return 0;
}

void api_authz_forbidden_message(const api_attrs_t *a, char *out, size_t len)
{
    const char *user = a->user && a->user->name ? a->user->name : "";
    if (!a->resource_request) {
        snprintf(out, len, "User \"%s\" cannot %s path \"%s\"", user, a->verb, a->path);
        return;
    }
    char res[160];
    snprintf(res, sizeof res, "%s%s%s", a->resource, *a->sub ? "/" : "", a->sub);
    if (*a->ns)
        snprintf(out, len,
                 "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" in the namespace "
                 "\"%s\"",
                 user, a->verb, res, a->group, a->ns);
    else
        snprintf(out, len,
                 "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" at the cluster scope",
                 user, a->verb, res, a->group);
}

/* ---- rules ---- */

static json_t *str_list(const char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; a && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static int everything(json_t *res, json_t *nonres)
{
    static const char *const star[] = {"*", NULL};
    json_t *r = json_pack("{s:o,s:o,s:o}", "verbs", str_list(star), "apiGroups", str_list(star),
                          "resources", str_list(star));
    json_t *n = json_pack("{s:o,s:o}", "verbs", str_list(star), "nonResourceURLs", str_list(star));
    if (!r || !n || json_array_append_new(res, r) || json_array_append_new(nonres, n)) {
        json_decref(n);
        return KP_ENOMEM;
    }
    return 0;
}

/* A PolicyRule's list `key` (borrowed), or NULL: the json_array_*()
 * calls read NULL as an empty array. */
static const json_t *list_of(const json_t *rule, const char *key)
{
    const json_t *v = json_object_get(rule, key);
    return json_is_array(v) ? v : NULL;
}

int api_authz_rules(api_authz_t *z, const api_user_t *u, const char *ns, json_t **resource_rules,
                    json_t **nonresource_rules, int *incomplete)
{
    *incomplete = 0;
    json_t *res = json_array(), *nonres = json_array(), *rules = NULL;
    int rc = res && nonres ? 0 : KP_ENOMEM;
    for (int i = 0; i < 3 && z->order[i] && !rc; i++) {
        if (z->order[i] == MODE_ALWAYS_ALLOW) {
            rc = everything(res, nonres);
        } else if (z->order[i] == MODE_NODE) {
            continue; /* no rules of its own yet */
        } else if (!(rc = rbac_rules_for(z->rbac, u, ns, &rules))) {
            /* As Kubernetes' RBAC RulesFor: a rule with resources gives a
             * ResourceRule, one with URLs a NonResourceRule. */
            size_t k;
            json_t *r;
            json_array_foreach(rules, k, r) {
                const json_t *resources = list_of(r, "resources");
                const json_t *urls = list_of(r, "nonResourceURLs");
                if (json_array_size(resources)) {
                    json_t *o = json_object();
                    json_object_set(o, "verbs", json_object_get(r, "verbs"));
                    if (list_of(r, "apiGroups"))
                        json_object_set(o, "apiGroups", json_object_get(r, "apiGroups"));
                    json_object_set(o, "resources", json_object_get(r, "resources"));
                    if (json_array_size(list_of(r, "resourceNames")))
                        json_object_set(o, "resourceNames", json_object_get(r, "resourceNames"));
                    if (!o || json_array_append_new(res, o)) rc = KP_ENOMEM;
                }
                if (json_array_size(urls)) {
                    json_t *o = json_object();
                    json_object_set(o, "verbs", json_object_get(r, "verbs"));
                    json_object_set(o, "nonResourceURLs", json_object_get(r, "nonResourceURLs"));
                    if (!o || json_array_append_new(nonres, o)) rc = KP_ENOMEM;
                }
            }
            json_decref(rules);
            rules = NULL;
        }
    }
    if (rc) {
        json_decref(res);
        json_decref(nonres);
        return rc;
    }
    *resource_rules = res;
    *nonresource_rules = nonres;
    return 0;
}

int api_authz_role_rules(api_authz_t *z, const char *ns, const char *kind, const char *name,
                         json_t **rules)
{
    *rules = NULL;
    return z->rbac ? rbac_role_rules(z->rbac, ns, kind, name, rules) : 0;
}

/* ---- Covers ---- */

static int has(const json_t *list, const char *v)
{
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e)
        if (json_is_string(e) && !strcmp(json_string_value(e), v)) return 1;
    return 0;
}

/* One atomic rule of a breakdown: one verb and one group, resource and name,
 * or one verb and one URL. */
typedef struct atom {
    const char *verb, *group, *resource, *name, *url;
} atom_t;

static int resource_covers(const json_t *owner, const char *res)
{
    if (has(owner, "*") || has(owner, res)) return 1;
    const char *slash = strchr(res, '/');
    if (!slash) return 0;
    char sub[160];
    snprintf(sub, sizeof sub, "*/%s", slash + 1);
    return has(owner, sub);
}

static int url_covers(const json_t *owner, const char *url)
{
    size_t i;
    const json_t *e;
    json_array_foreach(owner, i, e) {
        const char *s = json_string_value(e);
        if (!s) continue;
        size_t n = strlen(s);
        if (!strcmp(s, url) || (n && s[n - 1] == '*' && !strncmp(s, url, n - 1))) return 1;
    }
    return 0;
}

/* Kubernetes' ruleCovers(owner, atom). */
static int rule_covers(const json_t *owner, const atom_t *a)
{
    const json_t *verbs = list_of(owner, "verbs");
    if (!has(verbs, "*") && !has(verbs, a->verb)) return 0;
    const json_t *names = list_of(owner, "resourceNames");
    if (a->url) {
        /* An atom of URLs has no groups or resources: those match. */
        return url_covers(list_of(owner, "nonResourceURLs"), a->url) && !json_array_size(names);
    }
    const json_t *groups = list_of(owner, "apiGroups");
    if (!has(groups, "*") && !has(groups, a->group)) return 0;
    if (!resource_covers(list_of(owner, "resources"), a->resource)) return 0;
    if (!a->name) return !json_array_size(names);
    return !json_array_size(names) || has(names, a->name);
}

typedef struct cover {
    const json_t *owner; /* the rules held */
    json_t *uncovered;   /* atoms not covered, as PolicyRules */
    int oom;
} cover_t;

static json_t *atom_rule(const atom_t *a)
{
    if (a->url) return json_pack("{s:[s],s:[s]}", "verbs", a->verb, "nonResourceURLs", a->url);
    json_t *r = json_pack("{s:[s],s:[s],s:[s]}", "verbs", a->verb, "apiGroups", a->group,
                          "resources", a->resource);
    if (r && a->name) json_object_set_new(r, "resourceNames", json_pack("[s]", a->name));
    return r;
}

static void check_atom(cover_t *c, const atom_t *a)
{
    size_t i;
    const json_t *o;
    json_array_foreach(c->owner, i, o)
        if (rule_covers(o, a)) return;
    json_t *r = atom_rule(a);
    if (!r || json_array_append_new(c->uncovered, r)) c->oom = 1;
}

/* BreakdownRule: every (group, resource, verb[, name]) and (url, verb). */
static void check_rule(cover_t *c, const json_t *rule)
{
    const json_t *verbs = list_of(rule, "verbs"), *groups = list_of(rule, "apiGroups");
    const json_t *resources = list_of(rule, "resources"), *names = list_of(rule, "resourceNames");
    size_t gi, ri, vi, ni;
    const json_t *g, *r, *v, *n;
    json_array_foreach(groups, gi, g)
        json_array_foreach(resources, ri, r)
            json_array_foreach(verbs, vi, v) {
                atom_t a = {.verb = json_string_value(v),
                            .group = json_string_value(g),
                            .resource = json_string_value(r)};
                if (!a.verb || !a.group || !a.resource) continue;
                if (!json_array_size(names)) check_atom(c, &a);
                json_array_foreach(names, ni, n) {
                    a.name = json_string_value(n);
                    if (a.name) check_atom(c, &a);
                }
            }
    json_array_foreach(list_of(rule, "nonResourceURLs"), ri, r)
        json_array_foreach(verbs, vi, v) {
            atom_t a = {.verb = json_string_value(v), .url = json_string_value(r)};
            if (a.verb && a.url) check_atom(c, &a);
        }
}

json_t *api_rules_uncovered(const json_t *owner, const json_t *rules)
{
    cover_t c = {.owner = owner, .uncovered = json_array()};
    if (!c.uncovered) return NULL;
    size_t i;
    const json_t *r;
    json_array_foreach(rules, i, r)
        check_rule(&c, r);
    if (c.oom) {
        json_decref(c.uncovered);
        return NULL;
    }
    return c.uncovered;
}

int api_authz_held(api_authz_t *z, const api_user_t *u, const char *ns, json_t **rules)
{
    *rules = NULL;
    for (int i = 0; i < 3 && z->order[i]; i++)
        if (z->order[i] == MODE_ALWAYS_ALLOW) {
            *rules = json_pack("[{s:[s],s:[s],s:[s]},{s:[s],s:[s]}]", "verbs", "*", "apiGroups",
                               "*", "resources", "*", "verbs", "*", "nonResourceURLs", "*");
            return *rules ? 0 : KP_ENOMEM;
        }
    if (z->rbac) return rbac_rules_for(z->rbac, u, ns, rules);
    return (*rules = json_array()) ? 0 : KP_ENOMEM;
}

/* ---- request attributes (Kubernetes' RequestInfoFactory) ---- */

void api_attrs_clear(api_attrs_t *a)
{
    free(a->owned);
    a->owned = NULL;
}

static int is_true(const char *v)
{
    return v && (!strcmp(v, "1") || !strcasecmp(v, "t") || !strcasecmp(v, "true"));
}

/* Whether v (n bytes) is a valid path segment name: not "." or "..", no
 * '/' or '%' (Kubernetes' path.IsValidPathSegmentName), and no escape. */
static int segment_name(const char *v, size_t n)
{
    if (!n || (n == 1 && v[0] == '.') || (n == 2 && v[0] == '.' && v[1] == '.')) return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] == '/' || v[i] == '%' || v[i] == '\\') return 0;
    return 1;
}

/* The name a fieldSelector requires exactly (a term metadata.name=X or
 * metadata.name==X), as a pointer into sel and its length; 0 when none. */
static size_t selector_name(const char *sel, const char **name)
{
    for (const char *p = sel; p && *p;) {
        size_t n = strcspn(p, ",");
        size_t k = n >= 15 && !strncmp(p, "metadata.name==", 15)  ? 15
                   : n >= 14 && !strncmp(p, "metadata.name=", 14) ? 14
                                                                  : 0;
        if (k && segment_name(p + k, n - k)) {
            *name = p + k;
            return n - k;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

int api_attrs_of(api_req_t *r, const api_user_t *u, api_attrs_t *a)
{
    memset(a, 0, sizeof *a);
    a->user = u;
    a->ns = a->group = a->version = a->resource = a->sub = a->name = "";
    a->path = r->path;
    /* Room for the path's segments, NUL-terminated, a verb and a name. */
    const char *sel = api_query(r, "fieldSelector");
    size_t plen = strlen(r->path), slen = sel ? strlen(sel) : 0;
    char *b = a->owned = malloc(plen + slen + 40);
    if (!b) return KP_ENOMEM;
    /* The method in lower case: a path's verb. */
    char *verb = b;
    size_t mlen = strlen(r->method) < 16 ? strlen(r->method) : 15;
    for (size_t i = 0; i < mlen; i++)
        verb[i] = (char)tolower((unsigned char)r->method[i]);
    verb[mlen] = '\0';
    a->verb = verb;
    char *segs = b + 16;
    memcpy(segs, r->path, plen + 1);
    /* splitPath: trim one '/' at each end, split at every '/'. */
    char *part[8];
    size_t n = 0;
    char *p = segs + (segs[0] == '/');
    size_t end = strlen(p);
    if (end && p[end - 1] == '/') p[end - 1] = '\0';
    while (*p && n < 8) {
        part[n++] = p;
        char *slash = strchr(p, '/');
        if (!slash) break;
        *slash = '\0';
        p = slash + 1;
    }
    if (n < 3 || (strcmp(part[0], "api") && strcmp(part[0], "apis"))) return 0;
    size_t at = 1;
    if (!strcmp(part[0], "apis")) {
        if (n < 4) return 0;
        a->group = part[at++];
    }
    a->resource_request = 1;
    a->version = part[at++];
    static const struct {
        const char *method, *verb;
    } verbs[] = {{"POST", "create"}, {"GET", "get"},     {"HEAD", "get"},
                 {"PUT", "update"},  {"PATCH", "patch"}, {"DELETE", "delete"}};
    a->verb = "";
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(r->method, verbs[i].method)) a->verb = verbs[i].verb;
    /* /watch/... (deprecated): the verb is watch. */
    if (at < n && !strcmp(part[at], "watch")) {
        a->verb = "watch";
        at++;
    }
    char **rest = part + at;
    size_t nrest = n - at;
    if (nrest && !strcmp(rest[0], api_namespace_scope)) {
        if (nrest > 1) {
            a->ns = rest[1];
            /* namespaces/NS/RESOURCE...: unless one of the namespace
             * resource's own subresources follows (status, finalize). */
            const api_resource_t *nsres = api_registry_find("", "v1", api_namespace_scope);
            if (nrest > 2 && !(nsres && api_resource_serves_sub(nsres, rest[2]))) {
                rest += 2;
                nrest -= 2;
            }
        }
    }
    if (nrest >= 3) a->sub = rest[2];
    if (nrest >= 2) a->name = rest[1];
    if (nrest >= 1) a->resource = rest[0];
    if (!*a->name && !strcmp(a->verb, "get")) {
        a->verb = is_true(api_query(r, "watch")) ? "watch" : "list";
        const char *name = NULL;
        size_t nl = sel ? selector_name(sel, &name) : 0;
        if (nl) {
            char *copy = b + 16 + plen + 1;
            memcpy(copy, name, nl);
            copy[nl] = '\0';
            a->name = copy;
        }
    }
    if (!*a->name && !strcmp(a->verb, "delete")) a->verb = "deletecollection";
    return 0;
}
