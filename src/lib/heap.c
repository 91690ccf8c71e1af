/*
 * heap.c -- the indexed min-heap of heap.h: a binary heap in an array, each
 * node told its index as it moves.
 */
#include "lib/heap.h"

#include <stdlib.h>

#include "lib/err.h"

static void put(kp_heap_t *h, size_t i, kp_heap_node_t *e)
{
    h->v[i] = e;
    e->idx = i;
}

static void up(kp_heap_t *h, size_t i)
{
    kp_heap_node_t *e = h->v[i];
    while (i) {
        size_t parent = (i - 1) / 2;
        if (h->v[parent]->key <= e->key) break;
        put(h, i, h->v[parent]);
        i = parent;
    }
    put(h, i, e);
}

static void down(kp_heap_t *h, size_t i)
{
    kp_heap_node_t *e = h->v[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->v[c + 1]->key < h->v[c]->key) c++;
        if (e->key <= h->v[c]->key) break;
        put(h, i, h->v[c]);
        i = c;
    }
    put(h, i, e);
}

int kp_heap_add(kp_heap_t *h, kp_heap_node_t *e, int64_t key)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        kp_heap_node_t **v = realloc(h->v, cap * sizeof *v);
        if (!v) return KP_ENOMEM;
        h->v = v;
        h->cap = cap;
    }
    e->key = key;
    put(h, h->n++, e);
    up(h, e->idx);
    return 0;
}

void kp_heap_set_key(kp_heap_t *h, kp_heap_node_t *e, int64_t key)
{
    e->key = key;
    up(h, e->idx);
    down(h, e->idx);
}

void kp_heap_del(kp_heap_t *h, kp_heap_node_t *e)
{
    size_t i = e->idx;
    if (i == KP_HEAP_NONE) return;
    e->idx = KP_HEAP_NONE;
    kp_heap_node_t *last = h->v[--h->n];
    if (i == h->n) return;
    put(h, i, last);
    up(h, i);
    down(h, last->idx);
}

kp_heap_node_t *kp_heap_pop(kp_heap_t *h)
{
    if (!h->n) return NULL;
    kp_heap_node_t *top = h->v[0];
    kp_heap_del(h, top);
    return top;
}

void kp_heap_free(kp_heap_t *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
