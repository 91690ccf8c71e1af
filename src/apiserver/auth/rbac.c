/*
 * rbac.c -- Kubernetes' RBAC authorizer, its rule resolver and its
 * escalation check (plugin/pkg/auth/authorizer/rbac and
 * pkg/registry/rbac/validation in Kubernetes), over a snapshot of the four
 * RBAC watch caches.
 *
 * A request is allowed when some rule reachable from the user allows it: a
 * ClusterRoleBinding naming the user (by name, by one of its groups, or as
 * the ServiceAccount it is) grants its ClusterRole's rules everywhere; a
 * RoleBinding grants its Role's or ClusterRole's rules in the binding's
 * namespace only. A rule allows when its verbs, API groups, resources
 * (with "*", "resource/subresource" and "* /subresource" forms) and
 * resourceNames (none: any name) all match, or, for a request with no
 * resource, its verbs and nonResourceURLs (exact, "*", or a prefix ending
 * in "*"). Nothing denies: without an allowing rule there is no opinion.
 *
 * The snapshot: every Role and ClusterRole compiled to arrays of strings,
 * sorted by (namespace, name); every binding's subjects as entries sorted
 * by (kind, name), so that a request looks up its user and each group in
 * O(log n) and never walks unrelated bindings. It is rebuilt on a thread of
 * its own whenever one of the four caches changes (their watchers' on_ready
 * wake it), and at least every RBAC_RESYNC_MS; requests take a reference to
 * the current one under a mutex held for a pointer copy, so a decision never
 * waits for a rebuild. Strings point into the snapshot's parsed objects,
 * which it owns.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/auth/rbac.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/watchcache.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/store.h"

#define RBAC_RESYNC_MS 30000
#define RBAC_GROUP     "rbac.authorization.k8s.io"

enum { R_ROLES, R_CLUSTERROLES, R_ROLEBINDINGS, R_CLUSTERROLEBINDINGS, R_COUNT };
static const char *const rbac_resources[R_COUNT] = {"roles", "clusterroles", "rolebindings",
                                                    "clusterrolebindings"};

typedef struct strs {
    const char **v;
    size_t n;
} strs_t;

typedef struct rule {
    strs_t verbs, groups, resources, names, urls;
} rule_t;

typedef struct role {
    const char *ns; /* "" for a ClusterRole */
    const char *name;
    rule_t *rules;
    size_t n;
    const json_t *rules_json; /* the object's rules (borrowed from the snapshot) */
} role_t;

/* One subject of one binding. */
typedef struct bref {
    char kind;           /* 'u' user, 'g' group */
    const char *subject; /* user or group name */
    const char *ns;      /* the binding's namespace, "" for a ClusterRoleBinding */
    const char *role_ns; /* "" for a ClusterRole */
    const char *role;
    const char *binding; /* the binding's name */
    const json_t *sub;   /* the subject as written */
} bref_t;

typedef struct snap {
    atomic_int refs;
    json_t *objs; /* every object read (owns the strings below) */
    role_t *roles;
    size_t nroles;
    bref_t *brefs;
    size_t nbrefs;
    char **owned; /* ServiceAccount user names built here */
    size_t nowned;
    const char **ptrs; /* the string arrays of every rule, one block (owned) */
} snap_t;

struct rbac {
    wc_t *caches[R_COUNT];
    wc_watcher_t *w[R_COUNT];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int dirty, stop, started;
    snap_t *cur; /* guarded by mu */
};

/* ---- snapshots ---- */

static void snap_unref(snap_t *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    for (size_t i = 0; i < s->nroles; i++)
        free(s->roles[i].rules);
    free(s->roles);
    free(s->brefs);
    for (size_t i = 0; i < s->nowned; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s->ptrs);
    json_decref(s->objs);
    free(s);
}

static snap_t *snap_get(rbac_t *z)
{
    pthread_mutex_lock(&z->mu);
    snap_t *s = z->cur;
    if (s) atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&z->mu);
    return s;
}

static const char *str_or(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

/* The strings of array a into dst (only string members). */
static void strs_of(const json_t *a, strs_t *dst, const char ***next)
{
    dst->v = *next;
    dst->n = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(a, i, e)
        if (json_is_string(e)) dst->v[dst->n++] = json_string_value(e);
    *next += dst->n;
}

static size_t count_strs(const json_t *rules)
{
    static const char *const keys[] = {"verbs", "apiGroups", "resources", "resourceNames",
                                       "nonResourceURLs"};
    size_t n = 0, i;
    const json_t *r;
    json_array_foreach(rules, i, r)
        for (size_t k = 0; k < 5; k++)
            n += json_array_size(json_object_get(r, keys[k]));
    return n;
}

static int cmp_role(const void *a, const void *b)
{
    const role_t *x = a, *y = b;
    int c = strcmp(x->ns, y->ns);
    return c ? c : strcmp(x->name, y->name);
}

static int cmp_bref(const void *a, const void *b)
{
    const bref_t *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return strcmp(x->subject, y->subject);
}

static const role_t *find_role(const snap_t *s, const char *ns, const char *name)
{
    role_t key = {.ns = ns, .name = name};
    return bsearch(&key, s->roles, s->nroles, sizeof key, cmp_role);
}

/* Every object of the four caches, parsed, in objs[kind]. */
/* Parsing the objects is most of a rebuild (the bootstrap policy's 124:
 * about 1.5 ms); beyond this many, a second thread parses half of them. */
#define RBAC_PARSE_SPLIT 64

typedef struct parse_job {
    const wc_obj_t *const *in; /* every list's objects, in order */
    json_t **out;              /* their trees (NULL: did not parse) */
    size_t from, to;
} parse_job_t;

static void *parse_range(void *arg)
{
    parse_job_t *j = arg;
    for (size_t i = j->from; i < j->to; i++)
        if (wc_obj_copy(j->in[i], &j->out[i])) j->out[i] = NULL;
    return NULL;
}

/* The four caches' objects, parsed: objs[k] a new array for kind k. */
static int read_caches(rbac_t *z, json_t *objs[R_COUNT])
{
    wc_list_t *l[R_COUNT] = {0};
    size_t n = 0;
    int rc = 0;
    for (int k = 0; k < R_COUNT && !rc; k++)
        if (z->caches[k] && !(rc = wc_list(z->caches[k], "", NULL, 0, 0, 0, &l[k])))
            n += l[k]->count;
    const wc_obj_t **in = rc ? NULL : malloc((n ? n : 1) * sizeof *in);
    json_t **out = in ? calloc(n ? n : 1, sizeof *out) : NULL;
    if (!rc && !out) rc = KP_ENOMEM;
    if (!rc) {
        size_t at = 0;
        for (int k = 0; k < R_COUNT; k++)
            for (size_t i = 0; l[k] && i < l[k]->count; i++)
                in[at++] = l[k]->objs[i];
        parse_job_t half = {in, out, n / 2, n}, rest = {in, out, 0, n / 2};
        pthread_t th;
        int split = n > RBAC_PARSE_SPLIT && !pthread_create(&th, NULL, parse_range, &half);
        if (!split) rest.to = n;
        parse_range(&rest);
        if (split) pthread_join(th, NULL);
    }
    size_t at = 0;
    for (int k = 0; k < R_COUNT; k++) {
        if (!rc && !(objs[k] = json_array())) rc = KP_ENOMEM;
        for (size_t i = 0; l[k] && i < l[k]->count; i++, at++)
            if (out && out[at] && (rc || json_array_append_new(objs[k], out[at]))) {
                if (!rc)
                    rc = KP_ENOMEM; /* append_new freed it */
                else
                    json_decref(out[at]);
            }
        wc_list_free(l[k]);
    }
    free(in);
    free(out);
    return rc;
}

static int snap_build(rbac_t *z, snap_t **out)
{
    *out = NULL;
    snap_t *s = calloc(1, sizeof *s);
    json_t *objs[R_COUNT] = {0};
    if (!s || !(s->objs = json_array())) {
        free(s);
        return KP_ENOMEM;
    }
    atomic_init(&s->refs, 1);
    int rc = read_caches(z, objs);
    for (int k = 0; k < R_COUNT; k++)
        if (objs[k]) json_array_append_new(s->objs, objs[k]);
    if (rc) goto fail;

    /* Roles: count, then fill. */
    size_t nroles = json_array_size(objs[R_ROLES]) + json_array_size(objs[R_CLUSTERROLES]);
    size_t nstr = 0;
    for (int k = R_ROLES; k <= R_CLUSTERROLES; k++) {
        size_t i;
        const json_t *o;
        json_array_foreach(objs[k], i, o)
            nstr += count_strs(json_object_get(o, "rules"));
    }
    s->roles = calloc(nroles ? nroles : 1, sizeof *s->roles);
    s->ptrs = calloc(nstr ? nstr : 1, sizeof *s->ptrs);
    if (!s->roles || !s->ptrs) {
        rc = KP_ENOMEM;
        goto fail;
    }
    const char **next = s->ptrs;
    for (int k = R_ROLES; k <= R_CLUSTERROLES; k++) {
        size_t i;
        const json_t *o;
        json_array_foreach(objs[k], i, o) {
            const json_t *meta = json_object_get(o, "metadata");
            const json_t *rules = json_object_get(o, "rules");
            role_t *r = &s->roles[s->nroles];
            r->ns = k == R_ROLES ? str_or(meta, "namespace") : "";
            r->name = str_or(meta, "name");
            r->rules_json = rules;
            size_t n = json_array_size(rules);
            if (n && !(r->rules = calloc(n, sizeof *r->rules))) {
                rc = KP_ENOMEM;
                goto fail;
            }
            size_t j;
            const json_t *ru;
            json_array_foreach(rules, j, ru) {
                rule_t *x = &r->rules[r->n++];
                strs_of(json_object_get(ru, "verbs"), &x->verbs, &next);
                strs_of(json_object_get(ru, "apiGroups"), &x->groups, &next);
                strs_of(json_object_get(ru, "resources"), &x->resources, &next);
                strs_of(json_object_get(ru, "resourceNames"), &x->names, &next);
                strs_of(json_object_get(ru, "nonResourceURLs"), &x->urls, &next);
            }
            s->nroles++;
        }
    }
    qsort(s->roles, s->nroles, sizeof *s->roles, cmp_role);

    /* Bindings' subjects. */
    size_t nsub = 0;
    for (int k = R_ROLEBINDINGS; k <= R_CLUSTERROLEBINDINGS; k++) {
        size_t i;
        const json_t *o;
        json_array_foreach(objs[k], i, o)
            nsub += json_array_size(json_object_get(o, "subjects"));
    }
    s->brefs = calloc(nsub ? nsub : 1, sizeof *s->brefs);
    s->owned = calloc(nsub ? nsub : 1, sizeof *s->owned);
    if (!s->brefs || !s->owned) {
        rc = KP_ENOMEM;
        goto fail;
    }
    for (int k = R_ROLEBINDINGS; k <= R_CLUSTERROLEBINDINGS; k++) {
        size_t i;
        const json_t *o;
        json_array_foreach(objs[k], i, o) {
            const json_t *meta = json_object_get(o, "metadata");
            const json_t *ref = json_object_get(o, "roleRef");
            const char *ns = k == R_ROLEBINDINGS ? str_or(meta, "namespace") : "";
            const char *rkind = str_or(ref, "kind");
            /* A ClusterRoleBinding may refer to a ClusterRole only. */
            const char *role_ns = !strcmp(rkind, "Role") ? ns : "";
            if (strcmp(rkind, "ClusterRole") &&
                (k == R_CLUSTERROLEBINDINGS || strcmp(rkind, "Role")))
                continue;
            size_t j;
            const json_t *sub;
            json_array_foreach(json_object_get(o, "subjects"), j, sub) {
                const char *skind = str_or(sub, "kind"), *sname = str_or(sub, "name");
                bref_t b = {.ns = ns,
                            .role_ns = role_ns,
                            .role = str_or(ref, "name"),
                            .binding = str_or(meta, "name"),
                            .sub = sub};
                if (!strcmp(skind, "User")) {
                    b.kind = 'u';
                    b.subject = sname;
                } else if (!strcmp(skind, "Group")) {
                    b.kind = 'g';
                    b.subject = sname;
                } else if (!strcmp(skind, "ServiceAccount")) {
                    /* Its namespace defaults to the binding's, as
                     * Kubernetes' appliesTo reads it. */
                    const char *sns = str_or(sub, "namespace");
                    if (!*sns) sns = ns;
                    if (!*sns || !*sname) continue;
                    char *u = NULL;
                    if (asprintf(&u, "system:serviceaccount:%s:%s", sns, sname) < 0) {
                        rc = KP_ENOMEM;
                        goto fail;
                    }
                    s->owned[s->nowned++] = u;
                    b.kind = 'u';
                    b.subject = u;
                } else {
                    continue;
                }
                s->brefs[s->nbrefs++] = b;
            }
        }
    }
    qsort(s->brefs, s->nbrefs, sizeof *s->brefs, cmp_bref);
    *out = s;
    return 0;
fail:
    snap_unref(s);
    return rc;
}

/* ---- matching (Kubernetes' rbac.RuleAllows) ---- */

static int has(const strs_t *s, const char *v)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], v)) return 1;
    return 0;
}

static int has_or_all(const strs_t *s, const char *v)
{
    return has(s, "*") || has(s, v);
}

static int resource_matches(const rule_t *r, const char *res, const char *sub)
{
    size_t rl = strlen(res), sl = strlen(sub);
    for (size_t i = 0; i < r->resources.n; i++) {
        const char *x = r->resources.v[i];
        if (!strcmp(x, "*")) return 1;
        /* "resource" or "resource/subresource", exactly. */
        if (!strncmp(x, res, rl) && (sl ? x[rl] == '/' && !strcmp(x + rl + 1, sub) : x[rl] == '\0'))
            return 1;
        /* "* /subresource" */
        if (sl && x[0] == '*' && x[1] == '/' && !strcmp(x + 2, sub)) return 1;
    }
    return 0;
}

static int url_matches(const strs_t *urls, const char *path)
{
    for (size_t i = 0; i < urls->n; i++) {
        const char *u = urls->v[i];
        size_t n = strlen(u);
        if (!strcmp(u, "*") || !strcmp(u, path)) return 1;
        if (n && u[n - 1] == '*' && !strncmp(u, path, n - 1)) return 1;
    }
    return 0;
}

static int rule_allows(const rule_t *r, const api_attrs_t *a)
{
    if (!has_or_all(&r->verbs, a->verb)) return 0;
    if (!a->resource_request) return url_matches(&r->urls, a->path);
    return has_or_all(&r->groups, a->group) && resource_matches(r, a->resource, a->sub) &&
           (!r->names.n || has(&r->names, a->name));
}

/* A PolicyRule object read into a rule_t over fixed arrays (the first 64
 * strings of each list: a longer list is cut, never overrun). */
typedef struct json_rule {
    rule_t r;
    const char *v[5][64];
} json_rule_t;

static void json_rule_of(const json_t *o, json_rule_t *jr)
{
    static const char *const keys[5] = {"verbs", "apiGroups", "resources", "resourceNames",
                                        "nonResourceURLs"};
    strs_t *dst[5] = {&jr->r.verbs, &jr->r.groups, &jr->r.resources, &jr->r.names, &jr->r.urls};
    for (int k = 0; k < 5; k++) {
        dst[k]->v = jr->v[k];
        dst[k]->n = 0;
        size_t i;
        const json_t *e;
        json_array_foreach(json_object_get(o, keys[k]), i, e)
            if (json_is_string(e) && dst[k]->n < 64) jr->v[k][dst[k]->n++] = json_string_value(e);
    }
}

int rbac_json_rules_allow(const json_t *rules, const api_attrs_t *a)
{
    size_t i;
    const json_t *o;
    json_array_foreach(rules, i, o) {
        json_rule_t jr;
        json_rule_of(o, &jr);
        if (rule_allows(&jr.r, a)) return 1;
    }
    return 0;
}

/* Call fn for every role that applies to `u` in `ns` ("": cluster-wide
 * bindings only), once per binding subject that names the user; stops when
 * fn returns nonzero and returns that. */
static int visit_roles(const snap_t *s, const api_user_t *u, const char *ns,
                       int (*fn)(void *arg, const bref_t *b, const role_t *role), void *arg)
{
    for (size_t q = 0; q <= u->ngroups; q++) {
        bref_t key = {.kind = q ? 'g' : 'u', .subject = q ? u->groups[q - 1] : u->name};
        /* The first entry of the key's range. */
        size_t lo = 0, hi = s->nbrefs;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_bref(&s->brefs[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < s->nbrefs && !cmp_bref(&s->brefs[i], &key); i++) {
            const bref_t *b = &s->brefs[i];
            if (*b->ns && (!ns || strcmp(b->ns, ns))) continue;
            const role_t *role = find_role(s, b->role_ns, b->role);
            int rc = fn(arg, b, role); /* role NULL: it does not exist */
            if (rc) return rc;
        }
    }
    return 0;
}

typedef struct decide {
    const api_attrs_t *a;
    char *reason;
    size_t len;
    int missing; /* roles not found, named in reason */
} decide_t;

/* Kubernetes' describeSubject. */
static void describe_subject(const bref_t *b, char *out, size_t len)
{
    const char *kind = str_or(b->sub, "kind"), *name = str_or(b->sub, "name");
    if (!strcmp(kind, "ServiceAccount")) {
        const char *ns = str_or(b->sub, "namespace");
        snprintf(out, len, "%s \"%s/%s\"", kind, name, *ns ? ns : b->ns);
    } else {
        snprintf(out, len, "%s \"%s\"", kind, name);
    }
}

static int allows_fn(void *arg, const bref_t *b, const role_t *role)
{
    decide_t *d = arg;
    const char *rkind = *b->role_ns ? "Role" : "ClusterRole";
    if (!role) {
        /* As Kubernetes' visitor reports a binding to a missing role: the
         * reason of a denial lists them. */
        if (d->len && d->missing < 8) {
            size_t used = strlen(d->reason);
            snprintf(d->reason + used, d->len - used,
                     "%s%s.rbac.authorization.k8s.io \"%s\" not found", d->missing ? ", " : "",
                     *b->role_ns ? "role" : "clusterrole", b->role);
        }
        d->missing++;
        return 0;
    }
    for (size_t i = 0; i < role->n; i++)
        if (rule_allows(&role->rules[i], d->a)) {
            if (d->len) {
                char subj[300];
                describe_subject(b, subj, sizeof subj);
                if (*b->ns)
                    snprintf(d->reason, d->len,
                             "RBAC: allowed by RoleBinding \"%s/%s\" of %s \"%s\" to %s",
                             b->binding, b->ns, rkind, b->role, subj);
                else
                    snprintf(d->reason, d->len,
                             "RBAC: allowed by ClusterRoleBinding \"%s\" of %s \"%s\" to %s",
                             b->binding, rkind, b->role, subj);
            }
            return 1;
        }
    return 0;
}

int rbac_allows(rbac_t *z, const api_attrs_t *a, char *reason, size_t len)
{
    char missing[512] = "";
    decide_t d = {.a = a, .reason = missing, .len = reason && len ? sizeof missing : 0};
    if (reason && len) reason[0] = '\0';
    snap_t *s = snap_get(z);
    if (!s) return 0;
    int ok = visit_roles(s, a->user, *a->ns ? a->ns : NULL, allows_fn, &d) == 1;
    snap_unref(s);
    if (reason && len) {
        if (ok)
            snprintf(reason, len, "%s", missing);
        else if (d.missing == 1)
            snprintf(reason, len, "RBAC: %s", missing);
        else if (d.missing)
            snprintf(reason, len, "RBAC: [%s]", missing);
    }
    return ok;
}

/* ---- the rules a user holds ---- */

typedef struct collect {
    json_t *rules; /* PolicyRule objects */
    int oom;
} collect_t;

static int collect_fn(void *arg, const bref_t *b, const role_t *role)
{
    collect_t *c = arg;
    (void)b;
    if (!role) return 0;
    size_t i;
    const json_t *r;
    json_array_foreach(role->rules_json, i, r) {
        /* A copy: the snapshot's trees are shared with other threads. */
        json_t *copy = json_deep_copy(r);
        if (!copy || json_array_append_new(c->rules, copy)) c->oom = 1;
    }
    return 0;
}

int rbac_rules_for(rbac_t *z, const api_user_t *u, const char *ns, json_t **rules)
{
    collect_t c = {.rules = json_array()};
    if (!c.rules) return KP_ENOMEM;
    snap_t *s = snap_get(z);
    if (s) visit_roles(s, u, *ns ? ns : NULL, collect_fn, &c);
    snap_unref(s);
    if (c.oom) {
        json_decref(c.rules);
        return KP_ENOMEM;
    }
    *rules = c.rules;
    return 0;
}

int rbac_role_rules(rbac_t *z, const char *ns, const char *kind, const char *name, json_t **rules)
{
    *rules = NULL;
    snap_t *s = snap_get(z);
    const role_t *r = s ? find_role(s, !strcmp(kind, "Role") ? ns : "", name) : NULL;
    int rc = 0;
    if (r && !(*rules = r->rules_json ? json_deep_copy(r->rules_json) : json_array()))
        rc = KP_ENOMEM;
    snap_unref(s);
    return rc;
}

/* ---- the rebuild thread ---- */

static void wake(void *arg)
{
    rbac_t *z = arg;
    pthread_mutex_lock(&z->mu);
    z->dirty = 1;
    pthread_cond_signal(&z->cond);
    pthread_mutex_unlock(&z->mu);
}

static int watch(rbac_t *z, int k)
{
    if (!z->caches[k]) return 0;
    /* In-process and prompt: bounded by count, not by bytes; a watcher that
     * falls behind anyway is opened again (and the snapshot rebuilt). */
    wc_watch_opts_t wo = {.backlog = 100000,
                          .backlog_bytes = SIZE_MAX,
                          .on_ready = wake,
                          .on_ready_arg = z,
                          .on_end = wake,
                          .on_end_arg = z};
    return wc_watch(z->caches[k], "", -1, &wo, &z->w[k]);
}

/* Drain every watcher; reopen an ended one. */
static void drain(rbac_t *z)
{
    for (int k = 0; k < R_COUNT; k++) {
        if (!z->w[k]) continue;
        wc_event_t ev;
        int rc;
        while (!(rc = wc_watcher_next(z->w[k], 0, &ev)))
            wc_event_clear(&ev);
        if (rc != KP_ETIMEDOUT) {
            wc_watcher_close(z->w[k]);
            z->w[k] = NULL;
            if (rc != KP_ECLOSED && watch(z, k))
                log_warn("rbac", "watching %s again failed", rbac_resources[k]);
        }
    }
}

static void publish(rbac_t *z)
{
    snap_t *s = NULL;
    int rc = snap_build(z, &s);
    if (rc) {
        log_warn("rbac", "rebuilding the RBAC snapshot: %s", err_str(rc));
        wake(z); /* again on the next round */
        return;
    }
    pthread_mutex_lock(&z->mu);
    snap_t *old = z->cur;
    z->cur = s;
    pthread_mutex_unlock(&z->mu);
    snap_unref(old);
}

static void *run(void *arg)
{
    rbac_t *z = arg;
    for (;;) {
        pthread_mutex_lock(&z->mu);
        if (!z->dirty && !z->stop) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += RBAC_RESYNC_MS / 1000;
            pthread_cond_timedwait(&z->cond, &z->mu, &ts);
        }
        int stop = z->stop;
        z->dirty = 0;
        pthread_mutex_unlock(&z->mu);
        if (stop) break;
        drain(z);
        publish(z);
    }
    return NULL;
}

int rbac_start(apiserver_t *srv, rbac_t **out)
{
    *out = NULL;
    rbac_t *z = calloc(1, sizeof *z);
    if (!z) return KP_ENOMEM;
    pthread_mutex_init(&z->mu, NULL);
    pthread_cond_init(&z->cond, NULL);
    api_view_t *v = api_view_get(srv);
    for (int k = 0; k < R_COUNT; k++) {
        size_t i = 0;
        if (api_view_find(v, RBAC_GROUP, "v1", rbac_resources[k], &i)) z->caches[k] = v->caches[i];
    }
    api_view_put(v);
    int rc = 0;
    /* The first snapshot holds every write made before the start (the
     * bootstrap policy): the caches catch up to the store's revision. */
    int64_t rev = 0;
    if (!store_revision(srv->cfg.store, &rev))
        for (int k = 0; k < R_COUNT; k++)
            if (z->caches[k]) wc_wait(z->caches[k], rev, 10000);
    /* Watch first, then build: a change between the two wakes the thread. */
    for (int k = 0; k < R_COUNT && !rc; k++)
        rc = watch(z, k);
    if (!rc) publish(z);
    if (!rc && pthread_create(&z->thread, NULL, run, z)) rc = KP_ENOMEM;
    if (rc) {
        rbac_stop(z);
        return rc;
    }
    z->started = 1;
    *out = z;
    return 0;
}

void rbac_stop(rbac_t *z)
{
    if (!z) return;
    if (z->started) {
        pthread_mutex_lock(&z->mu);
        z->stop = 1;
        pthread_cond_signal(&z->cond);
        pthread_mutex_unlock(&z->mu);
        pthread_join(z->thread, NULL);
    }
    for (int k = 0; k < R_COUNT; k++)
        if (z->w[k]) wc_watcher_close(z->w[k]);
    snap_unref(z->cur);
    pthread_cond_destroy(&z->cond);
    pthread_mutex_destroy(&z->mu);
    free(z);
}
