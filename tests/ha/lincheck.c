/*
 * lincheck.c -- see lincheck.h.
 *
 * The per-key search (check_key) is Lowe's refinement of Wing & Gong, as in
 * Porcupine's checkSingle:
 *
 *  - Every op contributes a call entry (at invoke_ns) and a return entry (at
 *    complete_ns; INT64_MAX for an unbounded LC_UNKNOWN) to one doubly linked
 *    list in time order. At equal times calls sort before returns, so ops
 *    that touch at one instant count as concurrent (the permissive reading).
 *  - Walking from the head, a call entry is an op that may be linearized
 *    now: if the model accepts it in the current state (for an LC_UNKNOWN
 *    write: "it took effect now"), and (linearized set + op, new state) was
 *    not visited before (INVARIANTS 2, 5), it is linearized: the call and its
 *    return are unlinked ("lifted"), the step is pushed, and the walk starts
 *    again from the head. Otherwise the walk moves on.
 *  - Reaching a return entry means that op's deadline passed while it was
 *    still not linearized: for a free unknown write, it never took effect
 *    (INVARIANT 4); otherwise pop the last step, relink it and try its next
 *    alternative, or move past it. An empty stack there means no
 *    linearization exists; an empty list means one was found.
 *
 * INVARIANTS of the search:
 *  1. `bits` is exactly the set of ops whose entries are lifted, and equals
 *     the ops on `stack`; `hash` is the XOR of their zobrist words (0 for a
 *     free unknown write, see 5) and of the state's hash.
 *  2. Every (bits, state) pair in the memo was reached once; reaching it again
 *     can lead to nothing new, so it is skipped (this bounds the search by
 *     the number of distinct pairs, not of interleavings).
 *  The search is checked against brute-force enumeration on random small
 *  histories (test_lincheck.c, test_random_vs_bruteforce).
 *  3. A register state's mod_rev is 0 when a write of unknown revision made
 *     it; `floor` is the highest revision known to have been written to the
 *     key so far, and a state with a known mod_rev has mod_rev == floor.
 *  4. A "free" unknown write (LC_UNKNOWN, and no get read its value) takes
 *     effect at a call-entry step like any op, or never: "never" changes no
 *     state, so placing it anywhere is the same as placing it last, at its
 *     return entry (its bound, or the end of the list). The search makes it
 *     there, as a forced move. An unknown write whose value a get returned
 *     must take effect, before that get returned (seen_writes).
 *  5. Dominance: a node that has linearized the same ops, in the same state,
 *     except for fewer free unknown writes, can do everything the other can
 *     (place the extra ones as "never"). The memo therefore keys on the state
 *     and the other ops, and a node is skipped when one with a subset of its
 *     free unknown writes was reached. Without this, k pending unknown writes
 *     multiply the search by up to 2^k.
 *  6. Order of moves at a node: first the ops that must take effect, in list
 *     order (pass 1), then the free unknown writes (pass 2), then the forced
 *     "never" at a free write's deadline. All moves of a node are still
 *     tried, so the search stays complete; the order only makes the likely
 *     linearization (unknown writes that never took effect, or that took
 *     effect just where something needs them) come first, and with 5 it
 *     keeps the sets of free writes reached small.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lincheck.h"

#define DEFAULT_MAX_STEPS 50000000ull
#define DEFAULT_MAX_MEMO  (1ull << 30)
#define MAX_STATES_SHOWN  6

struct lc_history {
    lc_op_t *ops; /* each key is an owned copy */
    size_t n, cap;
};

/* ---- a small growable string for the report ---- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap <= b->len + (size_t)n)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        if (!b->s) s[0] = '\0';
        b->s = s;
        b->cap = cap;
    }
}

/* ---- the history ---- */

int lc_history_new(lc_history_t **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : KP_ENOMEM;
}

void lc_history_free(lc_history_t *h)
{
    if (!h) return;
    for (size_t i = 0; i < h->n; i++)
        free((char *)h->ops[i].key);
    free(h->ops);
    free(h);
}

size_t lc_history_count(const lc_history_t *h)
{
    return h->n;
}

int lc_history_add(lc_history_t *h, const lc_op_t *op)
{
    if (!op->key || !op->key[0] || op->kind < LC_CREATE || op->kind > LC_GET) return KP_EINVAL;
    if (op->outcome < LC_OK || op->outcome > LC_UNKNOWN) return KP_EINVAL;
    if (op->outcome != LC_UNKNOWN && op->complete_ns < op->invoke_ns) return KP_EINVAL;
    if (op->outcome == LC_UNKNOWN && op->complete_ns && op->complete_ns < op->invoke_ns)
        return KP_EINVAL;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        lc_op_t *ops = realloc(h->ops, cap * sizeof *ops);
        if (!ops) return KP_ENOMEM;
        h->ops = ops;
        h->cap = cap;
    }
    char *k = strdup(op->key);
    if (!k) return KP_ENOMEM;
    h->ops[h->n] = *op;
    h->ops[h->n].key = k;
    h->n++;
    return 0;
}

static const char *kind_name(lc_kind_t k)
{
    switch (k) {
    case LC_CREATE:
        return "create";
    case LC_UPDATE:
        return "update";
    case LC_DELETE:
        return "delete";
    case LC_GET:
        return "get";
    }
    return "?";
}

static void fmt_op(sbuf_t *b, const lc_op_t *op)
{
    sb_printf(b, "#%" PRId64 " %s", op->id, kind_name(op->kind));
    if (op->kind == LC_CREATE || op->kind == LC_UPDATE) sb_printf(b, " v%" PRId64, op->value);
    if (op->kind == LC_UPDATE || op->kind == LC_DELETE)
        sb_printf(b, " expect=%" PRId64, op->expect_rev);
    switch (op->outcome) {
    case LC_OK:
        if (op->kind != LC_GET)
            sb_printf(b, " -> ok rev=%" PRId64, op->rev);
        else if (op->found)
            sb_printf(b, " -> v%" PRId64 "@%" PRId64, op->value, op->rev);
        else
            sb_printf(b, " -> notfound");
        break;
    case LC_FAIL:
        sb_printf(b, " -> %s", err_str(op->err));
        if (op->err == KP_ECONFLICT && op->rev) sb_printf(b, " (current %" PRId64 ")", op->rev);
        break;
    case LC_UNKNOWN:
        sb_printf(b, " -> unknown");
        break;
    }
    sb_printf(b, " [%" PRId64 ", ", op->invoke_ns);
    if (op->outcome == LC_UNKNOWN && !op->complete_ns)
        sb_printf(b, "inf)");
    else
        sb_printf(b, "%" PRId64 "]", op->complete_ns);
}

/* ---- the register model ---- */

typedef struct lstate {
    int64_t value;
    int64_t mod_rev; /* 0: written with an unknown revision (above floor) */
    int64_t floor;   /* highest revision known written to the key */
    int present;
} lstate_t;

static void fmt_state(sbuf_t *b, const lstate_t *s)
{
    if (!s->present)
        sb_printf(b, "absent (last rev %" PRId64 ")", s->floor);
    else if (s->mod_rev)
        sb_printf(b, "v%" PRId64 "@%" PRId64, s->value, s->mod_rev);
    else
        sb_printf(b, "v%" PRId64 "@?>%" PRId64, s->value, s->floor);
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Is the key's mod_rev (possibly unknown) equal to `e`? On yes, *pinned gets
 * the state with mod_rev known to be e. */
static bool rev_is(const lstate_t *s, int64_t e, lstate_t *pinned)
{
    *pinned = *s;
    if (s->mod_rev) return s->mod_rev == e;
    if (e <= s->floor) return false;
    pinned->mod_rev = pinned->floor = e;
    return true;
}

/* The states `op` may lead to from `s` (0, 1 or 2 of them, into out[]; for an
 * LC_UNKNOWN write out[0] is always "it never took effect", i.e. *s, which
 * the search uses only at the write's deadline, INVARIANT 4). */
static int step(const lstate_t *s, const lc_op_t *op, lstate_t out[2])
{
    lstate_t p;
    int n = 0;
    bool unknown = op->outcome == LC_UNKNOWN;
    if (op->outcome == LC_FAIL) {
        if (op->kind == LC_CREATE && op->err == KP_EEXIST) {
            if (!s->present) return 0;
        } else if ((op->kind == LC_UPDATE || op->kind == LC_DELETE) && op->err == KP_ENOTFOUND) {
            if (s->present) return 0;
        } else if ((op->kind == LC_UPDATE || op->kind == LC_DELETE) && op->err == KP_ECONFLICT) {
            if (!s->present || op->expect_rev == 0) return 0;
            if (op->rev) {
                if (op->rev == op->expect_rev || !rev_is(s, op->rev, &p)) return 0;
                out[0] = p;
                return 1;
            }
            if (s->mod_rev == op->expect_rev) return 0;
        } else {
            return 0;
        }
        out[0] = *s;
        return 1;
    }
    if (unknown) out[n++] = *s; /* it never took effect */
    switch (op->kind) {
    case LC_GET:
        if (unknown) { /* no information; lc_check drops these */
            out[0] = *s;
            return 1;
        }
        if (!op->found) {
            if (s->present) return 0;
            out[0] = *s;
            return 1;
        }
        if (!s->present || s->value != op->value || !rev_is(s, op->rev, &p)) return 0;
        out[0] = p;
        return 1;
    case LC_CREATE:
        if (!s->present && (unknown || op->rev > s->floor)) {
            lstate_t *t = &out[n++];
            t->present = 1;
            t->value = op->value;
            t->mod_rev = unknown ? 0 : op->rev;
            t->floor = unknown ? s->floor : op->rev;
        }
        break;
    case LC_UPDATE:
    case LC_DELETE:
        if (!s->present) break;
        if (op->expect_rev) {
            if (!rev_is(s, op->expect_rev, &p)) break;
        } else {
            p = *s;
        }
        if (!unknown && op->rev <= max64(p.floor, op->expect_rev)) break;
        {
            lstate_t *t = &out[n++];
            t->present = op->kind == LC_UPDATE;
            t->value = op->kind == LC_UPDATE ? op->value : 0;
            t->mod_rev = unknown || op->kind == LC_DELETE ? 0 : op->rev;
            t->floor = unknown ? p.floor : op->rev;
        }
        break;
    }
    return n;
}

/* ---- the memo: (linearized set, state) pairs seen ---- */

typedef struct memo_slot {
    uint64_t hash; /* 0: empty */
    lstate_t st;
    uint64_t *bits;
} memo_slot_t;

typedef struct memo {
    memo_slot_t *slots;
    size_t cap, used;
    size_t words;              /* per bit set */
    const uint64_t *free_mask; /* the free unknown writes (INVARIANT 5) */
    uint64_t **chunks;
    size_t nchunks, chunk_used, chunk_cap_words;
    uint64_t bytes, max_bytes;
} memo_t;

#define CHUNK_WORDS (1u << 16)

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t state_hash(const lstate_t *s)
{
    uint64_t h = mix64((uint64_t)s->value + 0x9e3779b97f4a7c15ull);
    h = mix64(h ^ (uint64_t)s->mod_rev);
    h = mix64(h ^ (uint64_t)s->floor);
    return mix64(h ^ (uint64_t)s->present);
}

static bool state_eq(const lstate_t *a, const lstate_t *b)
{
    return a->present == b->present && a->value == b->value && a->mod_rev == b->mod_rev &&
           a->floor == b->floor;
}

static void memo_free(memo_t *m)
{
    for (size_t i = 0; i < m->nchunks; i++)
        free(m->chunks[i]);
    free(m->chunks);
    free(m->slots);
}

/* Is the node with linearized set b dominated by the one with set a (same
 * state)? Yes when they linearized the same other ops and a's free unknown
 * writes are a subset of b's (INVARIANT 5). */
static bool dominated(const memo_t *m, const uint64_t *a, const uint64_t *b)
{
    for (size_t w = 0; w < m->words; w++)
        if ((a[w] & ~b[w]) || (b[w] & ~a[w] & ~m->free_mask[w])) return false;
    return true;
}

/* 1 if inserted (new), 0 if it or a node that dominates it was there,
 * KP_ENOMEM when over the limit. `hash` covers the state and the ops
 * linearized other than free unknown writes. */
static int memo_insert(memo_t *m, uint64_t hash, const uint64_t *bits, const lstate_t *st)
{
    if (!hash) hash = 1;
    if ((m->used + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        uint64_t add = (uint64_t)cap * sizeof(memo_slot_t) - (uint64_t)m->cap * sizeof(memo_slot_t);
        if (m->bytes + add > m->max_bytes) return KP_ENOMEM;
        memo_slot_t *slots = calloc(cap, sizeof *slots);
        if (!slots) return KP_ENOMEM;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].hash) continue;
            size_t j = m->slots[i].hash & (cap - 1);
            while (slots[j].hash)
                j = (j + 1) & (cap - 1);
            slots[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
        m->bytes += add;
    }
    size_t j = hash & (m->cap - 1);
    for (; m->slots[j].hash; j = (j + 1) & (m->cap - 1)) {
        memo_slot_t *s = &m->slots[j];
        if (s->hash == hash && state_eq(&s->st, st) && dominated(m, s->bits, bits)) return 0;
    }
    if (m->chunk_used + m->words > m->chunk_cap_words || !m->nchunks) {
        size_t cw = m->words > CHUNK_WORDS ? m->words : CHUNK_WORDS;
        if (m->bytes + cw * 8 > m->max_bytes) return KP_ENOMEM;
        uint64_t **ch = realloc(m->chunks, (m->nchunks + 1) * sizeof *ch);
        if (!ch) return KP_ENOMEM;
        m->chunks = ch;
        ch[m->nchunks] = malloc(cw * sizeof(uint64_t));
        if (!ch[m->nchunks]) return KP_ENOMEM;
        m->nchunks++;
        m->chunk_used = 0;
        m->chunk_cap_words = cw;
        m->bytes += cw * 8;
    }
    uint64_t *copy = m->chunks[m->nchunks - 1] + m->chunk_used;
    m->chunk_used += m->words;
    memcpy(copy, bits, m->words * sizeof *bits);
    m->slots[j].hash = hash;
    m->slots[j].st = *st;
    m->slots[j].bits = copy;
    m->used++;
    return 1;
}

/* ---- the per-key search ---- */

typedef struct entry {
    int op; /* index into the key's ops */
    int is_call;
    int64_t t;
    int match; /* a call's return entry, a return's call entry */
    int prev, next;
} entry_t;

typedef struct frame {
    int entry; /* the op's call entry */
    int alt;
    int forced; /* an unknown write's "never took effect" at its deadline */
    int pass;   /* the scan it was made in (INVARIANT 6) */
    lstate_t st;
} frame_t;

static int entry_cmp(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->is_call != y->is_call) return x->is_call ? -1 : 1;
    return x->op - y->op;
}

static void lift(entry_t *e, int i)
{
    e[e[i].prev].next = e[i].next;
    if (e[i].next >= 0) e[e[i].next].prev = e[i].prev;
    int m = e[i].match;
    e[e[m].prev].next = e[m].next;
    if (e[m].next >= 0) e[e[m].next].prev = e[m].prev;
}

static void unlift(entry_t *e, int i)
{
    int m = e[i].match;
    e[e[m].prev].next = m;
    if (e[m].next >= 0) e[e[m].next].prev = m;
    e[e[i].prev].next = i;
    if (e[i].next >= 0) e[e[i].next].prev = i;
}

typedef struct keyresult {
    lc_status_t status;
    uint64_t steps;
    int blocked_op;
    int depth;
    lstate_t states[MAX_STATES_SHOWN];
    int nstates;
    int last_op; /* the last op linearized on the longest prefix, -1: none */
} keyresult_t;

/* Values are unique per write (lincheck.h), so an ok get that read the value
 * of an LC_UNKNOWN write proves that it took effect, before that get
 * returned: mark it seen[] and pull its deadline ret[] in to the earliest
 * such get. A value written by more than one op proves nothing. */
typedef struct vref {
    int64_t value, t;
    int op, is_get;
} vref_t;

static int vref_cmp(const void *a, const void *b)
{
    const vref_t *x = a, *y = b;
    if (x->value != y->value) return x->value < y->value ? -1 : 1;
    if (x->is_get != y->is_get) return x->is_get - y->is_get;
    return x->t < y->t ? -1 : x->t > y->t;
}

static int seen_writes(const lc_op_t *const *ops, int n, char *seen, int64_t *ret)
{
    vref_t *v = malloc(((size_t)n + 1) * sizeof *v);
    int nv = 0;
    if (!v) return KP_ENOMEM;
    for (int i = 0; i < n; i++) {
        const lc_op_t *op = ops[i];
        if ((op->kind == LC_CREATE || op->kind == LC_UPDATE) && op->outcome != LC_FAIL)
            v[nv++] = (vref_t){.value = op->value, .op = i};
        else if (op->kind == LC_GET && op->outcome == LC_OK && op->found)
            v[nv++] = (vref_t){.value = op->value, .op = i, .is_get = 1, .t = op->complete_ns};
    }
    qsort(v, (size_t)nv, sizeof *v, vref_cmp);
    for (int i = 0; i < nv;) {
        int j = i;
        while (j < nv && v[j].value == v[i].value)
            j++;
        /* one writer, then the gets that saw it, earliest first */
        if (j - i >= 2 && !v[i].is_get && v[i + 1].is_get && ops[v[i].op]->outcome == LC_UNKNOWN) {
            const lc_op_t *w = ops[v[i].op];
            seen[v[i].op] = 1;
            if (v[i + 1].t < ret[v[i].op]) /* not before its call: the list needs that */
                ret[v[i].op] = v[i + 1].t > w->invoke_ns ? v[i + 1].t : w->invoke_ns;
        }
        i = j;
    }
    free(v);
    return 0;
}

static int check_key(const lc_op_t *const *ops, int n, const lc_limits_t *lim, keyresult_t *kr)
{
    int rc = KP_ENOMEM;
    entry_t *e = calloc((size_t)(2 * n + 1), sizeof *e);
    frame_t *stack = calloc((size_t)n + 1, sizeof *stack);
    uint64_t *z = calloc((size_t)n, sizeof *z);
    memo_t m = {0};
    m.words = ((size_t)n + 63) / 64;
    m.max_bytes = lim->max_memo_bytes;
    uint64_t *bits = calloc(m.words, sizeof *bits), *free_mask = calloc(m.words, sizeof *bits);
    char *seen = calloc((size_t)n + 1, 1), *is_free = calloc((size_t)n + 1, 1);
    int64_t *ret = calloc((size_t)n + 1, sizeof *ret);
    int *call_of = malloc(((size_t)n + 1) * sizeof *call_of);
    memset(kr, 0, sizeof *kr);
    kr->depth = -1;
    kr->blocked_op = -1;
    kr->last_op = -1;
    if (!e || !stack || !z || !bits || !free_mask || !seen || !is_free || !ret || !call_of)
        goto out;
    m.free_mask = free_mask;

    for (int i = 0; i < n; i++) {
        const lc_op_t *op = ops[i];
        ret[i] = op->outcome == LC_UNKNOWN && !op->complete_ns ? INT64_MAX : op->complete_ns;
    }
    if (seen_writes(ops, n, seen, ret) < 0) goto out;
    for (int i = 0; i < n; i++) {
        is_free[i] = ops[i]->outcome == LC_UNKNOWN && !seen[i];
        if (is_free[i]) free_mask[i / 64] |= 1ull << (i % 64);
        z[i] = is_free[i] ? 0 : mix64((uint64_t)i * 0x9e3779b97f4a7c15ull + 12345);
        e[1 + 2 * i] = (entry_t){.op = i, .is_call = 1, .t = ops[i]->invoke_ns};
        e[2 + 2 * i] = (entry_t){.op = i, .is_call = 0, .t = ret[i]};
    }
    qsort(e + 1, (size_t)(2 * n), sizeof *e, entry_cmp);
    for (int i = 1; i <= 2 * n; i++)
        if (e[i].is_call) call_of[e[i].op] = i;
    for (int i = 1; i <= 2 * n; i++) {
        if (!e[i].is_call) {
            e[call_of[e[i].op]].match = i;
            e[i].match = call_of[e[i].op];
        }
        e[i].prev = i - 1;
        e[i].next = i < 2 * n ? i + 1 : -1;
    }
    e[0].next = n ? 1 : -1;
    e[0].prev = -1;

    lstate_t st = {0};
    uint64_t hash = 0;
    int sp = 0, cur = e[0].next, alt_from = 0, pass = 1, dn = 0; /* dn: non-free frames */
    while (e[0].next >= 0) {
        if (++kr->steps > lim->max_steps) {
            kr->status = LC_TOO_COMPLEX;
            rc = 0;
            goto out;
        }
        if (e[cur].is_call) {
            int i = e[cur].op;
            if ((pass == 2) != is_free[i]) { /* INVARIANT 6 */
                cur = e[cur].next;
                continue;
            }
            lstate_t next[2];
            int k = step(&st, ops[i], next);
            bool moved = false;
            /* An unknown write takes effect here or waits: "never" is decided
             * at its return entry (INVARIANT 4). */
            int a = ops[i]->outcome == LC_UNKNOWN && alt_from < 1 ? 1 : alt_from;
            for (; a < k; a++) {
                bits[i / 64] |= 1ull << (i % 64);
                int r = memo_insert(&m, hash ^ z[i] ^ state_hash(&next[a]), bits, &next[a]);
                if (r < 0) {
                    kr->status = LC_TOO_COMPLEX;
                    rc = 0;
                    goto out;
                }
                if (r == 0) {
                    bits[i / 64] &= ~(1ull << (i % 64));
                    continue;
                }
                stack[sp++] = (frame_t){.entry = cur, .alt = a, .pass = pass, .st = st};
                dn += !is_free[i];
                st = next[a];
                hash ^= z[i];
                lift(e, cur);
                cur = e[0].next;
                pass = 1;
                moved = true;
                break;
            }
            alt_from = 0;
            if (!moved) cur = e[cur].next;
            continue;
        }
        int bo = e[cur].op;
        if (!is_free[bo]) {
            /* op bo ran out of time here. For the report: the deepest such
             * point, counting the ops that are not free unknown writes
             * (those only add noise), and the states seen there, the first
             * one before any free write was tried (pass 1). */
            if (dn > kr->depth) {
                kr->depth = dn;
                kr->blocked_op = bo;
                kr->nstates = 0;
                kr->last_op = -1;
                for (int j = sp - 1; j >= 0 && kr->last_op < 0; j--)
                    if (!is_free[e[stack[j].entry].op]) kr->last_op = e[stack[j].entry].op;
            }
            if (dn == kr->depth && bo == kr->blocked_op && kr->nstates < MAX_STATES_SHOWN) {
                bool dup = false;
                for (int j = 0; j < kr->nstates; j++)
                    dup = dup || state_eq(&kr->states[j], &st);
                if (!dup) kr->states[kr->nstates++] = st;
            }
        }
        if (pass == 1) { /* now the free unknown writes in the same window */
            pass = 2;
            cur = e[0].next;
            continue;
        }
        if (is_free[bo]) {
            /* The deadline of an unknown write that has not taken effect:
             * it never does. A forced move, outside the memo. */
            int c = e[cur].match;
            bits[bo / 64] |= 1ull << (bo % 64);
            stack[sp++] = (frame_t){.entry = c, .forced = 1, .st = st};
            lift(e, c);
            cur = e[0].next;
            pass = 1;
            continue;
        }
        for (;;) {
            if (sp == 0) {
                kr->status = LC_VIOLATION;
                rc = 0;
                goto out;
            }
            frame_t f = stack[--sp];
            int i = e[f.entry].op;
            st = f.st;
            hash ^= z[i];
            bits[i / 64] &= ~(1ull << (i % 64));
            unlift(e, f.entry);
            dn -= !is_free[i];
            if (f.forced) continue; /* its node had no other move */
            cur = f.entry;
            alt_from = f.alt + 1;
            pass = f.pass;
            break;
        }
    }
    kr->status = LC_LINEARIZABLE;
    rc = 0;
out:
    memo_free(&m);
    free(call_of);
    free(seen);
    free(is_free);
    free(ret);
    free(free_mask);
    free(bits);
    free(z);
    free(stack);
    free(e);
    return rc;
}

/* ---- the global revision order ---- */

typedef struct fact {
    int64_t rev, inv, comp;
    const lc_op_t *op;
} fact_t;

static int fact_by_comp(const void *a, const void *b)
{
    const fact_t *x = a, *y = b;
    return x->comp < y->comp ? -1 : x->comp > y->comp;
}

static int fact_by_inv(const void *a, const void *b)
{
    const fact_t *x = a, *y = b;
    return x->inv < y->inv ? -1 : x->inv > y->inv;
}

static int fact_by_rev(const void *a, const void *b)
{
    const fact_t *x = a, *y = b;
    return x->rev < y->rev ? -1 : x->rev > y->rev;
}

/* By revision, then by id, so that reports do not depend on qsort. */
static int fact_by_rev_id(const void *a, const void *b)
{
    const fact_t *x = a, *y = b;
    int c = fact_by_rev(a, b);
    return c ? c : x->op->id < y->op->id ? -1 : x->op->id > y->op->id;
}

static bool is_write(const lc_op_t *op)
{
    return op->kind != LC_GET;
}

/* Appends an account of each violation to b (at most 3); returns how many
 * there were, or KP_ENOMEM. *first_key gets the key of the first. */
static int check_revisions(const lc_op_t *const *ops, size_t n, sbuf_t *b, const char **first_key)
{
    fact_t *all = malloc((n + 1) * sizeof *all), *wr = malloc((n + 1) * sizeof *wr);
    size_t na = 0, nw = 0;
    int bad = 0;
    if (!all || !wr) {
        free(all);
        free(wr);
        return KP_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const lc_op_t *op = ops[i];
        bool fact = (op->outcome == LC_OK && (is_write(op) || op->found) && op->rev > 0) ||
                    (op->outcome == LC_FAIL && op->err == KP_ECONFLICT && op->rev > 0);
        if (!fact) continue;
        fact_t f = {.rev = op->rev, .inv = op->invoke_ns, .comp = op->complete_ns, .op = op};
        all[na++] = f;
        if (op->outcome == LC_OK && is_write(op)) wr[nw++] = f;
    }
#define REPORT(key)                                                                                \
    do {                                                                                           \
        if (!bad++) *first_key = (key);                                                            \
    } while (0)
    /* No revision is given twice; what a read saw at R is what was written at R. */
    qsort(wr, nw, sizeof *wr, fact_by_rev_id);
    for (size_t i = 1; i < nw; i++) {
        if (wr[i].rev != wr[i - 1].rev) continue;
        REPORT(wr[i].op->key);
        if (bad <= 3) {
            sb_printf(b, "revision %" PRId64 " acknowledged twice: %s ", wr[i].rev,
                      wr[i - 1].op->key);
            fmt_op(b, wr[i - 1].op);
            sb_printf(b, " and %s ", wr[i].op->key);
            fmt_op(b, wr[i].op);
            sb_printf(b, "\n");
        }
    }
    for (size_t i = 0; i < na; i++) {
        const lc_op_t *op = all[i].op;
        if (op->outcome == LC_OK && is_write(op)) continue;
        const fact_t *w = bsearch(&all[i], wr, nw, sizeof *wr, fact_by_rev);
        if (!w) continue; /* written by an op of unknown outcome, or not recorded */
        /* A key's mod_rev is never a delete's revision. */
        if (w->op->kind != LC_DELETE && strcmp(w->op->key, op->key) == 0 &&
            (op->kind != LC_GET || w->op->value == op->value))
            continue;
        REPORT(op->key);
        if (bad <= 3) {
            sb_printf(b, "%s ", op->key);
            fmt_op(b, op);
            sb_printf(b, " saw revision %" PRId64 ", which was written by %s ", op->rev,
                      w->op->key);
            fmt_op(b, w->op);
            sb_printf(b, "\n");
        }
    }
    /* Real-time order: whatever completed before W was invoked has a lower revision. */
    qsort(all, na, sizeof *all, fact_by_comp);
    qsort(wr, nw, sizeof *wr, fact_by_inv);
    size_t j = 0;
    const fact_t *hi = NULL;
    for (size_t i = 0; i < nw; i++) {
        for (; j < na && all[j].comp < wr[i].inv; j++)
            if (!hi || all[j].rev > hi->rev) hi = &all[j];
        if (!hi || hi->rev < wr[i].rev) continue;
        REPORT(wr[i].op->key);
        if (bad <= 3) {
            sb_printf(b, "revision went backwards: %s ", wr[i].op->key);
            fmt_op(b, wr[i].op);
            sb_printf(b, " was invoked after %s ", hi->op->key);
            fmt_op(b, hi->op);
            sb_printf(b, " completed with revision %" PRId64 "\n", hi->rev);
        }
    }
#undef REPORT
    free(all);
    free(wr);
    return bad;
}

/* ---- reads of writes that failed ---- */

static int by_key_value(const void *a, const void *b)
{
    const lc_op_t *x = *(const lc_op_t *const *)a, *y = *(const lc_op_t *const *)b;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    if (x->value != y->value) return x->value < y->value ? -1 : 1;
    return (x->kind == LC_GET) - (y->kind == LC_GET); /* writers first */
}

/* A get that returned the value of a write reported as failed (values are
 * unique): the sharpest account of a store that said "no" and did it anyway.
 * The search flags such a key too; this names the write. Returns the number
 * of such reads, or KP_ENOMEM. */
static int check_reads(const lc_history_t *h, sbuf_t *b, const char **first_key)
{
    const lc_op_t **v = malloc((h->n + 1) * sizeof *v);
    size_t nv = 0;
    int bad = 0;
    if (!v) return KP_ENOMEM;
    for (size_t i = 0; i < h->n; i++) {
        const lc_op_t *op = &h->ops[i];
        if (op->kind == LC_CREATE || op->kind == LC_UPDATE ||
            (op->kind == LC_GET && op->outcome == LC_OK && op->found))
            v[nv++] = op;
    }
    qsort(v, nv, sizeof *v, by_key_value);
    for (size_t i = 0; i < nv;) {
        size_t j = i, writers = 0, failed = 0;
        const lc_op_t *w = NULL;
        for (; j < nv && !strcmp(v[j]->key, v[i]->key) && v[j]->value == v[i]->value; j++) {
            if (v[j]->kind == LC_GET) {
                if (!writers || failed < writers) continue;
                if (!bad++) *first_key = v[j]->key;
                if (bad > 3) continue;
                sb_printf(b, "key %s: ", v[j]->key);
                fmt_op(b, v[j]);
                sb_printf(b, " read the value of ");
                fmt_op(b, w);
                sb_printf(b, ", which was reported as not taking effect%s\n",
                          w->err == KP_EUNAVAILABLE ? " (unavailable)" : "");
            } else {
                writers++;
                if (v[j]->outcome == LC_FAIL) failed++, w = v[j];
            }
        }
        i = j;
    }
    free(v);
    return bad;
}

static bool ignored(const lc_op_t *op);

/* A key that is not linearizable: would it be if the writes that were
 * reported as failed without a reason about the key (e.g. unavailable) may
 * have taken effect after all? If so, say so: that names the store's lie,
 * which for a delete no read can show directly. Returns KP_ENOMEM or 0. */
static int explain_failed(const lc_history_t *h, const char *key, const lc_op_t *blocked,
                          const lc_limits_t *lim, sbuf_t *b)
{
    size_t n = 0, nfail = 0;
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->ops[i].key, key)) n++;
    lc_op_t *copy = malloc((n + 1) * sizeof *copy);
    const lc_op_t **ops = malloc((n + 1) * sizeof *ops);
    const lc_op_t *shown[3] = {NULL, NULL, NULL};
    int rc = KP_ENOMEM;
    if (!copy || !ops) goto out;
    n = 0;
    for (size_t i = 0; i < h->n; i++) {
        const lc_op_t *op = &h->ops[i];
        if (strcmp(op->key, key)) continue;
        copy[n] = *op;
        if (op->kind != LC_GET && ignored(op)) {
            /* show the last three invoked before the op that got stuck */
            if (op->invoke_ns <= blocked->complete_ns || !shown[2]) {
                shown[0] = shown[1];
                shown[1] = shown[2];
                shown[2] = op;
            }
            nfail++;
            copy[n].outcome = LC_UNKNOWN;
            copy[n].complete_ns = 0;
        } else if (ignored(op)) {
            continue;
        }
        ops[n] = &copy[n];
        n++;
    }
    rc = 0;
    if (!nfail) goto out;
    keyresult_t kr;
    rc = check_key(ops, (int)n, lim, &kr);
    if (rc < 0 || kr.status != LC_LINEARIZABLE) goto out;
    sb_printf(b,
              "  it would be linearizable if one of the %zu writes reported as failed with no "
              "word on the key had taken effect; the last ones before the stuck op:\n",
              nfail);
    for (int i = 0; i < 3; i++) {
        if (!shown[i]) continue;
        sb_printf(b, "    ");
        fmt_op(b, shown[i]);
        sb_printf(b, "\n");
    }
out:
    free(copy);
    free(ops);
    return rc;
}

/* ---- lc_check ---- */

static int op_by_key(const void *a, const void *b)
{
    const lc_op_t *x = *(const lc_op_t *const *)a, *y = *(const lc_op_t *const *)b;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    return x->invoke_ns < y->invoke_ns ? -1 : x->invoke_ns > y->invoke_ns;
}

static bool ignored(const lc_op_t *op)
{
    if (op->kind == LC_GET) return op->outcome != LC_OK;
    return op->outcome == LC_FAIL && op->err != KP_EEXIST && op->err != KP_ENOTFOUND &&
           op->err != KP_ECONFLICT;
}

static void explain_key(sbuf_t *b, const char *key, const lc_op_t *const *ops, int n,
                        const keyresult_t *kr)
{
    if (kr->status == LC_TOO_COMPLEX) {
        sb_printf(b, "key %s: too complex (%d ops, gave up after %" PRIu64 " steps)\n", key, n,
                  kr->steps);
        return;
    }
    sb_printf(b, "key %s: not linearizable (%d ops). The longest linearizable prefix has %d ops",
              key, n, kr->depth);
    if (kr->last_op >= 0) {
        sb_printf(b, ", ending with ");
        fmt_op(b, ops[kr->last_op]);
    }
    sb_printf(b, ";\n  then this op cannot be linearized: ");
    fmt_op(b, ops[kr->blocked_op]);
    sb_printf(b, "\n  states considered there:");
    for (int i = 0; i < kr->nstates; i++) {
        sb_printf(b, i ? ", " : " ");
        fmt_state(b, &kr->states[i]);
    }
    sb_printf(b, "\n");
}

int lc_check(const lc_history_t *h, const lc_limits_t *lim_in, lc_report_t *rep)
{
    lc_limits_t lim = {DEFAULT_MAX_STEPS, DEFAULT_MAX_MEMO};
    if (lim_in && lim_in->max_steps) lim.max_steps = lim_in->max_steps;
    if (lim_in && lim_in->max_memo_bytes) lim.max_memo_bytes = lim_in->max_memo_bytes;
    memset(rep, 0, sizeof *rep);
    const lc_op_t **ops = malloc((h->n + 1) * sizeof *ops);
    sbuf_t b = {0};
    const char *first = NULL;
    int rc = KP_ENOMEM;
    if (!ops) return KP_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < h->n; i++) {
        if (ignored(&h->ops[i])) continue;
        ops[n++] = &h->ops[i];
        if (h->ops[i].outcome == LC_UNKNOWN) rep->unknown++;
    }
    rep->ops = n;
    int rb = check_reads(h, &b, &first);
    if (rb < 0) goto out;
    qsort(ops, n, sizeof *ops, op_by_key);
    size_t violations = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && strcmp(ops[j]->key, ops[i]->key) == 0)
            j++;
        keyresult_t kr;
        if (j - i > INT32_MAX / 4) goto out;
        rc = check_key(ops + i, (int)(j - i), &lim, &kr);
        if (rc < 0) goto out;
        rep->keys++;
        rep->steps += kr.steps;
        if (j - i > rep->max_key_ops) rep->max_key_ops = j - i;
        if (kr.status != LC_LINEARIZABLE) {
            if (!rep->bad_keys++ && !first) first = ops[i]->key;
            if (kr.status == LC_VIOLATION) violations++;
            if (rep->bad_keys <= 3) {
                explain_key(&b, ops[i]->key, ops + i, (int)(j - i), &kr);
                if (kr.status == LC_VIOLATION &&
                    explain_failed(h, ops[i]->key, ops[i + (size_t)kr.blocked_op], &lim, &b) < 0)
                    goto out;
            }
        }
        i = j;
    }
    rc = check_revisions(ops, n, &b, first ? &(const char *){NULL} : &first);
    if (rc < 0) goto out;
    if (violations || rc > 0 || rb > 0)
        rep->status = LC_VIOLATION;
    else if (rep->bad_keys)
        rep->status = LC_TOO_COMPLEX;
    sb_printf(&b, "%s", "");
    rc = KP_ENOMEM;
    if (b.oom) goto out;
    if (first && !(rep->key = strdup(first))) goto out;
    rep->explain = b.s;
    b.s = NULL;
    rc = 0;
out:
    free(b.s);
    free(ops);
    if (rc < 0) lc_report_free(rep);
    return rc;
}

void lc_report_free(lc_report_t *rep)
{
    free(rep->key);
    free(rep->explain);
    rep->key = rep->explain = NULL;
}

/* ---- loading a history file ---- */

#define KEY_MAX 400 /* store.h's STORE_KEY_MAX */

typedef struct pending {
    lc_op_t op;
    char *key;
    int have_i, have_r;
} pending_t;

static void pending_free(pending_t *p, size_t np)
{
    for (size_t i = 0; p && i < np; i++)
        free(p[i].key);
    free(p);
}

static int parse_kind(const char *s, lc_kind_t *k)
{
    if (!strcmp(s, "create"))
        *k = LC_CREATE;
    else if (!strcmp(s, "update"))
        *k = LC_UPDATE;
    else if (!strcmp(s, "delete"))
        *k = LC_DELETE;
    else if (!strcmp(s, "get"))
        *k = LC_GET;
    else
        return -1;
    return 0;
}

/* One R line's outcome into op; -1 if malformed. `drop` is set for an op
 * that carries no information. */
static int parse_result(lc_op_t *op, const char *what, int nf, int64_t a, int64_t v, int *drop)
{
    *drop = 0;
    op->outcome = LC_OK;
    if (!strcmp(what, "ok")) {
        if (nf < 4) return -1;
        op->rev = a;
        if (op->kind == LC_GET) {
            if (nf < 5) return -1;
            op->found = 1;
            op->value = v;
        }
    } else if (!strcmp(what, "notfound")) {
        if (op->kind == LC_CREATE) return -1;
        if (op->kind != LC_GET) {
            op->outcome = LC_FAIL;
            op->err = KP_ENOTFOUND;
        }
    } else if (!strcmp(what, "exists")) {
        op->outcome = LC_FAIL;
        op->err = KP_EEXIST;
    } else if (!strcmp(what, "conflict")) {
        if (nf < 4) return -1;
        op->outcome = LC_FAIL;
        op->err = KP_ECONFLICT;
        op->rev = a;
    } else if (!strcmp(what, "unknown")) {
        op->outcome = LC_UNKNOWN;
        if (op->kind == LC_GET) *drop = 1;
    } else if (!strcmp(what, "fail")) {
        op->outcome = LC_FAIL;
        op->err = KP_EUNAVAILABLE; /* did not take effect; says nothing of the key */
    } else if (!strcmp(what, "error")) {
        op->outcome = LC_UNKNOWN;
        op->complete_ns = 0;
        if (op->kind == LC_GET) *drop = 1;
    } else {
        return -1;
    }
    return 0;
}

int lc_history_load(FILE *f, lc_history_t **out, size_t *line_no)
{
    lc_history_t *h = NULL;
    pending_t *p = NULL; /* indexed by id */
    size_t np = 0;
    char *line = NULL;
    size_t lcap = 0, ln = 0;
    ssize_t len;
    int rc = lc_history_new(&h);
    if (rc < 0) return rc;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        ln++;
        if (len == 0 || line[0] == '#' || line[0] == '\n') continue;
        if (line[len - 1] != '\n') break; /* torn last line */
        char c, word[32], key[KEY_MAX + 1], what[32];
        int64_t id, t, a = 0, v = 0;
        if (line[0] == 'I') {
            if (sscanf(line, "%c %" SCNd64 " %" SCNd64 " %31s %399s %" SCNd64 " %" SCNd64, &c, &id,
                       &t, word, key, &v, &a) != 7)
                goto bad;
        } else if (line[0] == 'R') {
            if (sscanf(line, "%c %" SCNd64 " %" SCNd64 " %31s", &c, &id, &t, what) != 4) goto bad;
        } else {
            goto bad;
        }
        if (id <= 0 || id > (1 << 28)) goto bad;
        if ((size_t)id >= np) {
            size_t nn = np ? np : 1024;
            while (nn <= (size_t)id)
                nn *= 2;
            pending_t *q = realloc(p, nn * sizeof *q);
            if (!q) goto oom;
            memset(q + np, 0, (nn - np) * sizeof *q);
            p = q;
            np = nn;
        }
        pending_t *e = &p[id];
        if (line[0] == 'I') {
            if (e->have_i) goto bad;
            e->have_i = 1;
            if (parse_kind(word, &e->op.kind)) goto bad;
            if (!(e->key = strdup(key))) goto oom;
            e->op.id = id;
            e->op.invoke_ns = t;
            if (e->op.kind == LC_CREATE || e->op.kind == LC_UPDATE) e->op.value = v;
            if (e->op.kind == LC_UPDATE || e->op.kind == LC_DELETE) e->op.expect_rev = a;
        } else {
            if (!e->have_i || e->have_r) goto bad;
            int nf = sscanf(line, "%c %" SCNd64 " %" SCNd64 " %31s %" SCNd64 " %" SCNd64, &c, &id,
                            &t, what, &a, &v);
            int drop;
            e->op.complete_ns = t;
            if (parse_result(&e->op, what, nf, a, v, &drop)) goto bad;
            e->have_r = drop ? 2 : 1;
        }
    }
    for (size_t i = 0; i < np; i++) {
        pending_t *e = &p[i];
        if (!e->have_i || e->have_r == 2) continue;
        if (!e->have_r) {
            if (e->op.kind == LC_GET) continue;
            e->op.outcome = LC_UNKNOWN;
            e->op.complete_ns = 0;
        }
        e->op.key = e->key;
        rc = lc_history_add(h, &e->op);
        if (rc == KP_EINVAL) goto bad;
        if (rc < 0) goto oom;
    }
    free(line);
    pending_free(p, np);
    *out = h;
    return 0;
bad:
    if (line_no) *line_no = ln;
    free(line);
    pending_free(p, np);
    lc_history_free(h);
    return KP_ECORRUPT;
oom:
    free(line);
    pending_free(p, np);
    lc_history_free(h);
    return KP_ENOMEM;
}
