/*
 * discovery.c -- discovery snapshots and the deferred RESTMapper
 * (discovery.h).
 *
 * INVARIANTS
 *   1. A snapshot never changes after kc_restmap_build returns it; it is
 *      freed when its last reference goes.
 *   2. d->map is replaced whole, under d->mu; readers take a reference
 *      under d->mu and read without it.
 *   3. At most one read of the server runs at a time (d->read_mu); a
 *      caller that waited for it uses the snapshot it produced when that
 *      read started after the caller asked (or is young enough for it),
 *      instead of reading again.
 *
 * A read: GET /api (versions; kplane and Kubernetes serve "v1"), /api/<v>,
 * GET /apis (groups, each with its versions and preferred version), then
 * /apis/<group>/<version> for each. Subresources ("pods/status") are not
 * resources of their own and are skipped; so are names over the bounds.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/discovery.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

struct kc_restmap {
    pthread_mutex_t mu; /* guards refs */
    int refs;
    kc_api_resource_t *res;
    size_t n, cap;
    size_t failed;
};

struct kc_discovery {
    kc_client_t *c;
    kc_discovery_config_t cfg;
    pthread_mutex_t mu;      /* guards map, read_ns, reads */
    pthread_mutex_t read_mu; /* one read at a time */
    kc_restmap_t *map;
    int64_t read_ns; /* monotonic time the current map's read started; 0: none */
    uint64_t reads;
};

/* ---- snapshots ---- */

static void map_free(kc_restmap_t *m)
{
    pthread_mutex_destroy(&m->mu);
    free(m->res);
    free(m);
}

kc_restmap_t *kc_restmap_ref(kc_restmap_t *m)
{
    pthread_mutex_lock(&m->mu);
    m->refs++;
    pthread_mutex_unlock(&m->mu);
    return m;
}

void kc_restmap_unref(kc_restmap_t *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    int left = --m->refs;
    pthread_mutex_unlock(&m->mu);
    if (!left) map_free(m);
}

size_t kc_restmap_count(const kc_restmap_t *m)
{
    return m ? m->n : 0;
}

const kc_api_resource_t *kc_restmap_at(const kc_restmap_t *m, size_t i)
{
    return m && i < m->n ? &m->res[i] : NULL;
}

size_t kc_restmap_failed(const kc_restmap_t *m)
{
    return m ? m->failed : 0;
}

const kc_api_resource_t *kc_restmap_for_kind(const kc_restmap_t *m, const char *api_version,
                                             const char *kind)
{
    if (!m || !api_version || !kind) return NULL;
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->res[i].kind, kind) && !strcmp(m->res[i].api_version, api_version))
            return &m->res[i];
    return NULL;
}

const kc_api_resource_t *kc_restmap_for_group_kind(const kc_restmap_t *m, const char *group,
                                                   const char *kind)
{
    if (!m || !group || !kind) return NULL;
    const kc_api_resource_t *any = NULL;
    for (size_t i = 0; i < m->n; i++) {
        const kc_api_resource_t *e = &m->res[i];
        if (strcmp(e->kind, kind) || strcmp(e->group, group)) continue;
        if (e->preferred) return e;
        if (!any) any = e;
    }
    return any;
}

const kc_api_resource_t *kc_restmap_for_resource(const kc_restmap_t *m, const char *group,
                                                 const char *version, const char *resource)
{
    if (!m || !group || !resource) return NULL;
    for (size_t i = 0; i < m->n; i++) {
        const kc_api_resource_t *e = &m->res[i];
        if (strcmp(e->resource, resource) || strcmp(e->group, group)) continue;
        if (version ? !strcmp(e->version, version) : e->preferred) return e;
    }
    return NULL;
}

int kc_restmap_same(const kc_restmap_t *a, const kc_restmap_t *b)
{
    if (!a || !b || a->n != b->n) return a == b;
    for (size_t i = 0; i < a->n; i++) {
        const kc_api_resource_t *x = &a->res[i], *y = &b->res[i];
        if (strcmp(x->api_version, y->api_version) || strcmp(x->resource, y->resource) ||
            strcmp(x->kind, y->kind) || x->r.namespaced != y->r.namespaced ||
            x->verbs != y->verbs || x->preferred != y->preferred)
            return 0;
    }
    return 1;
}

static unsigned verbs_of(const json_t *list)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"get", KC_VERB_GET},
                 {"list", KC_VERB_LIST},
                 {"watch", KC_VERB_WATCH},
                 {"create", KC_VERB_CREATE},
                 {"update", KC_VERB_UPDATE},
                 {"patch", KC_VERB_PATCH},
                 {"delete", KC_VERB_DELETE},
                 {"deletecollection", KC_VERB_DELETECOLLECTION}};
    unsigned v = 0;
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        const char *s = json_string_value(e);
        for (size_t k = 0; s && k < sizeof names / sizeof names[0]; k++)
            if (!strcmp(s, names[k].name)) v |= names[k].bit;
    }
    return v;
}

/* Copy s into dst[n]; 0 if it does not fit (or is absent/empty). */
static int put(char *dst, size_t n, const char *s)
{
    if (!s || !*s || strlen(s) >= n) return 0;
    memcpy(dst, s, strlen(s) + 1);
    return 1;
}

/* Add the resources of one APIResourceList (group "" for core). */
static int add_list(kc_restmap_t *m, const char *group, const char *version, int preferred,
                    const json_t *doc)
{
    const json_t *list = json_object_get(doc, "resources");
    if (!json_is_array(list)) return KP_ECORRUPT;
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r) {
        const char *name = json_string_value(json_object_get(r, "name"));
        if (!name || strchr(name, '/')) continue; /* a subresource */
        if (m->n == KC_DISCOVERY_MAX_RESOURCES) return KP_ETOOLARGE;
        if (m->n == m->cap) {
            size_t cap = m->cap ? m->cap * 2 : 64;
            kc_api_resource_t *grown = realloc(m->res, cap * sizeof *grown);
            if (!grown) return KP_ENOMEM;
            m->res = grown;
            m->cap = cap;
        }
        kc_api_resource_t *e = &m->res[m->n];
        memset(e, 0, sizeof *e);
        if (!put(e->resource, sizeof e->resource, name) ||
            !put(e->kind, sizeof e->kind, json_string_value(json_object_get(r, "kind"))) ||
            !put(e->version, sizeof e->version, version))
            continue;
        if (*group && !put(e->group, sizeof e->group, group)) continue;
        if (*group)
            snprintf(e->api_version, sizeof e->api_version, "%s/%s", group, version);
        else
            snprintf(e->api_version, sizeof e->api_version, "%s", version);
        e->verbs = verbs_of(json_object_get(r, "verbs"));
        e->preferred = preferred;
        e->r = (kc_resource_t){e->group, e->version, e->resource, e->kind,
                               json_is_true(json_object_get(r, "namespaced"))};
        m->n++;
    }
    return 0;
}

/* Fetch and add one group-version; a document that cannot be read counts
 * as failed and is left out. Only running out of bounds or memory fails. */
static int add_group_version(kc_restmap_t *m, kc_discovery_fetch_fn fetch, void *arg,
                             const char *group, const char *version, int preferred)
{
    char path[600];
    if (*group)
        snprintf(path, sizeof path, "/apis/%s/%s", group, version);
    else
        snprintf(path, sizeof path, "/api/%s", version);
    json_t *doc = NULL;
    int rc = fetch(arg, path, &doc);
    if (!rc) rc = add_list(m, group, version, preferred, doc);
    json_decref(doc);
    if (rc == KP_ETOOLARGE || rc == KP_ENOMEM) return rc;
    if (rc) {
        log_warn("discovery", "%s: %s", path, err_str(rc));
        m->failed++;
    }
    return 0;
}

static int valid_name(const char *s, size_t max)
{
    return s && *s && strlen(s) < max && !strchr(s, '/') && !strchr(s, '?');
}

int kc_restmap_build(kc_discovery_fetch_fn fetch, void *arg, kc_restmap_t **out)
{
    *out = NULL;
    kc_restmap_t *m = calloc(1, sizeof *m);
    if (!m) return KP_ENOMEM;
    pthread_mutex_init(&m->mu, NULL);
    m->refs = 1;
    json_t *core = NULL, *groups = NULL;
    size_t gvs = 0, i, k;
    json_t *g, *v;
    int rc = fetch(arg, "/api", &core);
    if (rc) goto fail;
    const json_t *versions = json_object_get(core, "versions");
    if (!json_is_array(versions)) {
        rc = KP_ECORRUPT;
        goto fail;
    }
    json_array_foreach(versions, i, v) {
        const char *ver = json_string_value(v);
        if (!valid_name(ver, sizeof m->res->version)) continue;
        if (++gvs > KC_DISCOVERY_MAX_GROUPS) {
            rc = KP_ETOOLARGE;
            goto fail;
        }
        /* The first listed core version is the preferred one. */
        if ((rc = add_group_version(m, fetch, arg, "", ver, i == 0))) goto fail;
    }
    if ((rc = fetch(arg, "/apis", &groups))) goto fail;
    const json_t *list = json_object_get(groups, "groups");
    if (!json_is_array(list)) {
        rc = KP_ECORRUPT;
        goto fail;
    }
    /* Bounded before any group-version is fetched. */
    json_array_foreach(list, i, g) {
        gvs += json_array_size(json_object_get(g, "versions"));
    }
    if (gvs > KC_DISCOVERY_MAX_GROUPS) {
        rc = KP_ETOOLARGE;
        goto fail;
    }
    json_array_foreach(list, i, g) {
        const char *name = json_string_value(json_object_get(g, "name"));
        const char *pref = json_string_value(
            json_object_get(json_object_get(g, "preferredVersion"), "version"));
        if (!valid_name(name, sizeof m->res->group)) continue;
        json_array_foreach(json_object_get(g, "versions"), k, v) {
            const char *ver = json_string_value(json_object_get(v, "version"));
            if (!valid_name(ver, sizeof m->res->version)) continue;
            int preferred = pref ? !strcmp(pref, ver) : k == 0;
            if ((rc = add_group_version(m, fetch, arg, name, ver, preferred))) goto fail;
        }
    }
    json_decref(core);
    json_decref(groups);
    *out = m;
    return 0;
fail:
    json_decref(core);
    json_decref(groups);
    map_free(m);
    return rc;
}

/* ---- the client ---- */

static int fetch_http(void *arg, const char *path, json_t **out)
{
    return kc_get_path(arg, path, out);
}

int kc_discovery_new(kc_client_t *c, const kc_discovery_config_t *cfg, kc_discovery_t **out)
{
    *out = NULL;
    if (!c && !(cfg && cfg->fetch)) return KP_EINVAL;
    if (cfg && (cfg->period_ms < 0 || cfg->min_interval_ms < 0)) return KP_EINVAL;
    kc_discovery_t *d = calloc(1, sizeof *d);
    if (!d) return KP_ENOMEM;
    d->c = c;
    if (cfg) d->cfg = *cfg;
    if (!d->cfg.period_ms) d->cfg.period_ms = 30000;
    if (!d->cfg.min_interval_ms) d->cfg.min_interval_ms = 1000;
    if (!d->cfg.fetch) {
        d->cfg.fetch = fetch_http;
        d->cfg.fetch_arg = c;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->read_mu, NULL);
    *out = d;
    return 0;
}

void kc_discovery_free(kc_discovery_t *d)
{
    if (!d) return;
    kc_restmap_unref(d->map);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->read_mu);
    free(d);
}

/* The current map (a reference, or NULL) and its age in ms (-1: none). */
static kc_restmap_t *current(kc_discovery_t *d, int64_t *age_ms)
{
    pthread_mutex_lock(&d->mu);
    kc_restmap_t *m = d->map ? kc_restmap_ref(d->map) : NULL;
    *age_ms = m ? (clock_mono_ns() - d->read_ns) / 1000000 : -1;
    pthread_mutex_unlock(&d->mu);
    return m;
}

int kc_discovery_map(kc_discovery_t *d, int max_age_ms, kc_restmap_t **out)
{
    *out = NULL;
    if (max_age_ms < 0) max_age_ms = d->cfg.period_ms;
    int64_t asked = clock_mono_ns(), age;
    kc_restmap_t *m = current(d, &age);
    if (m && age < max_age_ms) {
        *out = m;
        return 0;
    }
    kc_restmap_unref(m);
    pthread_mutex_lock(&d->read_mu);
    /* A read that started after we asked, while we waited, will do. */
    m = current(d, &age);
    pthread_mutex_lock(&d->mu);
    int shared = m && d->read_ns >= asked;
    pthread_mutex_unlock(&d->mu);
    if (m && (shared || age < max_age_ms)) {
        pthread_mutex_unlock(&d->read_mu);
        *out = m;
        return 0;
    }
    kc_restmap_t *fresh;
    int64_t started = clock_mono_ns();
    int rc = kc_restmap_build(d->cfg.fetch, d->cfg.fetch_arg, &fresh);
    if (!rc) {
        pthread_mutex_lock(&d->mu);
        kc_restmap_t *old = d->map;
        d->map = kc_restmap_ref(fresh);
        d->read_ns = started;
        d->reads++;
        pthread_mutex_unlock(&d->mu);
        kc_restmap_unref(old);
        kc_restmap_unref(m);
        m = fresh;
    } else if (m) {
        log_warn("discovery", "reading discovery: %s; using the last snapshot", err_str(rc));
        rc = 0;
    }
    pthread_mutex_unlock(&d->read_mu);
    *out = m;
    return rc;
}

int kc_discovery_lookup(kc_discovery_t *d, const char *api_version, const char *kind,
                        kc_restmap_t **map, const kc_api_resource_t **res)
{
    *map = NULL;
    *res = NULL;
    if (!api_version || !kind) return KP_EINVAL;
    kc_restmap_t *m;
    int rc = kc_discovery_map(d, -1, &m);
    if (rc) return rc;
    const kc_api_resource_t *e = kc_restmap_for_kind(m, api_version, kind);
    if (!e) { /* unknown: perhaps new since the snapshot */
        kc_restmap_unref(m);
        if ((rc = kc_discovery_map(d, d->cfg.min_interval_ms, &m))) return rc;
        e = kc_restmap_for_kind(m, api_version, kind);
    }
    if (!e) {
        kc_restmap_unref(m);
        return KP_ENOTFOUND;
    }
    *map = m;
    *res = e;
    return 0;
}

uint64_t kc_discovery_reads(kc_discovery_t *d)
{
    pthread_mutex_lock(&d->mu);
    uint64_t n = d->reads;
    pthread_mutex_unlock(&d->mu);
    return n;
}
