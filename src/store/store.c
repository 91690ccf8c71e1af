/*
 * store.c -- the store's front door: argument checks, then the backend.
 *
 * Every rule that all backends share lives here, once: the form of keys, the
 * value cap, and which revisions make sense. Backends implement the contract
 * of store.h behind store_ops_t (store_int.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "store_int.h"

static int check_key(const char *key, size_t *klen)
{
    if (!key) return KP_EINVAL;
    size_t n = strnlen(key, STORE_KEY_MAX + 1);
    if (n == 0 || n > STORE_KEY_MAX) return KP_EINVAL;
    *klen = n;
    return 0;
}

int store_open(const char *url, const store_options_t *opt, store_t **out)
{
    static const store_options_t defaults = {0};
    *out = NULL;
    if (!url) return KP_EINVAL;
    if (!opt) opt = &defaults;
    if (opt->keep_revisions < 0 || opt->keep_seconds < 0 || opt->compact_interval_ms < 0)
        return KP_EINVAL;
    if (!strncmp(url, "lmdb:", 5) && url[5]) return store__lmdb_open(url + 5, opt, out);
    if (!strncmp(url, "etcd://", 7) && url[7]) return store__etcd_open(url + 7, opt, out);
    return KP_EINVAL;
}

void store_close(store_t *s)
{
    if (s) s->ops->close(s);
}

static int write_op(store_t *s, store__op_t op, const char *key, const void *value,
                    size_t len, int64_t expect_rev, int64_t *out_rev)
{
    size_t klen;
    int rc = check_key(key, &klen);
    if (rc) return rc;
    if (expect_rev < 0 || (len && !value)) return KP_EINVAL;
    if (len > STORE_VALUE_MAX) return KP_ETOOLARGE;
    int64_t rev = 0;
    rc = s->ops->write(s, op, key, klen, value, len, expect_rev, &rev);
    if (out_rev && (rc == 0 || rc == KP_ECONFLICT)) *out_rev = rev;
    return rc;
}

int store_create(store_t *s, const char *key, const void *value, size_t len, int64_t *out_rev)
{
    return write_op(s, STORE__CREATE, key, value, len, 0, out_rev);
}

int store_update(store_t *s, const char *key, const void *value, size_t len,
                 int64_t expect_rev, int64_t *out_rev)
{
    return write_op(s, STORE__UPDATE, key, value, len, expect_rev, out_rev);
}

int store_delete(store_t *s, const char *key, int64_t expect_rev, int64_t *out_rev)
{
    return write_op(s, STORE__DELETE, key, NULL, 0, expect_rev, out_rev);
}

int store_get(store_t *s, const char *key, int64_t rev, store_kv_t **out)
{
    size_t klen;
    *out = NULL;
    int rc = check_key(key, &klen);
    if (rc) return rc;
    if (rev < 0) return KP_EINVAL;
    return s->ops->get(s, key, klen, rev, out);
}

int store_range(store_t *s, const char *prefix, const char *after, size_t limit, int64_t rev,
                store_range_t **out)
{
    *out = NULL;
    if (!prefix) prefix = "";
    if (after && !*after) after = NULL;
    if (rev < 0 || strlen(prefix) > STORE_KEY_MAX || (after && strlen(after) > STORE_KEY_MAX))
        return KP_EINVAL;
    return s->ops->range(s, prefix, after, limit, rev, out);
}

void store_range_free(store_range_t *r)
{
    /* Backends allocate a range as one block: the struct, then kvs and bytes. */
    free(r);
}

int store_status(store_t *s, store_status_t *out)
{
    memset(out, 0, sizeof *out);
    return s->ops->status(s, out);
}

int store_stale(store_t *s, const char *key, int64_t rev)
{
    size_t klen;
    if (!s->ops->stale || rev <= 0 || check_key(key, &klen)) return 0;
    return s->ops->stale(s, key, klen, rev);
}

int store_revision(store_t *s, int64_t *out)
{
    *out = 0;
    if (s->ops->revision) return s->ops->revision(s, out);
    store_status_t st;
    int rc = store_status(s, &st);
    if (!rc) *out = st.revision;
    return rc;
}

int store_health(store_t *s, char *why, size_t len)
{
    if (why && len) why[0] = '\0';
    if (s->ops->health) return s->ops->health(s, why, len);
    int64_t rev;
    int rc = store_revision(s, &rev);
    if (why && len) snprintf(why, len, "%s", rc ? err_str(rc) : "ok");
    return rc;
}

int store_watch_open(store_t *s, const char *prefix, int64_t after_rev, store_watch_t **out)
{
    *out = NULL;
    if (!prefix) prefix = "";
    if (strlen(prefix) > STORE_KEY_MAX) return KP_EINVAL;
    return s->ops->watch_open(s, prefix, after_rev, out);
}

int store_watch_next(store_watch_t *w, int timeout_ms, const store_event_t **ev)
{
    *ev = NULL;
    return w->ops->next(w, timeout_ms, ev);
}

int64_t store_watch_revision(const store_watch_t *w) { return w->ops->revision(w); }

void store_watch_progress(store_watch_t *w, int on) { w->ops->progress(w, on); }

void store_watch_request_progress(store_watch_t *w) { w->ops->request_progress(w); }

void store_watch_cancel(store_watch_t *w) { w->ops->cancel(w); }

void store_watch_close(store_watch_t *w)
{
    if (w) w->ops->close(w);
}

int store_compact(store_t *s, int64_t rev)
{
    if (rev <= 0) return KP_EINVAL;
    return s->ops->compact(s, rev);
}

int store_backup(store_t *s, const char *path, int64_t *out_rev)
{
    if (!path || !*path) return KP_EINVAL;
    int64_t rev = 0;
    int rc = s->ops->backup(s, path, &rev);
    if (out_rev && rc == 0) *out_rev = rev;
    return rc;
}

int store_restore(const char *backup_path, const char *dir)
{
    if (!backup_path || !*backup_path || !dir || !*dir) return KP_EINVAL;
    return store__lmdb_restore(backup_path, dir);
}
