/*
 * cache.c -- the scheduler's picture of the cluster: nodes, what the pods on
 * them request, and the pods waiting to be placed.
 *
 * The invariant it protects: a node's usage is exactly the sum of the pods
 * filed on it, bound (the informer says so) or assumed (a worker bound it
 * and the informer has not said so yet); and the decision that puts a pod
 * on a node and the assumption that adds it to that node's usage happen
 * under one lock. So parallel workers never place more on a node than its
 * allocatable, and an assumption is dropped only by the informer
 * (confirmed, moved or deleted) or by a failed bind (sched_cache_forget).
 *
 * Pod states (one record per pod key, in `pods`):
 *
 *   (none) --pending()--> PENDING --schedule()--> ASSUMED --bound()--> BOUND
 *                          ^   |                      |                  |
 *                          |   +---unschedulable()--> PENDING, filed in the
 *                          |        unschedulable list until
 *                          |        take_unschedulable() or a spec change
 *                          +------- forget() ---------+
 *   (none) --bound()--> BOUND;   any state --remove()--> (none)
 *
 * Node slots are never freed while the cache lives: a deleted node keeps
 * its slot (object NULL, so never a candidate) with the usage of pods still
 * filed on it, and a node of the same name reuses the slot. So pod records
 * and owner counts name nodes by slot index.
 *
 * `gen` counts the changes that can make an unschedulable pod fit (a node
 * added or changed, room freed); a failed decision remembers the gen it
 * saw, so a change that lands between the decision and the filing is not
 * lost (sched_cache_unschedulable returns 1).
 *
 * Owns: every record, slot, owner count and map here; a reference to each
 * node object.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "scheduler/sched_int.h"

/* ---- a string-keyed hash map (linear probing, backward-shift delete);
 * keys are borrowed from the values they map to ---- */

typedef struct smap {
    struct smap_slot {
        const char *key; /* NULL: empty */
        void *val;
        uint64_t h;
    } * s;
    size_t cap, n; /* cap: a power of two, or 0 */
} smap_t;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ^ (h >> 29);
}

static size_t smap_find(const smap_t *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        if (!m->s[i].key || (m->s[i].h == h && !strcmp(m->s[i].key, key))) return i;
    }
}

static void *smap_get(const smap_t *m, const char *key)
{
    if (!m->cap) return NULL;
    size_t i = smap_find(m, key, hash_str(key));
    return m->s[i].key ? m->s[i].val : NULL;
}

/* key must not be in the map yet. Errors: KP_ENOMEM. */
static int smap_put(smap_t *m, const char *key, void *val)
{
    if ((m->n + 1) * 10 > m->cap * 7) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct smap_slot *s = calloc(cap, sizeof *s);
        if (!s) return KP_ENOMEM;
        smap_t grown = {s, cap, m->n};
        for (size_t i = 0; i < m->cap; i++) {
            if (m->s[i].key) grown.s[smap_find(&grown, m->s[i].key, m->s[i].h)] = m->s[i];
        }
        free(m->s);
        *m = grown;
    }
    uint64_t h = hash_str(key);
    size_t i = smap_find(m, key, h);
    m->s[i].key = key;
    m->s[i].val = val;
    m->s[i].h = h;
    m->n++;
    return 0;
}

static void *smap_del(smap_t *m, const char *key)
{
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    size_t i = smap_find(m, key, hash_str(key));
    if (!m->s[i].key) return NULL;
    void *val = m->s[i].val;
    m->s[i].key = NULL;
    m->n--;
    /* Shift back the entries after the hole that may not pass over it. */
    for (size_t j = (i + 1) & mask; m->s[j].key; j = (j + 1) & mask) {
        size_t k = m->s[j].h & mask;
        int move = i <= j ? (k <= i || k > j) : (k <= i && k > j);
        if (move) {
            m->s[i] = m->s[j];
            m->s[j].key = NULL;
            i = j;
        }
    }
    return val;
}

static void smap_free(smap_t *m)
{
    free(m->s);
    memset(m, 0, sizeof *m);
}

/* ---- records ---- */

enum { POD_PENDING = 1, POD_ASSUMED, POD_BOUND };

/* How many pods of one owner each node holds (sparse: nodes with any). */
typedef struct owner_rec {
    char *uid;
    struct owner_count {
        size_t node;
        int64_t count;
    } * v;
    size_t n, cap;
    int64_t total;
} owner_rec_t;

typedef struct pod_rec {
    char *key;
    int state;
    size_t node; /* ASSUMED, BOUND: the slot */
    sched_res_t req;
    int64_t nz_cpu, nz_mem;
    sched_port_t *ports;
    size_t nports;
    owner_rec_t *owner;            /* ASSUMED, BOUND: NULL without one */
    struct pod_rec *uprev, *unext; /* the unschedulable list */
    int unsched;
} pod_rec_t;

typedef struct node_slot {
    char *name;
    size_t idx;
    json_t *obj; /* NULL: not known (deleted, or only named by pods) */
    sched_node_info_t info;
    sched_usage_t use;
} node_slot_t;

struct sched_cache {
    pthread_mutex_t mu;
    smap_t pods, nodes_by_name, owners;
    node_slot_t **nodes;
    size_t nnodes, capnodes, live;
    pod_rec_t *unsched; /* head of the unschedulable list */
    size_t npending, nunsched, nassumed, nbound;
    uint64_t gen;
};

int sched_cache_new(sched_cache_t **out)
{
    sched_cache_t *c = calloc(1, sizeof *c);
    if (!c) return KP_ENOMEM;
    if (pthread_mutex_init(&c->mu, NULL)) {
        free(c);
        return KP_ENOMEM;
    }
    *out = c;
    return 0;
}

static void rec_free(pod_rec_t *r)
{
    if (!r) return;
    free(r->key);
    free(r->ports);
    free(r);
}

void sched_cache_free(sched_cache_t *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->pods.cap; i++) {
        if (c->pods.s[i].key) rec_free(c->pods.s[i].val);
    }
    for (size_t i = 0; i < c->owners.cap; i++) {
        owner_rec_t *o = c->owners.s[i].val;
        if (!c->owners.s[i].key) continue;
        free(o->uid);
        free(o->v);
        free(o);
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        node_slot_t *s = c->nodes[i];
        json_decref(s->obj);
        sched_node_info_clear(&s->info);
        sched_usage_clear(&s->use);
        free(s->name);
        free(s);
    }
    free(c->nodes);
    smap_free(&c->pods);
    smap_free(&c->nodes_by_name);
    smap_free(&c->owners);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* The slot of node `name`, made on first use. NULL: out of memory. */
static node_slot_t *slot_get(sched_cache_t *c, const char *name)
{
    node_slot_t *s = smap_get(&c->nodes_by_name, name);
    if (s) return s;
    if (c->nnodes == c->capnodes) {
        size_t cap = c->capnodes ? c->capnodes * 2 : 64;
        node_slot_t **n = realloc(c->nodes, cap * sizeof *n);
        if (!n) return NULL;
        c->nodes = n;
        c->capnodes = cap;
    }
    s = calloc(1, sizeof *s);
    if (!s || !(s->name = strdup(name))) goto fail;
    s->idx = c->nnodes;
    if (smap_put(&c->nodes_by_name, s->name, s) < 0) goto fail;
    c->nodes[c->nnodes++] = s;
    return s;
fail:
    if (s) free(s->name);
    free(s);
    return NULL;
}

static void unsched_unlink(sched_cache_t *c, pod_rec_t *r)
{
    if (!r->unsched) return;
    if (r->uprev)
        r->uprev->unext = r->unext;
    else
        c->unsched = r->unext;
    if (r->unext) r->unext->uprev = r->uprev;
    r->uprev = r->unext = NULL;
    r->unsched = 0;
    c->nunsched--;
}

static void unsched_link(sched_cache_t *c, pod_rec_t *r)
{
    if (r->unsched) return;
    r->uprev = NULL;
    r->unext = c->unsched;
    if (c->unsched) c->unsched->uprev = r;
    c->unsched = r;
    r->unsched = 1;
    c->nunsched++;
}

/* Copy what the pod asks for into the record (not yet counted anywhere). */
static int rec_set_req(pod_rec_t *r, const sched_pod_t *p)
{
    sched_port_t *ports = NULL;
    if (p->nports) {
        ports = malloc(p->nports * sizeof *ports);
        if (!ports) return KP_ENOMEM;
        memcpy(ports, p->ports, p->nports * sizeof *ports);
    }
    free(r->ports);
    r->ports = ports;
    r->nports = p->nports;
    r->req = p->req;
    r->nz_cpu = p->nz_cpu;
    r->nz_mem = p->nz_mem;
    return 0;
}

static int owner_add(sched_cache_t *c, const char *uid, size_t node, owner_rec_t **out)
{
    *out = NULL;
    if (!uid || !*uid) return 0;
    owner_rec_t *o = smap_get(&c->owners, uid);
    if (!o) {
        o = calloc(1, sizeof *o);
        if (!o || !(o->uid = strdup(uid)) || smap_put(&c->owners, o->uid, o) < 0) {
            if (o) free(o->uid);
            free(o);
            return KP_ENOMEM;
        }
    }
    size_t i = 0;
    while (i < o->n && o->v[i].node != node)
        i++;
    if (i == o->n) {
        if (o->n == o->cap) {
            size_t cap = o->cap ? o->cap * 2 : 4;
            struct owner_count *v = realloc(o->v, cap * sizeof *v);
            if (!v) {
                if (!o->total) {
                    smap_del(&c->owners, o->uid);
                    free(o->uid);
                    free(o->v);
                    free(o);
                }
                return KP_ENOMEM;
            }
            o->v = v;
            o->cap = cap;
        }
        o->v[o->n].node = node;
        o->v[o->n].count = 0;
        o->n++;
    }
    o->v[i].count++;
    o->total++;
    *out = o;
    return 0;
}

static void owner_sub(sched_cache_t *c, owner_rec_t *o, size_t node)
{
    if (!o) return;
    for (size_t i = 0; i < o->n; i++) {
        if (o->v[i].node != node) continue;
        if (--o->v[i].count == 0) o->v[i] = o->v[--o->n];
        break;
    }
    if (--o->total == 0) {
        smap_del(&c->owners, o->uid);
        free(o->uid);
        free(o->v);
        free(o);
    }
}

/* Count record r (its requests set) on slot s. */
static int rec_use(sched_cache_t *c, pod_rec_t *r, node_slot_t *s, const char *owner)
{
    int rc = owner_add(c, owner, s->idx, &r->owner);
    if (rc < 0) return rc;
    rc = sched_usage_add(&s->use, &r->req, r->nz_cpu, r->nz_mem, r->ports, r->nports);
    if (rc < 0) {
        owner_sub(c, r->owner, s->idx);
        r->owner = NULL;
        return rc;
    }
    r->node = s->idx;
    return 0;
}

static void rec_unuse(sched_cache_t *c, pod_rec_t *r)
{
    node_slot_t *s = c->nodes[r->node];
    sched_usage_sub(&s->use, &r->req, r->nz_cpu, r->nz_mem, r->ports, r->nports);
    owner_sub(c, r->owner, r->node);
    r->owner = NULL;
}

static pod_rec_t *rec_new(sched_cache_t *c, const char *key)
{
    pod_rec_t *r = calloc(1, sizeof *r);
    if (!r || !(r->key = strdup(key)) || smap_put(&c->pods, r->key, r) < 0) {
        rec_free(r);
        return NULL;
    }
    return r;
}

/* Take r out of its state's counts (and the unschedulable list). */
static void state_leave(sched_cache_t *c, pod_rec_t *r)
{
    if (r->state == POD_PENDING) {
        unsched_unlink(c, r);
        c->npending--;
    } else if (r->state == POD_ASSUMED) {
        c->nassumed--;
    } else if (r->state == POD_BOUND) {
        c->nbound--;
    }
}

/* ---- nodes ---- */

int sched_cache_node_set(sched_cache_t *c, const json_t *node)
{
    const json_t *meta = json_object_get(node, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name || !*name) return KP_EINVAL;
    sched_node_info_t ni;
    int rc = sched_node_parse(node, &ni);
    if (rc < 0) return rc;
    pthread_mutex_lock(&c->mu);
    node_slot_t *s = slot_get(c, name);
    if (!s) {
        pthread_mutex_unlock(&c->mu);
        sched_node_info_clear(&ni);
        return KP_ENOMEM;
    }
    int changed = 1;
    if (s->obj) {
        const json_t *a = s->info.labels, *b = ni.labels;
        changed = !sched_node_info_same(&s->info, &ni) || (a || b ? !json_equal(a, b) : 0);
    } else {
        c->live++;
    }
    sched_node_info_t old = s->info;
    json_t *old_obj = s->obj;
    s->info = ni;
    s->obj = json_incref((json_t *)node);
    if (changed) c->gen++;
    pthread_mutex_unlock(&c->mu);
    json_decref(old_obj);
    sched_node_info_clear(&old);
    return changed;
}

void sched_cache_node_delete(sched_cache_t *c, const char *name)
{
    json_t *old_obj = NULL;
    sched_node_info_t old = {0};
    pthread_mutex_lock(&c->mu);
    node_slot_t *s = smap_get(&c->nodes_by_name, name);
    if (s && s->obj) {
        old_obj = s->obj;
        old = s->info;
        memset(&s->info, 0, sizeof s->info);
        s->obj = NULL;
        c->live--;
    }
    pthread_mutex_unlock(&c->mu);
    json_decref(old_obj);
    sched_node_info_clear(&old);
}

/* ---- pods ---- */

int sched_cache_pod_pending(sched_cache_t *c, const char *key, int spec_changed)
{
    int rc = 1;
    pthread_mutex_lock(&c->mu);
    pod_rec_t *r = smap_get(&c->pods, key);
    if (!r) {
        r = rec_new(c, key);
        if (!r) {
            rc = KP_ENOMEM;
        } else {
            r->state = POD_PENDING;
            c->npending++;
        }
    } else if (r->state == POD_ASSUMED) {
        rc = 0;
    } else if (r->state == POD_BOUND) {
        /* nodeName is never cleared; a record says BOUND only if the pod was
         * recreated under the same name between two events. */
        rec_unuse(c, r);
        state_leave(c, r);
        r->state = POD_PENDING;
        c->npending++;
        c->gen++;
    } else if (r->unsched) {
        if (spec_changed)
            unsched_unlink(c, r);
        else
            rc = 0;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int sched_cache_pod_bound(sched_cache_t *c, const char *key, const char *node, const sched_pod_t *p)
{
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    pod_rec_t *r = smap_get(&c->pods, key);
    node_slot_t *s = slot_get(c, node);
    if (!s || (!r && !(r = rec_new(c, key)))) {
        rc = KP_ENOMEM;
        goto out;
    }
    if (r->state == POD_ASSUMED || r->state == POD_BOUND) {
        const char *uid = r->owner ? r->owner->uid : NULL;
        int same = r->node == s->idx && !memcmp(&r->req, &p->req, sizeof r->req) &&
                   r->nz_cpu == p->nz_cpu && r->nz_mem == p->nz_mem && r->nports == p->nports &&
                   (!r->nports || !memcmp(r->ports, p->ports, r->nports * sizeof *r->ports)) &&
                   (uid == p->owner || (uid && p->owner && !strcmp(uid, p->owner)));
        if (!same) {
            rec_unuse(c, r);
            if ((rc = rec_set_req(r, p)) < 0 || (rc = rec_use(c, r, s, p->owner)) < 0) {
                /* Out of memory: drop the record rather than keep a wrong count. */
                state_leave(c, r);
                smap_del(&c->pods, r->key);
                rec_free(r);
                c->gen++;
                goto out;
            }
            c->gen++;
        }
    } else {
        if ((rc = rec_set_req(r, p)) < 0 || (rc = rec_use(c, r, s, p->owner)) < 0) {
            if (!r->state) {
                smap_del(&c->pods, r->key);
                rec_free(r);
            }
            goto out;
        }
    }
    state_leave(c, r);
    r->state = POD_BOUND;
    c->nbound++;
out:
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int sched_cache_pod_remove(sched_cache_t *c, const char *key)
{
    int freed = 0;
    pthread_mutex_lock(&c->mu);
    pod_rec_t *r = smap_del(&c->pods, key);
    if (r) {
        if (r->state == POD_ASSUMED || r->state == POD_BOUND) {
            rec_unuse(c, r);
            freed = 1;
            c->gen++;
        }
        state_leave(c, r);
    }
    pthread_mutex_unlock(&c->mu);
    rec_free(r);
    return freed;
}

/* ---- decisions ---- */

static int scratch_grow(sched_scratch_t *w, size_t n)
{
    if (n <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < n)
        cap *= 2;
    int64_t *count = realloc(w->count, cap * sizeof *count);
    if (count) w->count = count;
    int *score = realloc(w->score, cap * sizeof *score);
    if (score) w->score = score;
    size_t *feasible = realloc(w->feasible, cap * sizeof *feasible);
    if (feasible) w->feasible = feasible;
    if (!count || !score || !feasible) return KP_ENOMEM;
    w->cap = cap;
    return 0;
}

void sched_scratch_free(sched_scratch_t *w)
{
    free(w->count);
    free(w->score);
    free(w->feasible);
    w->count = NULL;
    w->score = NULL;
    w->feasible = NULL;
    w->cap = 0;
}

int sched_cache_schedule(sched_cache_t *c, const char *key, const sched_pod_t *p,
                         sched_scratch_t *w, sched_decision_t *d)
{
    int rc;
    sched_hist_t hist = {0};
    d->node[0] = 0;
    d->message = NULL;
    pthread_mutex_lock(&c->mu);
    d->gen = c->gen;
    pod_rec_t *r = smap_get(&c->pods, key);
    if (!r || r->state != POD_PENDING) {
        rc = KP_EEXIST;
        goto out;
    }
    if ((rc = scratch_grow(w, c->nnodes)) < 0) goto out;

    /* The owner's pods per node, for the spreading score. */
    const owner_rec_t *o = p->owner ? smap_get(&c->owners, p->owner) : NULL;
    if (o) {
        memset(w->count, 0, c->nnodes * sizeof *w->count);
        for (size_t i = 0; i < o->n; i++)
            w->count[o->v[i].node] = o->v[i].count;
    }

    size_t nf = 0;
    int64_t max = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        const node_slot_t *s = c->nodes[i];
        if (!s->obj) continue;
        const char *tkey = NULL, *tval = NULL;
        unsigned bits = sched_filter(p, &s->info, &s->use, &tkey, &tval);
        if (bits) {
            if ((rc = sched_hist_add_bits(&hist, bits, tkey, tval)) < 0) goto out;
            continue;
        }
        w->feasible[nf++] = i;
        w->score[i] = SCHED_W_FIT * sched_score_least(p, &s->info, &s->use);
        if (o && w->count[i] > max) max = w->count[i];
    }
    if (!nf) {
        rc = sched_hist_message(&hist, c->live, &d->message);
        if (rc == 0) rc = KP_ENOTFOUND;
        goto out;
    }

    /* The best score; among equals, each equally likely (reservoir). */
    size_t best = 0, ties = 0;
    int best_score = -1;
    for (size_t f = 0; f < nf; f++) {
        size_t i = w->feasible[f];
        int sc = w->score[i] + SCHED_W_SPREAD * sched_score_spread(o ? w->count[i] : 0, max);
        if (sc > best_score) {
            best_score = sc;
            best = i;
            ties = 1;
        } else if (sc == best_score && (unsigned)rand_r(&w->seed) % ++ties == 0) {
            best = i;
        }
    }

    node_slot_t *s = c->nodes[best];
    if ((rc = rec_set_req(r, p)) < 0 || (rc = rec_use(c, r, s, p->owner)) < 0) goto out;
    state_leave(c, r);
    r->state = POD_ASSUMED;
    c->nassumed++;
    snprintf(d->node, sizeof d->node, "%s", s->name);
    rc = 0;
out:
    pthread_mutex_unlock(&c->mu);
    sched_hist_free(&hist);
    return rc;
}

void sched_cache_forget(sched_cache_t *c, const char *key, const char *node)
{
    pthread_mutex_lock(&c->mu);
    pod_rec_t *r = smap_get(&c->pods, key);
    if (r && r->state == POD_ASSUMED && !strcmp(c->nodes[r->node]->name, node)) {
        rec_unuse(c, r);
        state_leave(c, r);
        r->state = POD_PENDING;
        c->npending++;
        c->gen++;
    }
    pthread_mutex_unlock(&c->mu);
}

int sched_cache_unschedulable(sched_cache_t *c, const char *key, uint64_t gen)
{
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    pod_rec_t *r = smap_get(&c->pods, key);
    if (r && r->state == POD_PENDING) {
        if (gen != c->gen)
            rc = 1;
        else
            unsched_link(c, r);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int sched_cache_take_unschedulable(sched_cache_t *c, char ***keys, size_t *n)
{
    int rc = 0;
    *keys = NULL;
    *n = 0;
    pthread_mutex_lock(&c->mu);
    c->gen++;
    size_t want = c->nunsched;
    if (want) {
        char **k = calloc(want, sizeof *k);
        size_t got = 0;
        for (pod_rec_t *r = c->unsched; k && r; r = r->unext) {
            if (!(k[got] = strdup(r->key))) break;
            got++;
        }
        if (!k || got < want) {
            for (size_t i = 0; k && i < got; i++)
                free(k[i]);
            free(k);
            rc = KP_ENOMEM;
        } else {
            while (c->unsched)
                unsched_unlink(c, c->unsched);
            *keys = k;
            *n = got;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void sched_cache_stats(sched_cache_t *c, sched_cache_stats_t *out)
{
    pthread_mutex_lock(&c->mu);
    out->nodes = c->live;
    out->pending = c->npending;
    out->unschedulable = c->nunsched;
    out->assumed = c->nassumed;
    out->bound = c->nbound;
    pthread_mutex_unlock(&c->mu);
}

int sched_cache_node_usage(sched_cache_t *c, const char *name, sched_res_t *out)
{
    int rc = KP_ENOTFOUND;
    pthread_mutex_lock(&c->mu);
    const node_slot_t *s = smap_get(&c->nodes_by_name, name);
    if (s) {
        *out = s->use.req;
        rc = 0;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}
