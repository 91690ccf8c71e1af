/*
 * registry.c -- the served resources: lookups in the generated table
 * (registry_gen.c, one row per resource, written by scripts/gen-openapi-facts
 * from the OpenAPI facts).
 *
 * Storage-only kinds are a row and nothing more; kinds with rules of their
 * own (validation, defaulting, status, tables) add a strategy in a file of
 * their own, which the generator finds by its name. CustomResourceDefinitions add resources at run time: the views
 * at the end of this file publish them to requests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/schema/crd_schema.h"
#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "lib/err.h"
#include "store/store.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/rest/watchcache.h"

/* The built-in table: one generated row per served resource. */
extern const api_resource_t api_registry_table[];
extern const size_t api_registry_table_count;

size_t api_registry_count(void) { return api_registry_table_count; }

const api_resource_t *api_registry_at(size_t i)
{
    return i < api_registry_count() ? &api_registry_table[i] : NULL;
}

const api_resource_t *api_registry_find(const char *group, const char *version,
                                        const char *resource)
{
    for (size_t i = 0; i < api_registry_count(); i++) {
        const api_resource_t *r = &api_registry_table[i];
        if (!strcmp(r->group, group) && !strcmp(r->version, version) &&
            !strcmp(r->resource, resource))
            return r;
    }
    return NULL;
}

json_t *api_as_served(void *arg, json_t *stored)
{
    const api_resource_t *res = arg;
    const api_strategy_t *st = res->strategy;
    if (stored && res->storage_resource && st && st->from_storage)
        stored = st->from_storage(stored);
    if (stored && res->crd_schema) api_crd_default(res->crd_schema, stored);
    return stored;
}

int api_served_differs(const api_resource_t *res)
{
    return (res->storage_resource && res->strategy && res->strategy->from_storage) ||
           (res->crd_schema && api_crd_has_defaults(res->crd_schema));
}

/* ---- views: what is served at one moment (apiserver_int.h) ---- */

struct api_dyn {
    int refs; /* atomic */
    api_resource_t res;
    json_t *owner; /* what res's strings point into */
    wc_t *cache;
};

int api_dyn_new(apiserver_t *s, const api_resource_t *res, json_t *owner, api_dyn_t **out)
{
    *out = NULL;
    api_dyn_t *d = calloc(1, sizeof *d);
    if (!d) return KP_ENOMEM;
    d->refs = 1;
    d->res = *res;
    d->owner = json_incref(owner);
    char prefix[STORE_KEY_MAX + 1];
    int rc = api_key_prefix(&d->res, prefix, sizeof prefix);
    wc_config_t wcc = {.history_bytes = s->cfg.watch_cache_bytes,
                       .fields = d->res.field_selectors};
    if (api_served_differs(&d->res)) wcc.convert = api_as_served, wcc.convert_arg = &d->res;
    if (!rc) rc = wc_open(s->cfg.store, prefix, &wcc, &d->cache);
    if (rc) {
        json_decref(d->owner);
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

api_dyn_t *api_dyn_ref(api_dyn_t *d)
{
    if (d) __atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
    return d;
}

void api_dyn_shutdown(api_dyn_t *d)
{
    wc_close(d->cache);
    d->cache = NULL;
}

void api_dyn_end(api_dyn_t *d)
{
    if (d && d->cache) wc_end(d->cache);
}

void api_dyn_unref(api_dyn_t *d)
{
    if (!d || __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL)) return;
    if (d->cache) wc_close(d->cache);
    json_decref(d->owner);
    free(d);
}

const api_resource_t *api_dyn_resource(const api_dyn_t *d) { return &d->res; }

api_view_t *api_view_get(apiserver_t *s)
{
    pthread_mutex_lock(&s->mu);
    api_view_t *v = s->view;
    if (v) __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->mu);
    return v;
}

void api_view_put(api_view_t *v)
{
    if (!v || __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL)) return;
    for (size_t i = 0; i < v->dyn_count; i++) api_dyn_unref(v->dyn[i]);
    free(v->dyn);
    free(v->res);
    free(v->caches);
    free(v);
}

const api_resource_t *api_view_find(const api_view_t *v, const char *group, const char *version,
                                    const char *resource, size_t *index)
{
    for (size_t i = 0; v && i < v->count; i++) {
        const api_resource_t *r = v->res[i];
        if (!strcmp(r->group, group) && !strcmp(r->version, version) &&
            !strcmp(r->resource, resource)) {
            if (index) *index = i;
            return r;
        }
    }
    return NULL;
}

int api_view_cached(const api_view_t *v, const char *group, const char *version,
                    const char *resource, const char *ns, const char *name, const wc_obj_t **out)
{
    *out = NULL;
    size_t i = 0;
    const api_resource_t *r = api_view_find(v, group, version, resource, &i);
    char key[STORE_KEY_MAX + 1];
    if (!r || !v->caches[i] || api_object_key(r, ns, name, key, sizeof key)) return KP_ENOTFOUND;
    return wc_get(v->caches[i], key, out);
}

int api_view_publish(apiserver_t *s, api_dyn_t *const *dyn, size_t n)
{
    size_t nb = api_registry_count();
    api_view_t *v = calloc(1, sizeof *v);
    if (!v) return KP_ENOMEM;
    v->refs = 1; /* the server's */
    v->count = nb + n;
    v->res = calloc(v->count, sizeof *v->res);
    v->caches = calloc(v->count, sizeof *v->caches);
    v->dyn = calloc(n ? n : 1, sizeof *v->dyn);
    if (!v->res || !v->caches || !v->dyn) {
        api_view_put(v);
        return KP_ENOMEM;
    }
    for (size_t i = 0; i < nb; i++) {
        v->res[i] = api_registry_at(i);
        v->caches[i] = s->caches[i];
    }
    for (size_t i = 0; i < n; i++) {
        v->dyn[i] = api_dyn_ref(dyn[i]);
        v->dyn_count++;
        v->res[nb + i] = &dyn[i]->res;
        v->caches[nb + i] = dyn[i]->cache;
    }
    pthread_mutex_lock(&s->mu);
    api_view_t *old = s->view;
    s->view = v;
    pthread_mutex_unlock(&s->mu);
    api_view_put(old);
    return 0;
}
