/*
 * etcd_conn.c -- one unary call to etcd's v3 gRPC API, with endpoint
 * failover and timeouts (ENDPOINTS AND TIMEOUTS in etcd_int.h), over one
 * shared HTTP/2 connection per endpoint (grpc.h).
 *
 * Connections are made when first needed and shared by every caller; a
 * caller holds a reference while it uses one. A connection that fails (the
 * transport says it died, or a call on it could not be sent) is taken out
 * of its slot, so that the next caller connects afresh, and is closed when
 * its last user lets go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lib/log.h"
#include "etcd_int.h"
#include "store/etcd_pb.h"

struct etcd_conn {
    grpc_conn_t *g;
    int refs; /* under es->mu */
};

int etcd__error(const char *msg)
{
    static const struct {
        const char *needle;
        int rc;
    } map[] = {
        {"required revision has been compacted", KP_ECOMPACTED},
        {"required revision is a future revision", KP_EFUTURE},
        {"request is too large", KP_ETOOLARGE},
        {"message larger than max", KP_ETOOLARGE},
        {"database space exceeded", KP_ENOSPC},
        {"no leader", KP_EUNAVAILABLE},
        {"not capable", KP_EUNAVAILABLE},
        {"unhealthy cluster", KP_EUNAVAILABLE},
        {"server stopped", KP_EUNAVAILABLE},
        {"too many requests", KP_EUNAVAILABLE},
        {"request timed out", KP_ETIMEDOUT},
        {"leader changed", KP_ETIMEDOUT},
        {"timed out", KP_ETIMEDOUT},
        /* etcd's own deadline, as a bare Go error (status 2 UNKNOWN): in
         * 3.4 a proposal no leader took, but nothing promises that */
        {"context deadline exceeded", KP_ETIMEDOUT},
        {"context canceled", KP_ETIMEDOUT},
    };
    if (!msg) return KP_EIO;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strstr(msg, map[i].needle)) return map[i].rc;
    return KP_EIO;
}

size_t etcd__endpoint(etcd_store_t *es)
{
    pthread_mutex_lock(&es->mu);
    size_t idx = es->current;
    pthread_mutex_unlock(&es->mu);
    return idx;
}

void etcd__endpoint_failed(etcd_store_t *es, size_t idx)
{
    pthread_mutex_lock(&es->mu);
    if (es->current == idx && es->n_endpoints > 1) {
        es->current = (idx + 1) % es->n_endpoints;
        log_warn("store", "etcd endpoint %s:%d failed; using %s:%d", es->hosts[idx], es->ports[idx],
                 es->hosts[es->current], es->ports[es->current]);
    }
    pthread_mutex_unlock(&es->mu);
}

static void unref_locked(etcd_conn_t *c, grpc_conn_t **close_out)
{
    if (--c->refs == 0) {
        *close_out = c->g;
        free(c);
    }
}

etcd_conn_t *etcd__conn_ref_locked(etcd_store_t *es, size_t idx)
{
    etcd_conn_t *c = es->conns[idx];
    if (c) c->refs++;
    return c;
}

int etcd__conn_get(etcd_store_t *es, size_t idx, etcd_conn_t **out)
{
    *out = NULL;
    pthread_mutex_lock(&es->mu);
    etcd_conn_t *c = es->conns[idx];
    if (c) c->refs++;
    pthread_mutex_unlock(&es->mu);
    /* Asked outside es->mu: the transport's lock is never taken under it. */
    if (c && !grpc_conn_error(c->g)) {
        *out = c;
        return 0;
    }
    if (c) { /* died since it was made: out of its slot */
        etcd__conn_failed(es, idx, c);
        etcd__conn_put(es, c);
    }

    /* Connect outside the lock; two callers may race, one connection wins. */
    grpc_conn_opts_t o = {.connect_ms = ETCD__CONNECT_MS,
                          .keepalive_ms = ETCD__KEEPALIVE_MS,
                          .keepalive_timeout_ms = ETCD__KEEPALIVE_TIMEOUT_MS};
    grpc_conn_t *g;
    int rc = grpc_connect(es->hosts[idx], es->ports[idx], &o, &g);
    if (rc) return rc;
    etcd_conn_t *mine = calloc(1, sizeof *mine);
    if (!mine) {
        grpc_close(g);
        return KP_ENOMEM;
    }
    mine->g = g;
    mine->refs = 2; /* the slot's and the caller's */
    grpc_conn_t *lost = NULL;
    pthread_mutex_lock(&es->mu);
    if (es->closing) {
        mine->refs = 1;
    } else if (es->conns[idx]) { /* another caller's won */
        lost = g;
        free(mine);
        mine = es->conns[idx];
        mine->refs++;
    } else {
        es->conns[idx] = mine;
    }
    pthread_mutex_unlock(&es->mu);
    grpc_close(lost);
    *out = mine;
    return 0;
}

grpc_conn_t *etcd__conn_grpc(etcd_conn_t *c)
{
    return c->g;
}

void etcd__conn_put(etcd_store_t *es, etcd_conn_t *c)
{
    if (!c) return;
    grpc_conn_t *close_it = NULL;
    pthread_mutex_lock(&es->mu);
    unref_locked(c, &close_it);
    pthread_mutex_unlock(&es->mu);
    grpc_close(close_it);
}

void etcd__conn_failed(etcd_store_t *es, size_t idx, etcd_conn_t *c)
{
    grpc_conn_t *close_it = NULL;
    pthread_mutex_lock(&es->mu);
    if (es->conns[idx] == c) {
        es->conns[idx] = NULL;
        unref_locked(c, &close_it); /* the slot's reference */
    }
    pthread_mutex_unlock(&es->mu);
    grpc_close(close_it);
}

void etcd__conns_close(etcd_store_t *es)
{
    for (size_t i = 0; i < ETCD__MAX_ENDPOINTS; i++) {
        grpc_conn_t *close_it = NULL;
        pthread_mutex_lock(&es->mu);
        es->closing = 1;
        etcd_conn_t *c = es->conns[i];
        es->conns[i] = NULL;
        if (c) unref_locked(c, &close_it);
        pthread_mutex_unlock(&es->mu);
        grpc_close(close_it);
    }
}

/* One attempt on endpoint idx. *sent: whether a write may have been
 * applied (the request went out and etcd did not refuse it before
 * proposing it). */
static int attempt(etcd_store_t *es, size_t idx, const char *method, const buf_t *req,
                   int timeout_ms, uint8_t **resp, size_t *resp_len, int *sent, int *abandoned)
{
    etcd_conn_t *c;
    *sent = *abandoned = 0;
    int rc = etcd__conn_get(es, idx, &c);
    if (rc) {
        if (rc != KP_ENOMEM) etcd__contact(es, 0);
        return rc == KP_ENOMEM ? rc : KP_EUNAVAILABLE;
    }
    grpc_status_t st;
    etcd_inflight_t f;
    etcd__call_begin(es, &f);
    rc = grpc_call(c->g, method, req->p ? req->p : "", req->len, timeout_ms, &st, resp, resp_len);
    int given_up = etcd__call_end(es, &f);
    if (given_up && (rc == KP_EUNAVAILABLE || rc == KP_ETIMEDOUT)) {
        /* LEADER CHANGES: the member is fine; its old leader lost this */
        *abandoned = 1;
        *sent = rc == KP_ETIMEDOUT;
    } else if (rc == KP_EUNAVAILABLE || rc == KP_ETIMEDOUT) {
        etcd__contact(es, 0);
        *sent = rc == KP_ETIMEDOUT;
        log_debug("store", "etcd %s:%d %s: %s", es->hosts[idx], es->ports[idx], method,
                  err_str(rc));
        etcd__conn_failed(es, idx, c);
    } else if (!rc && st.code) {
        rc = etcd__error(st.message);
        *sent = 1;
        if (rc == KP_EIO) log_warn("store", "etcd %s: status %d: %s", method, st.code, st.message);
        /* Refused before it was proposed ("no leader", "too many requests",
         * ...); "server stopped" may come after the proposal. */
        if (rc == KP_EUNAVAILABLE && !strstr(st.message, "server stopped")) *sent = 0;
    } else if (rc == KP_ETOOLARGE) {
        *sent = 1;
    } else if (!rc) {
        etcd__contact(es, 1);
        etcd_pb_header_t h; /* every response's field 1 */
        if (!etcd_pb_header_resp(*resp, *resp_len, &h)) etcd__saw_term(es, h.raft_term);
    }
    etcd__conn_put(es, c);
    return rc;
}

int etcd__rpc(etcd_store_t *es, const char *method, const buf_t *req, int kind, int timeout_ms,
              uint8_t **resp, size_t *resp_len)
{
    *resp = NULL;
    *resp_len = 0;
    int rc = KP_EUNAVAILABLE;
    for (size_t tries = 0; tries < es->n_endpoints; tries++) {
        size_t idx = etcd__endpoint(es);
        int sent = 0, abandoned = 0;
        rc = attempt(es, idx, method, req, timeout_ms, resp, resp_len, &sent, &abandoned);
        if (rc != KP_EUNAVAILABLE && rc != KP_ETIMEDOUT) break;
        if (!abandoned) etcd__endpoint_failed(es, idx);
        /* A write that may have been applied is not sent again: its outcome
         * is unknown, and the caller must hear so (never success). */
        if (kind == ETCD__WRITE && sent) {
            rc = KP_ETIMEDOUT;
            break;
        }
    }
    return rc;
}

int etcd__prefix_end(const char *prefix, char *out, size_t *outlen)
{
    size_t n = strlen(prefix);
    memcpy(out, prefix, n);
    while (n > 0) {
        unsigned char c = (unsigned char)out[n - 1];
        if (c < 0xff) {
            out[n - 1] = (char)(c + 1);
            *outlen = n;
            return 0;
        }
        n--;
    }
    out[0] = '\0'; /* every key from the start key on */
    *outlen = 1;
    return 0;
}

void etcd__note_compact(etcd_store_t *es, int64_t rev)
{
    pthread_mutex_lock(&es->mu);
    if (rev > es->compact) es->compact = rev;
    pthread_mutex_unlock(&es->mu);
}
