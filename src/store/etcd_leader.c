/*
 * etcd_leader.c -- requests stranded by an etcd leader change (LEADER
 * CHANGES in etcd_int.h).
 *
 * A follower forwards each proposal to the leader it knows. When that
 * leader dies, the proposals it had not replicated are lost, and etcd 3.4
 * answers them only at its request timeout (5 s + 2 election timeouts: 6 s
 * with --election-timeout 500), while the new leader is elected within
 * about one election timeout and serves everything sent after. Every
 * client with such a request waits those 6 s (kube-apiserver's too).
 *
 * So the backend learns the cluster's raft term from every response header
 * (unary calls and watch responses) and, while a request has waited
 * ETCD__PROBE_MS, from a Status call to the current endpoint every
 * ETCD__PROBE_MS (Status is answered by the member itself, without raft).
 * Once the term has risen and ETCD__LEADER_GRACE_MS have passed since this
 * was noticed (for the new leader to answer what it got), the calls begun
 * before the notice that still wait are given up (grpc_abandon_calls): a
 * write ends as an unknown outcome (KP_ETIMEDOUT, never success: it may
 * still be committed from the old leader's log), a read is sent again.
 * Their connections are kept: the member is fine, its leader was not.
 *
 * One thread per store (this file's), waking every ETCD__PROBE_MS / 2 while
 * calls wait, else sleeping until one begins.
 */
#include <stdlib.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "etcd_int.h"
#include "store/etcd_pb.h"

void etcd__saw_term(etcd_store_t *es, uint64_t term)
{
    pthread_mutex_lock(&es->mu);
    if (term > es->term) {
        if (es->term) { /* a rise, not the first sight */
            es->term_ns = clock_mono_ns();
            pthread_cond_broadcast(&es->leader_cv);
        }
        es->term = term;
    }
    pthread_mutex_unlock(&es->mu);
}

void etcd__contact(etcd_store_t *es, int ok)
{
    pthread_mutex_lock(&es->mu);
    if (!ok) {
        es->contact_lost = 1;
    } else if (es->contact_lost) {
        es->contact_lost = 0;
        es->contact_gen++;
        pthread_cond_broadcast(&es->leader_cv); /* watches waiting to reconnect */
    }
    pthread_mutex_unlock(&es->mu);
}

void etcd__call_begin(etcd_store_t *es, etcd_inflight_t *f)
{
    f->begun_ns = clock_mono_ns();
    pthread_mutex_lock(&es->mu);
    f->prev = NULL;
    f->next = es->inflight; /* newest first: the oldest is the tail */
    if (f->next) f->next->prev = f;
    es->inflight = f;
    if (!es->inflight_tail) es->inflight_tail = f;
    f->abandon_gen = es->abandon_gen;
    if (!f->next) pthread_cond_broadcast(&es->leader_cv); /* the first one: wake the thread */
    pthread_mutex_unlock(&es->mu);
}

int etcd__call_end(etcd_store_t *es, etcd_inflight_t *f)
{
    pthread_mutex_lock(&es->mu);
    if (f->prev)
        f->prev->next = f->next;
    else
        es->inflight = f->next;
    if (f->next)
        f->next->prev = f->prev;
    else
        es->inflight_tail = f->prev;
    int abandoned = es->abandon_gen != f->abandon_gen && f->begun_ns < es->abandon_before_ns;
    pthread_mutex_unlock(&es->mu);
    return abandoned;
}

/* Ask the current endpoint its term (no failover, no retry: a probe). */
static void probe(etcd_store_t *es)
{
    size_t idx = etcd__endpoint(es);
    etcd_conn_t *c;
    if (etcd__conn_get(es, idx, &c)) return;
    grpc_status_t st;
    uint8_t *resp = NULL;
    size_t n = 0;
    int rc = grpc_call(etcd__conn_grpc(c), "/etcdserverpb.Maintenance/Status", "", 0,
                       ETCD__PROBE_MS, &st, &resp, &n);
    etcd__conn_put(es, c);
    etcd_pb_status_t s;
    if (!rc && !st.code && !etcd_pb_status_resp(resp, n, &s))
        etcd__saw_term(es, s.raft_term > s.h.raft_term ? s.raft_term : s.h.raft_term);
    free(resp);
}

/* Give up on the calls begun before the rise was noticed (es->mu held;
 * dropped around the connections' work). */
static void abandon_locked(etcd_store_t *es, int64_t before_ns, uint64_t term)
{
    es->abandon_gen++;
    es->abandoned_term = term;
    es->abandon_before_ns = before_ns;
    etcd_conn_t *cs[ETCD__MAX_ENDPOINTS];
    size_t n = 0;
    for (size_t i = 0; i < es->n_endpoints; i++)
        if ((cs[n] = etcd__conn_ref_locked(es, i))) n++;
    pthread_mutex_unlock(&es->mu);
    int given_up = 0;
    for (size_t i = 0; i < n; i++) {
        given_up += grpc_abandon_calls(etcd__conn_grpc(cs[i]), before_ns);
        etcd__conn_put(es, cs[i]);
    }
    if (given_up)
        log_info("store",
                 "etcd leader changed (raft term %llu): gave up on %d request(s) "
                 "sent before, which the old leader may have lost",
                 (unsigned long long)term, given_up);
    pthread_mutex_lock(&es->mu);
}

static void *leader_main(void *arg)
{
    etcd_store_t *es = arg;
    int64_t probed_ns = 0;
    pthread_mutex_lock(&es->mu);
    while (!es->closing) {
        int64_t now = clock_mono_ns();
        int64_t oldest = es->inflight_tail ? es->inflight_tail->begun_ns : 0;
        if (es->term_ns && es->abandoned_term != es->term &&
            now - es->term_ns >= (int64_t)ETCD__LEADER_GRACE_MS * 1000000) {
            abandon_locked(es, es->term_ns, es->term);
            continue;
        }
        if (oldest && now - oldest >= (int64_t)ETCD__PROBE_MS * 1000000 &&
            now - probed_ns >= (int64_t)ETCD__PROBE_MS * 1000000) {
            probed_ns = now;
            pthread_mutex_unlock(&es->mu);
            probe(es);
            pthread_mutex_lock(&es->mu);
            continue;
        }
        if (oldest || (es->term_ns && es->abandoned_term != es->term)) {
            struct timespec ts = clock_deadline_ms(ETCD__PROBE_MS / 2);
            pthread_cond_timedwait(&es->leader_cv, &es->mu, &ts);
        } else {
            pthread_cond_wait(&es->leader_cv, &es->mu); /* until a call begins */
        }
    }
    pthread_mutex_unlock(&es->mu);
    return NULL;
}

int etcd__leader_start(etcd_store_t *es)
{
    if (pthread_create(&es->leader_thread, NULL, leader_main, es)) return KP_ENOMEM;
    es->leader_started = 1;
    return 0;
}

void etcd__leader_stop(etcd_store_t *es)
{
    pthread_mutex_lock(&es->mu);
    es->closing = 1;
    pthread_cond_broadcast(&es->leader_cv);
    pthread_mutex_unlock(&es->mu);
    if (!es->leader_started) return;
    pthread_join(es->leader_thread, NULL);
    es->leader_started = 0;
}
