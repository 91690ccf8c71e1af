/*
 * policy.c -- the audit policy (audit.k8s.io/v1 Policy): read, checked as
 * kube-apiserver's ValidatePolicy checks it, and evaluated as its policy
 * checker does (the first rule whose every field matches gives the level;
 * no rule: None).
 *
 * The parsed document is kept: a rule's strings point into it. Immutable
 * once parsed, so any thread may evaluate.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/audit/audit.h"
#include "lib/err.h"
#include "lib/yamljson.h"

#define POLICY_FILE_MAX (8u << 20) /* a policy file past this is refused */

typedef struct strs {
    const char **v;
    size_t n;
} strs_t;

typedef struct group_res {
    const char *group;
    strs_t resources, names;
} group_res_t;

typedef struct rule {
    int level;
    strs_t users, groups, verbs, namespaces, urls;
    group_res_t *res;
    size_t nres;
    unsigned omit;
    int omit_mf; /* -1: not set (the policy's) */
} rule_t;

struct apiserver_audit_policy {
    json_t *doc;
    rule_t *rules;
    size_t nrules;
    unsigned omit;
    int omit_mf;
};

static const char *const level_names[] = {"None", "Metadata", "Request", "RequestResponse"};
static const char *const stage_names[] = {"RequestReceived", "ResponseStarted", "ResponseComplete",
                                          "Panic"};

const char *api_audit_level_name(int level)
{
    return level >= 0 && level <= API_AUDIT_REQUEST_RESPONSE ? level_names[level] : "None";
}

const char *api_audit_stage_name(unsigned stage)
{
    for (unsigned i = 0; i < 4; i++)
        if (stage == 1u << i) return stage_names[i];
    return "";
}

/* ---- reading ---- */

typedef struct ctx {
    char *err;
    size_t errlen;
    char *warn;
    size_t warnlen;
} ctx_t;

static int bad(ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(ctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (c->err && c->errlen) vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return KP_EINVAL;
}

/* Note a field nobody reads (the first only). */
static void unknown(ctx_t *c, const char *path, const char *key)
{
    if (c->warn && c->warnlen && !c->warn[0])
        snprintf(c->warn, c->warnlen, "%s%s%s: unknown field (ignored)", path, *path ? "." : "",
                 key);
}

/* A list of strings at `path` (absent or null: empty). */
static int get_strs(ctx_t *c, const json_t *v, const char *path, strs_t *out)
{
    out->v = NULL;
    out->n = 0;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_array(v)) return bad(c, "%s: must be a list of strings", path);
    size_t n = json_array_size(v);
    if (!n) return 0;
    if (!(out->v = calloc(n, sizeof *out->v))) return KP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(v, i);
        if (!json_is_string(s)) return bad(c, "%s[%zu]: must be a string", path, i);
        out->v[out->n++] = json_string_value(s);
    }
    return 0;
}

/* omitStages at `path` into a set of stage bits. */
static int get_stages(ctx_t *c, const json_t *v, const char *path, unsigned *out)
{
    *out = 0;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_array(v)) return bad(c, "%s: must be a list of stages", path);
    size_t i;
    const json_t *s;
    json_array_foreach(v, i, s) {
        const char *t = json_string_value(s);
        unsigned bit = 0;
        for (unsigned k = 0; t && k < 4 && !bit; k++)
            if (!strcmp(t, stage_names[k])) bit = 1u << k;
        if (!bit) {
            char shown[96];
            snprintf(shown, sizeof shown, "%s", t ? t : "(not a string)");
            return bad(c,
                       "%s[%zu]: Invalid value: \"%s\": allowed stages are "
                       "RequestReceived,ResponseStarted,ResponseComplete,Panic",
                       path, i, shown);
        }
        *out |= bit;
    }
    return 0;
}

static int get_bool(ctx_t *c, const json_t *v, const char *path, int *out)
{
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return bad(c, "%s: must be true or false", path);
    *out = json_is_true(v);
    return 0;
}

/* A lowercase RFC 1123 subdomain (Kubernetes' NameIsDNSSubdomain). */
static int dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 253) return 0;
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k < n && s[k] != '.') {
            char ch = s[k];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-')) return 0;
            k++;
        }
        if (k == i || s[i] == '-' || s[k - 1] == '-') return 0; /* empty label, or '-' at an end */
        if (k == n) break;
        i = k + 1;
        if (i == n) return 0; /* a trailing '.' */
    }
    return 1;
}

static int read_resources(ctx_t *c, const json_t *v, const char *path, rule_t *r)
{
    if (!v || json_is_null(v)) return 0;
    if (!json_is_array(v)) return bad(c, "%s: must be a list of GroupResources", path);
    size_t n = json_array_size(v);
    if (!n) return 0;
    if (!(r->res = calloc(n, sizeof *r->res))) return KP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *g = json_array_get(v, i);
        char at[160], sub[200];
        snprintf(at, sizeof at, "%s[%zu]", path, i);
        if (!json_is_object(g)) return bad(c, "%s: must be an object (group, resources)", at);
        group_res_t *gr = &r->res[r->nres++];
        const char *key;
        const json_t *val;
        json_object_foreach((json_t *)g, key, val) {
            int rc = 0;
            if (!strcmp(key, "group")) {
                if (!json_is_string(val) && !json_is_null(val))
                    return bad(c, "%s.group: must be a string", at);
            } else if (!strcmp(key, "resources")) {
                snprintf(sub, sizeof sub, "%s.resources", at);
                rc = get_strs(c, val, sub, &gr->resources);
            } else if (!strcmp(key, "resourceNames")) {
                snprintf(sub, sizeof sub, "%s.resourceNames", at);
                rc = get_strs(c, val, sub, &gr->names);
            } else {
                unknown(c, at, key);
            }
            if (rc) return rc;
        }
        const json_t *grp = json_object_get(g, "group");
        gr->group = json_is_string(grp) ? json_string_value(grp) : "";
        if (*gr->group && !dns_subdomain(gr->group))
            return bad(c,
                       "%s.group: Invalid value: \"%s\": a lowercase RFC 1123 subdomain must "
                       "consist of lower case alphanumeric characters, '-' or '.', and must start "
                       "and end with an alphanumeric character",
                       at, gr->group);
        if (gr->names.n && !gr->resources.n)
            return bad(c,
                       "%s.resourceNames: Invalid value: \"%s\": using resourceNames requires at "
                       "least one resource",
                       at, gr->names.v[0]);
    }
    return 0;
}

static int read_rule(ctx_t *c, const json_t *v, size_t i, rule_t *r)
{
    char at[64], sub[128];
    snprintf(at, sizeof at, "rules[%zu]", i);
    if (!json_is_object(v)) return bad(c, "%s: must be an object (a PolicyRule)", at);
    r->omit_mf = -1;
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)v, key, val) {
        int rc = 0;
        snprintf(sub, sizeof sub, "%s.%s", at, key);
        if (!strcmp(key, "level")) {
            if (!json_is_string(val) && !json_is_null(val))
                return bad(c, "%s: must be a string", sub);
        } else if (!strcmp(key, "users")) {
            rc = get_strs(c, val, sub, &r->users);
        } else if (!strcmp(key, "userGroups")) {
            rc = get_strs(c, val, sub, &r->groups);
        } else if (!strcmp(key, "verbs")) {
            rc = get_strs(c, val, sub, &r->verbs);
        } else if (!strcmp(key, "namespaces")) {
            rc = get_strs(c, val, sub, &r->namespaces);
        } else if (!strcmp(key, "nonResourceURLs")) {
            rc = get_strs(c, val, sub, &r->urls);
        } else if (!strcmp(key, "resources")) {
            rc = read_resources(c, val, sub, r);
        } else if (!strcmp(key, "omitStages")) {
            rc = get_stages(c, val, sub, &r->omit);
        } else if (!strcmp(key, "omitManagedFields")) {
            rc = get_bool(c, val, sub, &r->omit_mf);
        } else {
            unknown(c, at, key);
        }
        if (rc) return rc;
    }
    const char *level = json_string_value(json_object_get(v, "level"));
    if (!level || !*level) return bad(c, "%s.level: Required value", at);
    r->level = -1;
    for (int k = 0; k <= API_AUDIT_REQUEST_RESPONSE; k++)
        if (!strcmp(level, level_names[k])) r->level = k;
    if (r->level < 0)
        return bad(c,
                   "%s.level: Unsupported value: \"%.64s\": supported values: \"None\", "
                   "\"Metadata\", \"Request\", \"RequestResponse\"",
                   at, level);
    for (size_t k = 0; k < r->urls.n; k++) {
        const char *u = r->urls.v[k];
        if (!strcmp(u, "*")) continue;
        if (u[0] != '/')
            return bad(c,
                       "%s.nonResourceURLs[%zu]: Invalid value: \"%.128s\": non-resource URL "
                       "rules must begin with a '/' character",
                       at, k, u);
        const char *star = strchr(u, '*');
        if (star && star[1])
            return bad(c,
                       "%s.nonResourceURLs[%zu]: Invalid value: \"%.128s\": non-resource URL "
                       "wildcards '*' must be the final character of the rule",
                       at, k, u);
    }
    if (r->urls.n && (r->nres || r->namespaces.n))
        return bad(c,
                   "%s.nonResourceURLs: Invalid value: \"%.128s\": rules cannot apply to both "
                   "regular resources and non-resource URLs",
                   at, r->urls.v[0]);
    return 0;
}

static void policy_free(api_audit_policy_t *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->nrules; i++) {
        rule_t *r = &p->rules[i];
        free(r->users.v);
        free(r->groups.v);
        free(r->verbs.v);
        free(r->namespaces.v);
        free(r->urls.v);
        for (size_t k = 0; k < r->nres; k++) {
            free(r->res[k].resources.v);
            free(r->res[k].names.v);
        }
        free(r->res);
    }
    free(p->rules);
    json_decref(p->doc);
    free(p);
}

void apiserver_audit_policy_free(apiserver_audit_policy_t *p)
{
    policy_free(p);
}

static int parse(ctx_t *c, api_audit_policy_t *p, const char *text, size_t len)
{
    static const yamljson_limits_t lim = {.max_depth = API_JSON_DEPTH_MAX,
                                          .max_bytes = API_YAML_BYTES_MAX,
                                          .max_alias_bytes = API_YAML_ALIAS_MAX};
    char yerr[256];
    int rc = yaml_to_json(text, len, &lim, &p->doc, yerr, sizeof yerr);
    if (rc == KP_ENOMEM) return rc;
    if (rc) return bad(c, "not a YAML or JSON document: %s", yerr);
    if (!json_is_object(p->doc)) return bad(c, "the policy must be an object (kind: Policy)");
    const char *key;
    const json_t *val;
    json_object_foreach(p->doc, key, val) {
        rc = 0;
        if (!strcmp(key, "apiVersion") || !strcmp(key, "kind") || !strcmp(key, "rules")) {
            continue; /* below */
        } else if (!strcmp(key, "metadata")) {
            if (!json_is_object(val) && !json_is_null(val))
                return bad(c, "metadata: must be an object");
        } else if (!strcmp(key, "omitStages")) {
            rc = get_stages(c, val, "omitStages", &p->omit);
        } else if (!strcmp(key, "omitManagedFields")) {
            rc = get_bool(c, val, "omitManagedFields", &p->omit_mf);
        } else {
            unknown(c, "", key);
        }
        if (rc) return rc;
    }
    const char *av = json_string_value(json_object_get(p->doc, "apiVersion"));
    const char *kind = json_string_value(json_object_get(p->doc, "kind"));
    if (!av || !*av) return bad(c, "apiVersion: Required value (audit.k8s.io/v1)");
    if (strcmp(av, "audit.k8s.io/v1"))
        return bad(c,
                   "apiVersion: Unsupported value: \"%.64s\": supported values: "
                   "\"audit.k8s.io/v1\"",
                   av);
    if (!kind || !*kind) return bad(c, "kind: Required value (Policy)");
    if (strcmp(kind, "Policy"))
        return bad(c, "kind: Unsupported value: \"%.64s\": supported values: \"Policy\"", kind);
    const json_t *rules = json_object_get(p->doc, "rules");
    if (rules && !json_is_array(rules) && !json_is_null(rules))
        return bad(c, "rules: must be a list of PolicyRules");
    size_t n = json_array_size(rules);
    /* Kubernetes' LoadPolicyFromBytes: "loaded illegal policy with 0 rules" */
    if (!n) return bad(c, "rules: Required value: a policy needs at least one rule");
    if (!(p->rules = calloc(n, sizeof *p->rules))) return KP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        rc = read_rule(c, json_array_get(rules, i), i, &p->rules[p->nrules++]);
        if (rc) return rc;
    }
    return 0;
}

int api_audit_policy_parse(const char *text, size_t len, api_audit_policy_t **out, char *err,
                           size_t errlen, char *warn, size_t warnlen)
{
    *out = NULL;
    if (err && errlen) err[0] = '\0';
    if (warn && warnlen) warn[0] = '\0';
    ctx_t c = {.err = err, .errlen = errlen, .warn = warn, .warnlen = warnlen};
    api_audit_policy_t *p = calloc(1, sizeof *p);
    if (!p) return KP_ENOMEM;
    int rc = parse(&c, p, text, len);
    if (rc) {
        if (rc == KP_ENOMEM && err && errlen) snprintf(err, errlen, "out of memory");
        policy_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int apiserver_audit_policy_load(const char *path, apiserver_audit_policy_t **out, char *err,
                                size_t errlen, char *warn, size_t warnlen)
{
    *out = NULL;
    if (warn && warnlen) warn[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return e == ENOENT ? KP_ENOTFOUND : KP_EIO;
    }
    buf_t b;
    buf_init(&b, POLICY_FILE_MAX);
    char chunk[8192];
    size_t n;
    int rc = 0;
    while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = buf_append(&b, chunk, n);
    int rerr = ferror(f);
    fclose(f);
    if (rc == KP_ETOOLARGE) {
        snprintf(err, errlen, "%s: larger than %u bytes", path, POLICY_FILE_MAX);
        rc = KP_EINVAL;
    } else if (!rc && rerr) {
        snprintf(err, errlen, "%s: read error", path);
        rc = KP_EIO;
    } else if (!rc) {
        char why[1024];
        rc = api_audit_policy_parse(b.p ? b.p : "", b.len, out, why, sizeof why, warn, warnlen);
        if (rc) snprintf(err, errlen, "%s: %s", path, why);
    }
    buf_free(&b);
    return rc;
}

/* ---- evaluating (Kubernetes' policy checker) ---- */

static int has(const strs_t *s, const char *v)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], v)) return 1;
    return 0;
}

/* A nonResourceURLs entry: "*", the path itself, or a prefix ending in '*'. */
static int path_matches(const char *path, const char *spec)
{
    if (!strcmp(spec, "*") || !strcmp(spec, path)) return 1;
    size_t n = strlen(spec);
    while (n && spec[n - 1] == '*')
        n--;
    return n < strlen(spec) && !strncmp(path, spec, n);
}

static int resource_matches(const rule_t *r, const api_attrs_t *a)
{
    if (!a->resource_request) return 0;
    if (r->namespaces.n && !has(&r->namespaces, a->ns)) return 0;
    if (!r->nres) return 1;
    for (size_t i = 0; i < r->nres; i++) {
        const group_res_t *g = &r->res[i];
        if (strcmp(g->group, a->group)) continue;
        if (!g->resources.n) return 1;
        if (g->names.n && !has(&g->names, a->name)) continue;
        for (size_t k = 0; k < g->resources.n; k++) {
            const char *res = g->resources.v[k];
            size_t rl = strlen(a->resource), n = strlen(res);
            if (!strcmp(res, "*")) return 1;
            /* "resource" without a subresource, "resource/subresource" with one */
            if (!*a->sub && !strcmp(res, a->resource)) return 1;
            if (*a->sub && !strncmp(res, a->resource, rl) && res[rl] == '/' &&
                !strcmp(res + rl + 1, a->sub))
                return 1;
            /* "*\/subresource" */
            if (*a->sub && n > 2 && !strncmp(res, "*/", 2) && !strcmp(res + 2, a->sub)) return 1;
            /* "resource/\*": the resource's subresources, and (as Kubernetes
             * matches it) the resource itself */
            if (n >= 2 && !strcmp(res + n - 2, "/*") && n - 2 == rl &&
                !strncmp(res, a->resource, rl))
                return 1;
        }
    }
    return 0;
}

static int rule_matches(const rule_t *r, const api_attrs_t *a)
{
    const api_user_t *u = a->user;
    if (r->users.n && (!u || !u->name || !has(&r->users, u->name))) return 0;
    if (r->groups.n) {
        int in = 0;
        for (size_t i = 0; u && i < u->ngroups && !in; i++)
            in = has(&r->groups, u->groups[i]);
        if (!in) return 0;
    }
    if (r->verbs.n && !has(&r->verbs, a->verb)) return 0;
    if (r->namespaces.n || r->nres) return resource_matches(r, a);
    if (r->urls.n) {
        if (a->resource_request) return 0;
        for (size_t i = 0; i < r->urls.n; i++)
            if (path_matches(a->path, r->urls.v[i])) return 1;
        return 0;
    }
    return 1;
}

void api_audit_policy_eval(const api_audit_policy_t *p, const api_attrs_t *a,
                           api_audit_verdict_t *out)
{
    *out = (api_audit_verdict_t){
        .level = API_AUDIT_NONE, .omit_stages = p->omit, .omit_managed_fields = p->omit_mf};
    for (size_t i = 0; i < p->nrules; i++) {
        const rule_t *r = &p->rules[i];
        if (!rule_matches(r, a)) continue;
        out->level = r->level;
        out->omit_stages = p->omit | r->omit;
        if (r->omit_mf >= 0) out->omit_managed_fields = r->omit_mf;
        return;
    }
}
