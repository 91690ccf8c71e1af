/*
 * managed.c -- metadata.managedFields and server-side apply (managed.h),
 * as Kubernetes' field manager stack does them
 * (k8s.io/apimachinery/pkg/util/managedfields/internal and
 * sigs.k8s.io/structured-merge-diff/v4/merge/update.go).
 *
 * THE ENTRIES
 *
 * An entry is identified by (manager, operation, subresource) for Apply and
 * (manager, operation, apiVersion, subresource) for Update; its identifier
 * is the Go JSON of those fields, and Kubernetes orders conflicts and the
 * cap's merging by it. The list is written sorted: Apply before Update,
 * then by time (seconds), manager, apiVersion, subresource.
 *
 * UPDATE (create, update, non-apply patch)
 *   1. Which managedFields: on a subresource always old's; else an
 *      explicit [] (or [{}]) in obj resets to none; else obj's own entries
 *      if they decode and are not empty (Kubernetes lets a client write
 *      them); else old's.
 *   2. None, and not a create: the object stays untracked (no entries).
 *   3. compare(old or the zero value, obj): every other entry loses the
 *      added, changed and removed paths; the manager's Update entry gains
 *      the added and changed ones (time = now) if there are any.
 *   4. Empty entries are dropped; more than 10 Update entries are merged,
 *      oldest first, into an "ancient-changes" entry per apiVersion.
 *   A value whose lists cannot be keyed leaves obj without managedFields
 *   (Kubernetes' UpdateNoErrors).
 *
 * APPLY
 *   1. An object without entries first gets a "before-first-apply" Update
 *      entry owning all it holds, so the first applier meets its owners.
 *   2. merged = live + config; the manager's Apply entry becomes config's
 *      field set; fields the manager applied last time and no longer does
 *      are pruned unless another entry owns them (update.go's prune).
 *   3. compare(live, result): each other entry owning a changed or added
 *      path conflicts; without force that is KP_ECONFLICT. With force, or
 *      without conflicts, others lose those paths and the removed ones.
 *   4. For manager "kubectl", conflicts over fields whose live value still
 *      equals the last-applied-configuration annotation are forced (the
 *      upgrade from client-side apply), and that annotation, when present,
 *      is rewritten to the applied config.
 *   5. The entry's time becomes now only if the object changed.
 *
 * Fields nobody owns (managed.h) are stripped from the manager's set; the
 * caller's `reset` fields are skipped by the field-set and comparison
 * walks (so never owned, conflicting or pruned) but merged.
 */
#include "apiserver/apply/managed.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/apply/managed_int.h"
#include "lib/err.h"

#define LAST_APPLIED        "kubectl.kubernetes.io/last-applied-configuration"
#define MAX_UPDATE_MANAGERS 10

typedef struct ment {
    char *manager;
    char *operation; /* "Apply" or "Update" */
    char *api_version;
    char *subresource; /* "" if none */
    char *time;        /* NULL if none */
    json_t *set;       /* internal set form (managed_int.h) */
    int dead;          /* merged away by the cap */
} ment_t;

typedef struct mlist {
    ment_t *v;
    size_t n, cap;
} mlist_t;

typedef struct mctx {
    api__mwalk_t w;
    const json_t *kind;
    const api_manager_t *m;
} mctx_t;

static const char *const strip_meta[] = {
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    NULL,
};

/* --- entries ---------------------------------------------------------- */

static void ment_clear(ment_t *e)
{
    free(e->manager);
    free(e->operation);
    free(e->api_version);
    free(e->subresource);
    free(e->time);
    json_decref(e->set);
    memset(e, 0, sizeof *e);
}

static void mlist_free(mlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        ment_clear(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static char *dup0(const char *s)
{
    return strdup(s ? s : "");
}

/* A new zeroed entry at the end of l (NULL when out of memory). Pointers
 * into l->v are invalidated. */
static ment_t *mlist_add(mlist_t *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        ment_t *v = realloc(l->v, cap * sizeof *v);
        if (!v) return NULL;
        l->v = v, l->cap = cap;
    }
    ment_t *e = &l->v[l->n++];
    memset(e, 0, sizeof *e);
    return e;
}

static int ment_fill(ment_t *e, const char *manager, const char *op, const char *apiv,
                     const char *sub, const char *time, json_t *set)
{
    e->manager = dup0(manager), e->operation = dup0(op), e->api_version = dup0(apiv);
    e->subresource = dup0(sub), e->time = time ? strdup(time) : NULL, e->set = set;
    int ok = e->manager && e->operation && e->api_version && e->subresource && (!time || e->time);
    return ok && set ? 0 : KP_ENOMEM;
}

static ment_t *mlist_find(mlist_t *l, const char *manager, const char *op, const char *apiv,
                          const char *sub)
{
    for (size_t i = 0; i < l->n; i++) {
        ment_t *e = &l->v[i];
        if (e->dead || strcmp(e->manager, manager) || strcmp(e->operation, op) ||
            strcmp(e->subresource, sub ? sub : ""))
            continue;
        if (!strcmp(op, "Update") && strcmp(e->api_version, apiv)) continue;
        return e;
    }
    return NULL;
}

static void mlist_drop_empty(mlist_t *l)
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].dead || !json_object_size(l->v[i].set)) {
            ment_clear(&l->v[i]);
            continue;
        }
        l->v[k++] = l->v[i];
    }
    l->n = k;
}

static int mlist_copy(const mlist_t *src, mlist_t *dst)
{
    memset(dst, 0, sizeof *dst);
    for (size_t i = 0; i < src->n; i++) {
        const ment_t *s = &src->v[i];
        ment_t *e = mlist_add(dst);
        if (!e || ment_fill(e, s->manager, s->operation, s->api_version, s->subresource, s->time,
                            json_deep_copy(s->set))) {
            mlist_free(dst);
            return KP_ENOMEM;
        }
    }
    return 0;
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Decode metadata.managedFields (NULL: none). KP_EINVAL with a message
 * (Kubernetes' words) for an entry that is not one. */
static int mlist_decode(const json_t *arr, mlist_t *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    if (!arr || json_is_null(arr)) return 0;
    if (!json_is_array(arr)) {
        snprintf(err, errlen, "managedFields must be a list");
        return KP_EINVAL;
    }
    size_t i;
    json_t *in;
    json_array_foreach(arr, i, in)
    {
        const char *op = jstr(in, "operation"), *apiv = jstr(in, "apiVersion");
        const char *ft = jstr(in, "fieldsType"), *sub = jstr(in, "subresource");
        int rc = KP_EINVAL;
        json_t *set = NULL;
        if (!op || (strcmp(op, "Apply") && strcmp(op, "Update")))
            snprintf(err, errlen, "operation must be `Apply` or `Update`");
        else if (!apiv || !*apiv)
            snprintf(err, errlen, "apiVersion must not be empty");
        else if (!ft || !*ft)
            snprintf(err, errlen, "missing fieldsType in managed fields entry %zu", i);
        else if (strcmp(ft, "FieldsV1"))
            snprintf(err, errlen, "invalid fieldsType \"%s\" in managed fields entry %zu", ft, i);
        else if ((rc = api__mset_decode(json_object_get(in, "fieldsV1"), &set)))
            snprintf(err, errlen, "error decoding set in managed fields entry %zu", i);
        if (rc) {
            mlist_free(l);
            return rc;
        }
        /* A repeated identifier replaces the earlier entry, as a Go map does. */
        ment_t *e = mlist_find(l, jstr(in, "manager") ? jstr(in, "manager") : "", op, apiv, sub);
        if (e)
            ment_clear(e);
        else
            e = mlist_add(l);
        if (!e || ment_fill(e, jstr(in, "manager"), op, apiv, sub, jstr(in, "time"), set)) {
            if (!e) json_decref(set);
            mlist_free(l);
            return KP_ENOMEM;
        }
    }
    return 0;
}

/* The manager identifier (BuildManagerIdentifier): Go JSON of the entry's
 * manager, operation, apiVersion (Update only) and subresource. */
static int ment_ident(const ment_t *e, buf_t *b)
{
    json_t *o = json_object();
    int rc = o ? 0 : KP_ENOMEM;
    if (!rc && *e->manager) rc = json_object_set_new(o, "manager", json_string(e->manager));
    if (!rc) rc = json_object_set_new(o, "operation", json_string(e->operation));
    if (!rc && !strcmp(e->operation, "Update") && *e->api_version)
        rc = json_object_set_new(o, "apiVersion", json_string(e->api_version));
    if (!rc && *e->subresource)
        rc = json_object_set_new(o, "subresource", json_string(e->subresource));
    /* Go writes the struct's fields in declaration order, not sorted. */
    static const char *const order[] = {"manager", "operation", "apiVersion", "subresource"};
    buf_reset(b);
    if (!rc) rc = buf_append(b, "{", 1);
    for (size_t i = 0, first = 1; !rc && i < 4; i++) {
        json_t *v = json_object_get(o, order[i]);
        if (!v) continue;
        if (!first) rc = buf_append(b, ",", 1);
        first = 0;
        json_t *k = json_string(order[i]);
        if (!rc) rc = k ? api__gojson(k, 1, b) : KP_ENOMEM;
        json_decref(k);
        if (!rc) rc = buf_append(b, ":", 1);
        if (!rc) rc = api__gojson(v, 1, b);
    }
    if (!rc) rc = buf_append(b, "}", 1);
    json_decref(o);
    return rc ? KP_ENOMEM : 0;
}

/* Seconds of an RFC 3339 time (0 if it does not parse), for ordering. */
static int64_t time_secs(const char *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = t ? strptime(t, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!p) return 0;
    int64_t s = (int64_t)timegm(&tm);
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            continue;
    if ((*p == '+' || *p == '-') && strlen(p) >= 6) {
        int64_t off =
            ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 + ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
        s += *p == '+' ? -off : off;
    }
    return s;
}

static int ment_order(const void *pa, const void *pb)
{
    const ment_t *a = pa, *b = pb;
    int c = strcmp(a->operation, b->operation);
    if (c) return c;
    int64_t ta = time_secs(a->time), tb = time_secs(b->time);
    if (ta != tb) return ta < tb ? -1 : 1;
    if ((c = strcmp(a->manager, b->manager))) return c;
    if ((c = strcmp(a->api_version, b->api_version))) return c;
    return strcmp(a->subresource, b->subresource);
}

/* The managedFields list, sorted as Kubernetes sorts it; NULL on ENOMEM. */
static json_t *mlist_encode(mlist_t *l)
{
    qsort(l->v, l->n, sizeof *l->v, ment_order);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < l->n; i++) {
        const ment_t *e = &l->v[i];
        json_t *o = json_object(), *f = api__mset_encode(e->set);
        int bad = !o || !f;
        if (!bad && *e->manager) bad = json_object_set_new(o, "manager", json_string(e->manager));
        if (!bad) bad = json_object_set_new(o, "operation", json_string(e->operation));
        if (!bad) bad = json_object_set_new(o, "apiVersion", json_string(e->api_version));
        if (!bad && e->time) bad = json_object_set_new(o, "time", json_string(e->time));
        if (!bad) bad = json_object_set_new(o, "fieldsType", json_string("FieldsV1"));
        if (!bad) bad = json_object_set(o, "fieldsV1", f);
        if (!bad && *e->subresource)
            bad = json_object_set_new(o, "subresource", json_string(e->subresource));
        json_decref(f);
        if (bad || json_array_append_new(arr, o)) {
            if (bad) json_decref(o);
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

typedef struct upd {
    size_t i;
    int64_t t;
    char *ident;
} upd_t;

static int upd_order(const void *pa, const void *pb)
{
    const upd_t *a = pa, *b = pb;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return strcmp(a->ident, b->ident);
}

/* capmanagers.go: past MAX_UPDATE_MANAGERS Update entries, merge the
 * oldest into one "ancient-changes" entry per apiVersion. */
static int cap_updaters(mlist_t *l)
{
    size_t n = 0, length;
    for (size_t i = 0; i < l->n; i++)
        n += !strcmp(l->v[i].operation, "Update");
    if (n <= MAX_UPDATE_MANAGERS) return 0;
    upd_t *u = calloc(n, sizeof *u);
    buf_t b;
    buf_init(&b, API__MSET_BUF_MAX);
    int rc = u ? 0 : KP_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; !rc && i < l->n; i++) {
        if (strcmp(l->v[i].operation, "Update")) continue;
        u[k].i = i, u[k].t = time_secs(l->v[i].time);
        if (!(rc = ment_ident(&l->v[i], &b)) && !(u[k].ident = strdup(b.p))) rc = KP_ENOMEM;
        k++;
    }
    if (!rc) qsort(u, n, sizeof *u, upd_order);
    length = n;
    for (size_t i = 0; !rc && i < n && length > MAX_UPDATE_MANAGERS; i++) {
        ment_t *e = &l->v[u[i].i];
        ment_t *first = NULL,
               *bucket = mlist_find(l, "ancient-changes", "Update", e->api_version, "");
        for (size_t j = 0; j < i && !first; j++)
            if (!l->v[u[j].i].dead && !strcmp(l->v[u[j].i].api_version, e->api_version))
                first = &l->v[u[j].i];
        if (!first || e == bucket) continue;
        if (!bucket) { /* the first entry of this version becomes the bucket */
            bucket = first;
            free(bucket->manager), free(bucket->subresource);
            bucket->manager = strdup("ancient-changes"), bucket->subresource = strdup("");
            if (!bucket->manager || !bucket->subresource) rc = KP_ENOMEM;
        }
        if (!rc) rc = api__mset_union(bucket->set, e->set);
        if (!rc) {
            free(bucket->time);
            bucket->time = e->time, e->time = NULL;
            e->dead = 1;
            length--;
        }
    }
    for (size_t i = 0; u && i < n; i++)
        free(u[i].ident);
    free(u);
    buf_free(&b);
    mlist_drop_empty(l);
    return rc;
}

/* --- helpers ---------------------------------------------------------- */

/* Take from `set` the paths nobody owns: apiVersion, kind, metadata itself
 * and metadata's server fields (strip_meta); their children stay (the
 * difference with that set, without building it). */
static void strip_unowned(json_t *set)
{
    static const char *const top[] = {"f:apiVersion", "f:kind", "f:metadata"};
    for (size_t i = 0; i < 3; i++) {
        json_t *n = json_object_get(set, top[i]);
        if (n) json_object_del(n, ".");
    }
    json_t *md = json_object_get(set, "f:metadata");
    for (size_t i = 0; md && strip_meta[i]; i++) {
        char pe[64];
        snprintf(pe, sizeof pe, "f:%s", strip_meta[i]); /* plain names: nothing to escape */
        json_t *n = json_object_get(md, pe);
        if (n) json_object_del(n, ".");
        api__mset_prune(md, pe);
    }
    for (size_t i = 0; i < 3; i++)
        api__mset_prune(set, top[i]);
}

/* A shallow copy of object o: its members shared. (jansson's json_copy()
 * drops members silently when memory runs out.) NULL on ENOMEM. */
static json_t *shallow(const json_t *o)
{
    json_t *c = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        if (c && json_object_set(c, k, v)) {
            json_decref(c);
            c = NULL;
        }
    }
    return c;
}

/* A shallow copy of obj without metadata.managedFields (NULL for NULL;
 * *rc KP_ENOMEM when out of memory). */
static json_t *without_mf(const json_t *obj, int *rc)
{
    *rc = 0;
    if (!obj) return NULL;
    json_t *o = shallow(obj), *md = json_object_get(obj, "metadata");
    if (!o) goto fail;
    if (json_is_object(md) && json_object_get(md, "managedFields")) {
        json_t *m2 = shallow(md);
        if (!m2) goto fail;
        json_object_del(m2, "managedFields");
        if (json_object_set_new(o, "metadata", m2)) goto fail;
    }
    return o;
fail:
    json_decref(o);
    *rc = KP_ENOMEM;
    return NULL;
}

static int set_mf(json_t *obj, mlist_t *l)
{
    json_t *md = json_object_get(obj, "metadata");
    if (!json_is_object(md)) {
        if (!l->n) return 0;
        if (json_object_set_new(obj, "metadata", json_object())) return KP_ENOMEM;
        md = json_object_get(obj, "metadata");
    }
    json_object_del(md, "managedFields");
    if (!l->n) return 0;
    json_t *arr = mlist_encode(l);
    return arr && !json_object_set_new(md, "managedFields", arr) ? 0 : KP_ENOMEM;
}

static void mctx_init(mctx_t *c, const api_schema_t *s, const json_t *kind, const api_manager_t *m,
                      char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->w.s = s, c->w.reset = m->reset, c->w.err = err, c->w.errlen = errlen;
    c->kind = kind, c->m = m;
}

/* Step 3 of UPDATE for manager `manager` (see the top). */
static int update_entries(mctx_t *c, const json_t *l, const json_t *r, mlist_t *list,
                          const char *manager)
{
    const api_manager_t *m = c->m;
    json_t *A = json_object(), *M = json_object(), *R = json_object();
    int rc = A && M && R ? 0 : KP_ENOMEM;
    c->w.strict = 0;
    if (!rc) rc = api__mw_compare(&c->w, l, r, c->kind, A, M, R);
    if (!rc) rc = api__mset_union(M, A);
    for (size_t i = 0; !rc && i < list->n; i++) {
        api__mset_diff(list->v[i].set, M);
        api__mset_diff(list->v[i].set, R);
    }
    if (!rc) {
        api__mset_diff(M, R);
        strip_unowned(M);
    }
    if (!rc && json_object_size(M)) {
        ment_t *e = mlist_find(list, manager, "Update", m->api_version, m->subresource);
        if (e) {
            rc = api__mset_union(e->set, M);
            free(e->time);
            if (!rc && !(e->time = strdup(m->now))) rc = KP_ENOMEM;
        } else if (!(e = mlist_add(list))) {
            rc = KP_ENOMEM;
        } else {
            json_incref(M);
            rc = ment_fill(e, manager, "Update", m->api_version, m->subresource, m->now, M);
        }
    }
    mlist_drop_empty(list);
    if (!rc) rc = cap_updaters(list);
    json_decref(A);
    json_decref(M);
    json_decref(R);
    return rc;
}

static int reset_request(const json_t *mf)
{
    if (!json_is_array(mf)) return 0;
    if (!json_array_size(mf)) return 1;
    if (json_array_size(mf) != 1 || !json_is_object(json_array_get(mf, 0))) return 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_array_get(mf, 0), k, v)
    {
        if (!json_is_null(v) && !(json_is_string(v) && !json_string_length(v))) return 0;
    }
    return 1;
}

int api_managed_update(const api_schema_t *s, const json_t *node, const json_t *old, json_t *obj,
                       const api_manager_t *m)
{
    if (!s || !json_is_object(obj) || !m || !m->manager || !m->api_version || !m->now)
        return KP_EINVAL;
    char err[256];
    mctx_t c;
    mlist_t list = {0};
    json_t *md = json_object_get(obj, "metadata"), *old_s = NULL;
    const json_t *mf = json_object_get(md, "managedFields");
    const json_t *old_mf = json_object_get(json_object_get(old, "metadata"), "managedFields");
    int rc = 0, from_old = 1;
    if (m->subresource && *m->subresource) {
        from_old = 1;
    } else if (reset_request(mf)) {
        from_old = 0;
    } else {
        rc = mlist_decode(mf, &list, err, sizeof err);
        from_old = rc || !list.n;
        if (rc == KP_ENOMEM) return rc;
    }
    if (from_old) {
        mlist_free(&list);
        rc = mlist_decode(old_mf, &list, err, sizeof err);
        if (rc == KP_ENOMEM) return rc;
        if (rc) mlist_free(&list); /* old's do not decode: start afresh */
    }
    if (json_is_object(md)) json_object_del(md, "managedFields");
    if (!list.n && old) return 0; /* an untracked object stays untracked */

    mctx_init(&c, s, node, m, err, sizeof err);
    old_s = without_mf(old, &rc);
    if (!rc) rc = update_entries(&c, old_s, obj, &list, m->manager);
    if (rc == KP_EINVAL) { /* lists that cannot be keyed: no managedFields */
        rc = 0;
        mlist_free(&list);
    }
    if (!rc) rc = set_mf(obj, &list);
    mlist_free(&list);
    json_decref(old_s);
    return rc;
}

/* --- apply ------------------------------------------------------------ */

/* update.go's prune: fields in `last` (the manager's previous Apply set)
 * that no entry (the new config's included) owns any more leave merged. */
static int prune(mctx_t *c, json_t *merged, const mlist_t *list, const json_t *last, json_t **out)
{
    *out = NULL;
    if (!last || !json_object_size(last)) {
        *out = json_incref(merged);
        return 0;
    }
    api__mwalk_t *w = &c->w;
    json_t *lastE = NULL, *p1 = NULL, *p2 = NULL, *mset = json_object(), *pset = json_object();
    json_t *p2set = json_object(), *managed = json_object(), *mE = NULL, *pE = NULL;
    json_t *manE = NULL, *p2E = NULL, *x = NULL;
    int rc = mset && pset && p2set && managed ? 0 : KP_ENOMEM;
    w->strict = 0;
    if (!rc) rc = (lastE = api__mw_ensure_named(w, last, c->kind)) ? 0 : KP_ENOMEM;
    if (!rc) rc = api__mw_remove(w, merged, c->kind, lastE, &p1);
    if (!rc) rc = api__mw_toset(w, merged, c->kind, mset);
    if (!rc) rc = api__mw_toset(w, p1, c->kind, pset);
    for (size_t i = 0; !rc && i < list->n; i++)
        rc = api__mset_union(managed, list->v[i].set);
    if (!rc) rc = (mE = api__mw_ensure_named(w, mset, c->kind)) ? 0 : KP_ENOMEM;
    if (!rc) rc = (pE = api__mw_ensure_named(w, pset, c->kind)) ? 0 : KP_ENOMEM;
    if (!rc) rc = (manE = api__mw_ensure_named(w, managed, c->kind)) ? 0 : KP_ENOMEM;
    if (!rc) rc = (x = json_deep_copy(mE)) ? 0 : KP_ENOMEM;
    if (!rc) { /* addBackOwnedItems: what neither p1 nor an owner keeps */
        api__mset_diff(x, pE);
        api__mset_diff(x, manE);
        rc = api__mw_remove(w, merged, c->kind, x, &p2);
    }
    if (!rc) rc = api__mw_toset(w, p2, c->kind, p2set);
    if (!rc) rc = (p2E = api__mw_ensure_named(w, p2set, c->kind)) ? 0 : KP_ENOMEM;
    if (!rc) { /* addBackDanglingItems: remove only what the manager had */
        json_decref(x);
        api__mset_diff(mE, p2E);
        rc = (x = api__mset_intersect(mE, lastE)) ? 0 : KP_ENOMEM;
    }
    if (!rc) rc = api__mw_remove(w, merged, c->kind, x, out);
    json_t *all[] = {lastE, p1, p2, mset, pset, p2set, managed, mE, pE, manE, p2E, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        json_decref(all[i]);
    return rc;
}

/* One conflict group: {"ident": ..., "who": ..., "set": ...}. */
static int add_conflict(json_t *conflicts, const ment_t *e, json_t *set)
{
    buf_t b;
    buf_init(&b, API__MSET_BUF_MAX);
    int rc = ment_ident(e, &b);
    json_t *o = json_object();
    if (!rc && o) rc = json_object_set_new(o, "ident", json_string(b.p)) ? KP_ENOMEM : 0;
    buf_reset(&b);
    if (!rc) rc = api__goquote(e->manager, &b);
    if (!rc && *e->subresource) {
        rc = buf_append(&b, " with subresource ", 18);
        if (!rc) rc = api__goquote(e->subresource, &b);
    }
    if (!rc && !strcmp(e->operation, "Update")) {
        rc = buf_append(&b, " using ", 7);
        if (!rc) rc = buf_append(&b, e->api_version, strlen(e->api_version));
    }
    if (!rc && (!o || json_object_set_new(o, "who", json_string(b.p)) ||
                json_object_set(o, "set", set) || json_array_append(conflicts, o)))
        rc = KP_ENOMEM;
    json_decref(o);
    buf_free(&b);
    return rc ? KP_ENOMEM : 0;
}

/* APPLY steps 1-3 and 5 over a copy of `in`; on 0 *list holds the new
 * entries and *out the object. KP_ECONFLICT (unforced) fills conflicts. */
static int apply_core(mctx_t *c, const json_t *live, const json_t *config, const json_t *cfgset,
                      const mlist_t *in, int force, mlist_t *list, json_t **out, json_t *conflicts)
{
    const api_manager_t *m = c->m;
    json_t *merged = NULL, *res = NULL, *last = NULL, *A = json_object(), *M = json_object();
    json_t *R = json_object();
    int rc = A && M && R ? mlist_copy(in, list) : KP_ENOMEM;
    *out = NULL;
    if (!rc && live && !list->n) rc = update_entries(c, NULL, live, list, "before-first-apply");
    c->w.strict = 0;
    if (!rc) rc = api__mw_merge(&c->w, live, config, c->kind, &merged);
    ment_t *e = rc ? NULL : mlist_find(list, m->manager, "Apply", "", m->subresource);
    size_t ei = 0;
    if (!rc && e) {
        last = e->set, e->set = NULL;
        free(e->api_version);
        e->api_version = strdup(m->api_version);
        e->set = json_deep_copy(cfgset);
        if (!e->api_version || !e->set) rc = KP_ENOMEM;
    } else if (!rc) {
        rc = (e = mlist_add(list)) ? ment_fill(e, m->manager, "Apply", m->api_version,
                                               m->subresource, NULL, json_deep_copy(cfgset))
                                   : KP_ENOMEM;
    }
    if (!rc) ei = (size_t)(e - list->v);
    if (!rc) rc = prune(c, merged, list, last, &res);
    if (!rc) rc = api__mw_compare(&c->w, live, res, c->kind, A, M, R);
    if (!rc) rc = api__mset_union(M, A);
    for (size_t i = 0; !rc && i < list->n; i++) {
        if (i == ei) continue;
        json_t *x = api__mset_intersect(list->v[i].set, M);
        if (!x)
            rc = KP_ENOMEM;
        else if (json_object_size(x))
            rc = add_conflict(conflicts, &list->v[i], x);
        json_decref(x);
    }
    if (!rc && !force && json_array_size(conflicts)) rc = KP_ECONFLICT;
    for (size_t i = 0; !rc && i < list->n; i++) {
        if (i == ei) continue;
        api__mset_diff(list->v[i].set, M);
        api__mset_diff(list->v[i].set, R);
    }
    if (!rc && (!live || !api__val_equal(live, res))) {
        free(list->v[ei].time);
        if (!(list->v[ei].time = strdup(m->now))) rc = KP_ENOMEM;
    }
    if (!rc) {
        mlist_drop_empty(list);
        *out = res, res = NULL;
    }
    json_t *all[] = {merged, res, last, A, M, R};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        json_decref(all[i]);
    return rc;
}

/* lastappliedmanager.go: into *allowed (NULL: no allowance) the fields of
 * the last-applied annotation whose value live still has. An annotation
 * that cannot be used only means no allowance; errors: KP_ENOMEM. */
static int last_applied_allowance(mctx_t *c, const json_t *live, json_t **allowed)
{
    *allowed = NULL;
    const char *text =
        jstr(json_object_get(json_object_get(live, "metadata"), "annotations"), LAST_APPLIED);
    if (!text || !*text) return 0;
    json_t *la = json_loads(text, 0, NULL);
    if (!la) return api__json_valid(text, 0) ? KP_ENOMEM : 0;
    json_t *set = json_object(), *A = json_object(), *M = json_object(), *R = json_object();
    int rc = set && A && M && R ? 0 : KP_ENOMEM;
    int ok = json_is_object(la) && jstr(la, "apiVersion") &&
             !strcmp(jstr(la, "apiVersion"), c->m->api_version);
    char *save = c->w.err;
    c->w.err = NULL; /* a bad annotation is not the request's error */
    c->w.strict = 1;
    if (!rc && ok) rc = api__mw_toset(&c->w, la, c->kind, set);
    c->w.strict = 0;
    if (!rc && ok) rc = api__mw_compare(&c->w, la, live, c->kind, A, M, R);
    c->w.err = save;
    if (rc == KP_EINVAL) rc = 0, ok = 0;
    if (!rc && ok) {
        api__mset_diff(set, M);
        api__mset_diff(set, A);
        api__mset_diff(set, R);
        *allowed = set, set = NULL;
    }
    json_decref(la), json_decref(set), json_decref(A), json_decref(M), json_decref(R);
    return rc;
}

/* lastappliedupdater.go: the annotation, if the object has one, becomes
 * the applied config (without the annotation) as Go writes it. */
static int update_last_applied(json_t *obj, const json_t *config)
{
    json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const char *cur = jstr(ann, LAST_APPLIED);
    if (!cur || !*cur) return 0;
    int rc = 0;
    json_t *cfg = shallow(config), *cmd = json_object_get(config, "metadata");
    json_t *cann = json_object_get(cmd, "annotations");
    if (!cfg) return KP_ENOMEM;
    if (json_is_object(cann)) {
        json_t *md2 = shallow(cmd), *ann2 = shallow(cann);
        if (!md2 || json_object_set_new(cfg, "metadata", md2)) {
            json_decref(ann2);
            rc = KP_ENOMEM;
        } else if (!ann2 || json_object_set_new(md2, "annotations", ann2)) {
            rc = KP_ENOMEM;
        } else {
            json_object_del(ann2, LAST_APPLIED);
        }
    }
    buf_t b;
    buf_init(&b, API__MSET_BUF_MAX);
    if (!rc) rc = api__gojson(cfg, 1, &b);
    if (!rc) rc = buf_append(&b, "\n", 1);
    if (!rc && json_object_set_new(ann, LAST_APPLIED, json_stringn(b.p, b.len))) rc = KP_ENOMEM;
    buf_free(&b);
    json_decref(cfg);
    return rc;
}

static int conflict_order(const void *pa, const void *pb)
{
    return strcmp(jstr(*(json_t *const *)pa, "ident"), jstr(*(json_t *const *)pb, "ident"));
}

typedef struct report {
    json_t *causes;
    const char *who;
    buf_t *msg;
    int many;
} report_t;

static int report_path(void *arg, const char *const *pev, size_t n)
{
    report_t *r = arg;
    buf_t p;
    buf_init(&p, API__MSET_BUF_MAX);
    char what[1024];
    int rc = api__path_display(pev, n, &p);
    snprintf(what, sizeof what, "conflict with %s", r->who);
    json_t *cause = rc ? NULL
                       : json_pack("{s:s, s:s, s:s}", "reason", "FieldManagerConflict", "message",
                                   what, "field", p.p ? p.p : "");
    if (!cause || json_array_append_new(r->causes, cause)) rc = KP_ENOMEM;
    if (!rc && r->many) rc = buf_append(r->msg, "\n- ", 3);
    if (!rc) rc = buf_append(r->msg, p.p ? p.p : "", p.len);
    buf_free(&p);
    return rc;
}

/* Kubernetes' 409 for conflicts (internal/conflict.go): causes and
 * message. Groups in identifier order, paths in set order. */
static int report_conflicts(json_t *conflicts, json_t **causes, char *err, size_t errlen)
{
    size_t n = json_array_size(conflicts), total = 0;
    json_t **g = calloc(n ? n : 1, sizeof *g);
    json_t *cs = json_array();
    buf_t msg;
    buf_init(&msg, API__MSET_BUF_MAX);
    int rc = g && cs ? 0 : KP_ENOMEM;
    for (size_t i = 0; !rc && i < n; i++) {
        g[i] = json_array_get(conflicts, i);
        total += api__mset_count(json_object_get(g[i], "set"));
    }
    if (!rc) qsort(g, n, sizeof *g, conflict_order);
    char head[64];
    snprintf(head, sizeof head, "Apply failed with %zu conflict%s: ", total, total == 1 ? "" : "s");
    if (!rc) rc = buf_append(&msg, head, strlen(head));
    for (size_t i = 0; !rc && i < n; i++) {
        report_t r = {cs, jstr(g[i], "who"), &msg, total > 1};
        if (total > 1) {
            char line[1024];
            snprintf(line, sizeof line, "%sconflicts with %s:", i ? "\n" : "", r.who);
            rc = buf_append(&msg, line, strlen(line));
        } else {
            rc = buf_append(&msg, "conflict with ", 14);
            if (!rc) rc = buf_append(&msg, r.who, strlen(r.who));
            if (!rc) rc = buf_append(&msg, ": ", 2);
        }
        if (!rc) rc = api__mset_iterate(json_object_get(g[i], "set"), report_path, &r);
    }
    if (!rc && err && errlen) snprintf(err, errlen, "%s", msg.p);
    free(g);
    buf_free(&msg);
    if (rc) {
        json_decref(cs);
        return rc;
    }
    if (causes)
        *causes = cs;
    else
        json_decref(cs);
    return 0;
}

int api_managed_apply(const api_schema_t *s, const json_t *node, const json_t *live,
                      const json_t *config, const api_manager_t *m, int force, json_t **out,
                      json_t **conflicts, char *err, size_t errlen)
{
    char scratch[256];
    if (!err || !errlen) err = scratch, errlen = sizeof scratch;
    err[0] = '\0';
    if (out) *out = NULL;
    if (conflicts) *conflicts = NULL;
    if (!s || !json_is_object(config) || !m || !m->manager || !m->api_version || !m->now || !out ||
        (live && !json_is_object(live))) {
        snprintf(err, errlen, "invalid arguments");
        return KP_EINVAL;
    }
    const json_t *cmf = json_object_get(json_object_get(config, "metadata"), "managedFields");
    if (cmf && !json_is_null(cmf)) {
        snprintf(err, errlen, "metadata.managedFields must be nil");
        return KP_EINVAL;
    }
    mctx_t c;
    mlist_t in = {0}, list = {0};
    json_t *live_s = NULL, *cfgset = json_object(), *found = json_array(), *res = NULL;
    char derr[200];
    int rc = mlist_decode(json_object_get(json_object_get(live, "metadata"), "managedFields"), &in,
                          derr, sizeof derr);
    if (rc == KP_EINVAL) {
        snprintf(err, errlen, "failed to decode managed fields: %s", derr);
        rc = KP_ECORRUPT;
    }
    mctx_init(&c, s, node, m, err, errlen);
    if (!rc && (!cfgset || !found)) rc = KP_ENOMEM;
    if (!rc) live_s = without_mf(live, &rc);
    c.w.strict = 1;
    if (!rc) rc = api__mw_toset(&c.w, config, node, cfgset);
    c.w.strict = 0;
    if (!rc) strip_unowned(cfgset);
    if (!rc) rc = apply_core(&c, live_s, config, cfgset, &in, force, &list, &res, found);
    if (rc == KP_ECONFLICT && !strcmp(m->manager, "kubectl")) {
        json_t *allowed = NULL;
        size_t left = 0;
        int r2 = last_applied_allowance(&c, live_s, &allowed);
        if (r2) rc = r2;
        for (size_t i = 0; allowed && i < json_array_size(found); i++) {
            json_t *set = json_object_get(json_array_get(found, i), "set");
            api__mset_diff(set, allowed);
            left += json_object_size(set) > 0;
        }
        if (allowed && !left) { /* every conflict is the client-side apply's: force */
            mlist_free(&list);
            json_array_clear(found);
            rc = apply_core(&c, live_s, config, cfgset, &in, 1, &list, &res, found);
        } else if (allowed) {
            for (size_t i = json_array_size(found); i-- > 0;)
                if (!json_object_size(json_object_get(json_array_get(found, i), "set")))
                    json_array_remove(found, i);
        }
        json_decref(allowed);
    }
    if (rc == KP_ECONFLICT) {
        int r2 = report_conflicts(found, conflicts, err, errlen);
        if (r2) rc = r2;
    }
    if (!rc && !strcmp(m->manager, "kubectl")) rc = update_last_applied(res, config);
    if (!rc) rc = set_mf(res, &list);
    if (!rc) *out = res, res = NULL;
    json_decref(res);
    json_decref(live_s);
    json_decref(cfgset);
    json_decref(found);
    mlist_free(&in);
    mlist_free(&list);
    return rc;
}
