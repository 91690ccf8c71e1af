/*
 * intern.c -- equal subtrees shared between the objects an informer caches
 * (client_int.h).
 *
 * The pods of one ReplicaSet carry the same containers, tolerations,
 * volumes, labels and owner references; parsed from each pod's event, every
 * copy was a tree of its own, and at 10,000 pods the pods' informer held
 * 140 MB of them. An interned subtree is kept once: the objects share it by
 * reference (cached objects are never modified, informer.c's invariant 1).
 *
 * Which subtrees: the values of metadata's and spec's fields that are
 * objects or arrays (what a controller stamps from a template). Status
 * differs per object and is left as it is: a table entry for every one
 * would only cost.
 *
 * The table maps a hash of a subtree's content (walked, not encoded) to
 * the subtree (a reference). A candidate is shared only when it is equal (json_equal) to
 * the entry; a hash collision with an unequal one is left unshared. Entries
 * nobody else holds any more (reference count 1) are swept when the table
 * has doubled since the last sweep.
 *
 * Not thread-safe: an informer interns on its own thread only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"

#define KC__INTERN_VALUES_MAX 4096 /* subtrees of more values are left alone */
#define KC__INTERN_SWEEP_MIN  1024

struct kc__intern {
    json_t *table;  /* "%016llx" hash -> subtree */
    size_t swept_n; /* table size after the last sweep */
};

kc__intern_t *kc__intern_new(void)
{
    kc__intern_t *t = calloc(1, sizeof *t);
    if (t && !(t->table = json_object())) {
        free(t);
        t = NULL;
    }
    return t;
}

void kc__intern_free(kc__intern_t *t)
{
    if (!t) return;
    json_decref(t->table);
    free(t);
}

size_t kc__intern_size(const kc__intern_t *t)
{
    return t ? json_object_size(t->table) : 0;
}

#define FNV_PRIME 1099511628211ull

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * FNV_PRIME; /* FNV-1a */
    return h;
}

/* A hash of v's content (keys in their order), walked without encoding;
 * *budget counts the values walked down, and at 0 the walk gives up (a
 * subtree too big to be worth sharing). */
static uint64_t tree_hash(const json_t *v, uint64_t h, long *budget)
{
    if (--*budget < 0) return h;
    unsigned char type = (unsigned char)json_typeof(v);
    h = mix_bytes(h, &type, 1);
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            h = mix_bytes(h, k, strlen(k) + 1);
            h = tree_hash(x, h, budget);
        }
        return h;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
            h = tree_hash(x, h, budget);
        return h;
    }
    case JSON_STRING:
        return mix_bytes(h, json_string_value(v), json_string_length(v));
    case JSON_INTEGER: {
        json_int_t i = json_integer_value(v);
        return mix_bytes(h, &i, sizeof i);
    }
    case JSON_REAL: {
        double d = json_real_value(v);
        return mix_bytes(h, &d, sizeof d);
    }
    default: /* true, false, null: the type says it all */
        return h;
    }
}

static void sweep(kc__intern_t *t)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(t->table, tmp, k, v) {
        /* 1: only the table holds it; nobody can take a new reference but
         * through the table, on this thread. */
        if (__atomic_load_n(&v->refcount, __ATOMIC_ACQUIRE) == 1) json_object_del(t->table, k);
    }
    t->swept_n = json_object_size(t->table);
}

/* The shared subtree equal to v (a new reference), or NULL: keep v (it
 * joined the table, or cannot be shared). */
static json_t *shared(kc__intern_t *t, json_t *v)
{
    long budget = KC__INTERN_VALUES_MAX;
    uint64_t h = tree_hash(v, 1469598103934665603ull, &budget);
    if (budget < 0) return NULL;
    char key[24];
    snprintf(key, sizeof key, "%016llx", (unsigned long long)h);
    json_t *have = json_object_get(t->table, key);
    if (have) return have != v && json_equal(have, v) ? json_incref(have) : NULL;
    if (json_object_size(t->table) >= 2 * t->swept_n + KC__INTERN_SWEEP_MIN) sweep(t);
    json_object_set(t->table, key, v); /* out of memory: v stays unshared */
    return NULL;
}

/* Share parent's object and array fields: prev's (the same field of the
 * version replaced) when equal, which costs no encoding, else the table's. */
static void intern_fields(kc__intern_t *t, json_t *parent, const json_t *prev)
{
    for (void *it = json_object_iter(parent); it; it = json_object_iter_next(parent, it)) {
        json_t *v = json_object_iter_value(it);
        if (!json_is_object(v) && !json_is_array(v)) continue;
        json_t *p = json_object_get(prev, json_object_iter_key(it));
        json_t *s = p && p != v && json_equal(p, v) ? json_incref(p) : shared(t, v);
        if (s) json_object_iter_set_new(parent, it, s);
    }
}

void kc__intern(kc__intern_t *t, json_t *obj, const json_t *prev)
{
    if (!t || !json_is_object(obj)) return;
    static const char *const parts[] = {"metadata", "spec"};
    for (size_t i = 0; i < 2; i++)
        intern_fields(t, json_object_get(obj, parts[i]), json_object_get(prev, parts[i]));
}
