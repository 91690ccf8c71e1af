/*
 * lincheck.h -- a linearizability checker for histories of store operations.
 *
 * A history is a set of operations on independent keys, each with the time it
 * was invoked and the time its answer came back (monotonic ns, one clock for
 * the whole history). Each key is a register holding (value, mod_revision),
 * modelled exactly as store.h specifies it:
 *
 *   create            ok iff the key is absent;              EXISTS otherwise
 *   update(E)         ok iff present and (E == 0 or mod_rev == E);
 *                     NOTFOUND if absent, CONFLICT (with the current mod_rev)
 *   delete(E)         as update, and the key becomes absent
 *   get               the value and mod_rev, or NOTFOUND
 *
 * An ok write carries the revision it got. Within a key, writes take effect in
 * revision order, so an ok write's revision is above every revision the key
 * had before it. Values are int64 ids; a recorder makes each written value
 * unique, so that a read names the write it saw.
 *
 * Outcomes:
 *   LC_OK       the operation took effect (a get: its answer is `found`,
 *               `value`, `rev`).
 *   LC_FAIL     it definitely did not take effect, for the reason `err`
 *               (KP_EEXIST, KP_ENOTFOUND, KP_ECONFLICT): the reason is itself
 *               an observation of the key's state at some point in the
 *               operation's window. A failure with any other `err` carries no
 *               information and is ignored.
 *   LC_UNKNOWN  timeout, lost connection, killed process: the write took
 *               effect once at some point after invoke_ns, or never. With
 *               complete_ns 0 there is no bound; otherwise it took effect
 *               before complete_ns or not at all (e.g. the process that ran it
 *               was reaped at complete_ns). Its revision is unknown: a later
 *               read pins it. An LC_UNKNOWN get is ignored.
 *
 * The check (lc_check):
 *  1. per key, the Wing & Gong search with Lowe's just-in-time linearization
 *     and memoization of (set of linearized ops, register state), as
 *     Porcupine and Knossos do; bounded by lc_limits_t, past which the answer
 *     is LC_TOO_COMPLEX rather than a hang. Unknown writes are what makes it
 *     expensive; three rules keep them cheap (see lincheck.c): "never took
 *     effect" is decided at the write's deadline only, a search node that
 *     has placed fewer unknown writes in the same state dominates one that
 *     has placed more, and an unknown write whose (unique) value a get
 *     returned must have taken effect before that get returned;
 *  2. across keys, the global revision order: if an op that observed
 *     revision R (an ok write got R, an ok get read mod_rev R, a conflict
 *     reported R) completed before an ok write W was invoked, then R <
 *     W's revision; and no two ok writes share a revision.
 *
 * History file format (one event a line, appended as it happens so that a
 * crash of the recorder loses at most a line; lc_history_load):
 *   I <id> <t_ns> <create|update|delete|get> <key> <value> <expect_rev>
 *   R <id> <t_ns> ok <rev> [<value>]   write ok with its revision; get found
 *   R <id> <t_ns> notfound             get: absent; update/delete: failed
 *   R <id> <t_ns> exists               create failed
 *   R <id> <t_ns> conflict <cur_rev>   update/delete failed (0: rev unknown)
 *   R <id> <t_ns> fail <word>          did not take effect, for a reason that
 *                                      says nothing of the key (e.g. etcd
 *                                      was unreachable): the op is dropped,
 *                                      and a read of its value is flagged
 *   R <id> <t_ns> unknown              outcome unknown, took effect before t
 *   R <id> <t_ns> error <word>         no information (dropped for a get,
 *                                      LC_UNKNOWN without bound for a write)
 *   # ...                              a comment (crash markers, settings)
 * An I without its R is LC_UNKNOWN without bound. Keys hold no spaces.
 */
#ifndef KP_LINCHECK_H
#define KP_LINCHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum lc_kind { LC_CREATE = 1, LC_UPDATE, LC_DELETE, LC_GET } lc_kind_t;
typedef enum lc_outcome { LC_OK = 0, LC_FAIL, LC_UNKNOWN } lc_outcome_t;

typedef struct lc_op {
    const char *key; /* copied by lc_history_add() */
    lc_kind_t kind;
    int64_t value;      /* create/update: written; ok get with found: read */
    int64_t expect_rev; /* update/delete: the expected mod_rev (0: any) */
    lc_outcome_t outcome;
    int found;   /* ok get: 1 found, 0 not found */
    int err;     /* LC_FAIL: KP_EEXIST, KP_ENOTFOUND or KP_ECONFLICT
                    (any other: no information, the op is ignored) */
    int64_t rev; /* ok write: its revision; ok get found: mod_rev;
                    conflict: the current mod_rev (0: not reported) */
    int64_t invoke_ns;
    int64_t complete_ns; /* LC_UNKNOWN: 0 is no bound */
    int64_t id;          /* the caller's name for it, shown in reports */
} lc_op_t;

typedef struct lc_history lc_history_t;

/* Limits on the search of one key; 0 means the default (in brackets). */
typedef struct lc_limits {
    uint64_t max_steps;      /* search steps per key [50 million] */
    uint64_t max_memo_bytes; /* memo table memory per key [1 GiB] */
} lc_limits_t;

typedef enum lc_status {
    LC_LINEARIZABLE = 0,
    LC_VIOLATION = 1,
    LC_TOO_COMPLEX = 2,
} lc_status_t;

/* The answer of lc_check(). Owned by the caller: lc_report_free(). */
typedef struct lc_report {
    lc_status_t status;
    char *key;          /* the first key found not linearizable (or too
                           complex); for a revision-order violation the key
                           of the write whose revision is too low; else NULL */
    char *explain;      /* a short human-readable account; "" when fine */
    size_t keys;        /* keys checked */
    size_t ops;         /* operations checked (ignored ones not counted) */
    size_t unknown;     /* LC_UNKNOWN writes among them */
    size_t bad_keys;    /* keys that failed (violation or too complex) */
    size_t max_key_ops; /* operations on the busiest key */
    uint64_t steps;     /* search steps over all keys */
} lc_report_t;

/* New empty history; *out is owned by the caller (lc_history_free).
 * Errors: KP_ENOMEM. */
int lc_history_new(lc_history_t **out);
void lc_history_free(lc_history_t *h);

/* Append a copy of *op (the key is copied). Errors: KP_EINVAL (no key, bad
 * kind, complete before invoke), KP_ENOMEM. */
int lc_history_add(lc_history_t *h, const lc_op_t *op);

size_t lc_history_count(const lc_history_t *h);

/* Read a history in the file format above into a new history (*out owned by
 * the caller). A torn last line (a recorder killed mid-write) is skipped.
 * Errors: KP_ECORRUPT (a malformed line: `*line` gets its number when
 * line is not NULL), KP_ENOMEM. */
int lc_history_load(FILE *f, lc_history_t **out, size_t *line);

/* Check the history (see the top). Returns 0 with the verdict in *rep, which
 * the caller frees with lc_report_free(); lim may be NULL. Errors: KP_ENOMEM
 * (outside the search; running out of memo memory inside it is
 * LC_TOO_COMPLEX). */
int lc_check(const lc_history_t *h, const lc_limits_t *lim, lc_report_t *rep);
void lc_report_free(lc_report_t *rep);

#endif
