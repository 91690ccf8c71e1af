/*
 * heap.h -- an indexed min-heap of timers. An entry embeds a kp_heap_node_t
 * (its time and its place in the heap), so that it can leave the heap from
 * the middle or move to an earlier time in O(log n) (the client's work
 * queue's delayed keys, the HTTP engine's parked streams).
 *
 * Ownership: the heap holds pointers to nodes its caller owns. Threading:
 * none of its own; the owner's lock guards it. Errors: KP_* (lib/err.h).
 */
#ifndef KP_HEAP_H
#define KP_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define KP_HEAP_NONE SIZE_MAX

typedef struct kp_heap_node {
    int64_t key; /* the time; the smallest is on top */
    size_t idx;  /* its place; KP_HEAP_NONE: not in a heap */
} kp_heap_node_t;

typedef struct kp_heap {
    kp_heap_node_t **v;
    size_t n, cap;
} kp_heap_t; /* zeroed: empty */

static inline void kp_heap_node_init(kp_heap_node_t *e)
{
    e->idx = KP_HEAP_NONE;
}
static inline int kp_heap_has(const kp_heap_node_t *e)
{
    return e->idx != KP_HEAP_NONE;
}
static inline kp_heap_node_t *kp_heap_top(const kp_heap_t *h)
{
    return h->n ? h->v[0] : NULL;
}

/* Add e (not in a heap) at `key`. Errors: KP_ENOMEM (e stays out). */
int kp_heap_add(kp_heap_t *h, kp_heap_node_t *e, int64_t key);
/* Give e (in h) another key. */
void kp_heap_set_key(kp_heap_t *h, kp_heap_node_t *e, int64_t key);
/* Take e out of h; nothing when it is not in a heap. */
void kp_heap_del(kp_heap_t *h, kp_heap_node_t *e);
/* Take the top out; NULL when h is empty. */
kp_heap_node_t *kp_heap_pop(kp_heap_t *h);
/* Free h's array (its nodes are the caller's); h is empty after. */
void kp_heap_free(kp_heap_t *h);

#endif
