/*
 * store_int.h -- what a store backend implements. Not for users of the store.
 *
 * store.c checks every argument (key form and size, value size, revisions)
 * before it calls a backend, so backends may assume valid input.
 */
#ifndef KP_STORE_INT_H
#define KP_STORE_INT_H

#include "store.h"

typedef enum store__op { STORE__CREATE = 1, STORE__UPDATE = 2, STORE__DELETE = 3 } store__op_t;

typedef struct store_ops {
    const char *name;
    void (*close)(store_t *s);
    /* One write. `key` is NUL-terminated with length klen; see store_create etc. */
    int (*write)(store_t *s, store__op_t op, const char *key, size_t klen,
                 const void *value, size_t vlen, int64_t expect_rev, int64_t *out_rev);
    int (*get)(store_t *s, const char *key, size_t klen, int64_t rev, store_kv_t **out);
    int (*range)(store_t *s, const char *prefix, const char *after, size_t limit,
                 int64_t rev, store_range_t **out);
    int (*status)(store_t *s, store_status_t *out);
    /* store_revision(); NULL: taken from status(). */
    int (*revision)(store_t *s, int64_t *out);
    int (*watch_open)(store_t *s, const char *prefix, int64_t after_rev, store_watch_t **out);
    int (*compact)(store_t *s, int64_t rev);
    int (*backup)(store_t *s, const char *path, int64_t *out_rev);
    /* store_health(); NULL: a revision read (store_revision()). */
    int (*health)(store_t *s, char *why, size_t len);
    /* store_stale(); NULL: never stale. */
    int (*stale)(store_t *s, const char *key, size_t klen, int64_t rev);
} store_ops_t;

typedef struct store_watch_ops {
    int (*next)(store_watch_t *w, int timeout_ms, const store_event_t **ev);
    int64_t (*revision)(const store_watch_t *w);
    void (*progress)(store_watch_t *w, int on);
    void (*request_progress)(store_watch_t *w);
    void (*cancel)(store_watch_t *w);
    void (*close)(store_watch_t *w);
} store_watch_ops_t;

/* Every backend's handle starts with this. */
struct store {
    const store_ops_t *ops;
};

struct store_watch {
    const store_watch_ops_t *ops;
};

/* Backends. `dir` / `endpoints` is the URL after its scheme. */
int store__lmdb_open(const char *dir, const store_options_t *opt, store_t **out);
int store__lmdb_restore(const char *backup_path, const char *dir);
int store__etcd_open(const char *endpoints, const store_options_t *opt, store_t **out);

#endif
