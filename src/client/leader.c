/*
 * leader.c -- leader election on a coordination.k8s.io/v1 Lease: client-go's
 * tools/leaderelection (LeaderElector with a LeaseLock and ReleaseOnCancel),
 * written from its documented semantics.
 *
 * Why a Lease and the candidate's own clock: the only shared truth is the
 * Lease in the API (one authoritative history); clocks of different machines
 * are not comparable, so a candidate never trusts renewTime itself. It
 * trusts only what it observed: "this record has not changed for a lease
 * duration since I first saw it" means its holder is gone.
 *
 * One thread per elector (elect_run) does every request. Its states:
 *
 *   CANDIDATE --campaign(): try_acquire() ok with more than a retry period
 *             of its term left--> LEADING (on_started); ok but later: try
 *             again at once (a renewal, with a term of its own)
 *   LEADING --lead(): renewal ok, begun before valid_until or over our own
 *             last write--> LEADING (while valid, the renewal is one update
 *             over our last write; client-go's optimistic fast path)
 *   LEADING --lead(): another holder seen / renew deadline passed--> CANDIDATE
 *             (on_stopped; campaigning again at once)
 *   LEADING --kc_leader_stop--> STOPPED (release(); no callback: the caller
 *             knows, and a process whose on_stopped exits must not exit here)
 *   CANDIDATE --kc_leader_stop--> STOPPED
 *
 * Invariants:
 *  1. observed/observed_ns: observed is a copy of the last Lease spec read or
 *     written; observed_ns is the monotonic time at which it last CHANGED
 *     (json_equal) -- not when it was last read. Elector thread only.
 *  2. A takeover from another holder happens only when holderIdentity is ""
 *     or now >= observed_ns + the record's leaseDurationSeconds, and only by
 *     an update carrying the resourceVersion of the Lease that was judged, so
 *     a change in between fails with KP_ECONFLICT instead of being overwritten.
 *  3. valid_until (under mu) = the start of the last successful acquire or
 *     renew + renew deadline. is_leader() is leading && now < valid_until, so
 *     it turns false on time even while the thread is stuck in a request.
 *     Since the renewal was written after its start and others wait a lease
 *     duration (> renew deadline) from when they see it, leaders never overlap.
 *  4. leaseDurationSeconds written = lease_ms rounded UP, so others never
 *     wait less than we promised.
 *  5. Callbacks run on the elector thread without mu held; on_stopped runs
 *     only after an on_started, once per loss (never for kc_leader_stop).
 *  6. A term continues across renewals only if no one else can have led in
 *     between: the renewal began before valid_until, or the Lease it
 *     replaced carried the resourceVersion of our own last write.
 *
 * Threads: the elector thread; kc_leader_is_leader from anywhere (mu);
 * kc_leader_stop from the owner (sets stopping, signals cv, joins).
 */
#include "client/leader.h"

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#define LE_LEASE_MS_DEFAULT 15000
#define LE_RENEW_MS_DEFAULT 10000
#define LE_RETRY_MS_DEFAULT 2000
#define LE_JITTER           1.2
#define LE_NS_PER_MS        INT64_C(1000000)
#define LE_TIME_MAX         64 /* a MicroTime string */

struct kc_leader {
    kc_client_t *c;
    char *ns, *name, *identity;
    int64_t lease_ns, renew_ns, retry_ns;
    int lease_s; /* invariant 4 */
    void (*on_started)(void *arg);
    void (*on_stopped)(void *arg);
    void *arg;
    pthread_t thread;

    pthread_mutex_t mu;
    pthread_cond_t cv; /* stopping */
    bool stopping;
    bool leading;
    int64_t valid_until; /* invariant 3 */

    /* elector thread only */
    json_t *observed; /* invariant 1 */
    int64_t observed_ns;
    json_t *lease; /* the last Lease we wrote (for release) */
    uint64_t rng;
};

/* ---- small helpers ---- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(2685821657736338717);
}

static uint64_t rng_seed(void)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) s = 0;
    s ^= (uint64_t)clock_mono_ns() ^ ((uint64_t)getpid() << 32);
    return s ? s : UINT64_C(0x9e3779b97f4a7c15);
}

/* "<hostname>_<random uuid v4>". */
static char *default_identity(uint64_t *rng)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0]) snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = '\0';
    unsigned char u[16];
    if (getrandom(u, sizeof u, 0) != (ssize_t)sizeof u) {
        uint64_t a = rng_next(rng), b = rng_next(rng);
        memcpy(u, &a, 8);
        memcpy(u + 8, &b, 8);
    }
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* version 4 */
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    size_t n = strlen(host) + 1 + 36 + 1;
    char *id = malloc(n);
    if (!id) return NULL;
    snprintf(id, n, "%s_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", host,
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    return id;
}

/* A MicroTime: RFC 3339 in UTC with six fractional digits. */
static void micro_time(int64_t wall_ns, char *out, size_t n)
{
    time_t s = (time_t)(wall_ns / 1000000000);
    struct tm tm;
    char base[32] = "1970-01-01T00:00:00";
    if (gmtime_r(&s, &tm)) strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%s.%06ldZ", base, (long)(wall_ns % 1000000000 / 1000));
}

static const char *spec_str(const json_t *spec, const char *field)
{
    const char *s = json_string_value(json_object_get(spec, field));
    return s ? s : "";
}

/* Sleep up to ns, or until stopping. Returns true if stopping. */
static bool wait_stop(kc_leader_t *l, int64_t ns)
{
    int64_t until = clock_mono_ns() + ns;
    struct timespec ts = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
    pthread_mutex_lock(&l->mu);
    while (!l->stopping && clock_mono_ns() < until)
        pthread_cond_timedwait(&l->cv, &l->mu, &ts);
    bool stop = l->stopping;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

static void set_observed(kc_leader_t *l, const json_t *spec, int64_t now)
{
    if (l->observed && json_equal(l->observed, spec)) return;
    json_t *copy = json_deep_copy(spec);
    if (!copy) return; /* keep the old one: we only wait longer (invariant 1) */
    json_decref(l->observed);
    l->observed = copy;
    l->observed_ns = now;
}

/* Remember the Lease we just wrote (owned: consumed). */
static void keep_lease(kc_leader_t *l, json_t *lease, int64_t now)
{
    json_t *spec = json_object_get(lease, "spec");
    if (spec) set_observed(l, spec, now);
    json_decref(l->lease);
    l->lease = lease;
}

/* Our record: holder me, renewed now; acquireTime and leaseTransitions kept
 * if we held it already, else a new acquisition. `old` may be NULL. */
static json_t *our_spec(kc_leader_t *l, const json_t *old, const char *now_s)
{
    json_t *spec = old ? json_deep_copy(old) : json_object();
    if (!spec) return NULL;
    bool ours = old && !strcmp(spec_str(old, "holderIdentity"), l->identity);
    json_int_t transitions = json_integer_value(json_object_get(old, "leaseTransitions"));
    int rc = json_object_set_new(spec, "holderIdentity", json_string(l->identity));
    rc |= json_object_set_new(spec, "leaseDurationSeconds", json_integer(l->lease_s));
    rc |= json_object_set_new(spec, "renewTime", json_string(now_s));
    if (!ours || !json_string_value(json_object_get(spec, "acquireTime")))
        rc |= json_object_set_new(spec, "acquireTime", json_string(now_s));
    if (!ours && old)
        rc |= json_object_set_new(spec, "leaseTransitions", json_integer(transitions + 1));
    if (!old) rc |= json_object_set_new(spec, "leaseTransitions", json_integer(0));
    if (rc) {
        json_decref(spec);
        return NULL;
    }
    return spec;
}

/* ---- one round: client-go's tryAcquireOrRenew ---- */

enum { TRY_FAILED = 0, TRY_OURS, TRY_HELD };

static const char *rv_of(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

/* Acquire or renew the Lease once. Returns TRY_OURS (we hold it now),
 * TRY_HELD (another holder's record is valid), or TRY_FAILED (an error or a
 * lost race: try again later). *unchanged tells whether the Lease read was
 * exactly the one we wrote last (same resourceVersion): nobody else wrote
 * it in between (invariant 6). */
static int try_acquire(kc_leader_t *l, bool leading, bool *unchanged)
{
    *unchanged = false;
    char now_s[LE_TIME_MAX];
    micro_time(clock_wall_ns(), now_s, sizeof now_s);
    json_t *cur = NULL, *out = NULL, *spec = NULL;
    int result = TRY_FAILED;
    /* The leader's fast path (client-go's optimistic renewal): one update
     * over the version we wrote last, no read first. It succeeds only if
     * nobody wrote the Lease since (the resourceVersion guards it), so the
     * term continues (invariant 6). Any failure falls back to the read. */
    if (leading && l->lease) {
        json_t *mine = json_deep_copy(l->lease);
        json_t *ns = mine ? our_spec(l, json_object_get(l->lease, "spec"), now_s) : NULL;
        json_t *renewed = NULL;
        int frc = KP_ENOMEM;
        if (ns && !json_object_set_new(mine, "spec", ns))
            frc = kc_update(l->c, &kc_leases, l->ns, mine, NULL, &renewed, NULL);
        else
            json_decref(ns);
        json_decref(mine);
        if (!frc && renewed) {
            keep_lease(l, renewed, clock_mono_ns());
            *unchanged = true;
            return TRY_OURS;
        }
        log_debug("leader", "%s/%s: optimistic renewal: %s; reading the Lease", l->ns, l->name,
                  err_str(frc));
    }
    int rc = kc_get(l->c, &kc_leases, l->ns, l->name, &cur);
    if (rc == KP_ENOTFOUND) {
        json_t *lease =
            json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "coordination.k8s.io/v1", "kind",
                      "Lease", "metadata", "name", l->name, "namespace", l->ns);
        if (!lease || !(spec = our_spec(l, NULL, now_s)) ||
            json_object_set_new(lease, "spec", spec)) {
            json_decref(lease);
            return TRY_FAILED;
        }
        rc = kc_create(l->c, &kc_leases, l->ns, lease, &out, NULL);
        json_decref(lease);
        if (rc) {
            log_debug("leader", "%s/%s: create: %s", l->ns, l->name, err_str(rc));
            return TRY_FAILED;
        }
        keep_lease(l, out, clock_mono_ns());
        return TRY_OURS;
    }
    if (rc) {
        log_debug("leader", "%s/%s: get: %s", l->ns, l->name, err_str(rc));
        return TRY_FAILED;
    }

    const char *rv = rv_of(cur), *last_rv = rv_of(l->lease);
    *unchanged = rv && last_rv && !strcmp(rv, last_rv);
    /* A reference of our own: `holder` points into it after cur's spec is
     * replaced. */
    json_t *old = json_incref(json_object_get(cur, "spec"));
    if (!json_is_object(old)) {
        json_decref(old);
        old = NULL;
    }
    json_t *empty = json_object();
    if (!empty) goto out;
    set_observed(l, old ? old : empty, clock_mono_ns());
    json_decref(empty);
    const char *holder = spec_str(old, "holderIdentity");
    if (holder[0] && strcmp(holder, l->identity) != 0) {
        json_int_t secs = json_integer_value(json_object_get(old, "leaseDurationSeconds"));
        int64_t dur = secs > 0 ? (int64_t)secs * 1000000000 : l->lease_ns;
        if (clock_mono_ns() < l->observed_ns + dur) {
            result = TRY_HELD; /* invariant 2 */
            goto out;
        }
    }
    /* Free, expired by our clock, or ours: write our record over exactly
     * the version judged (cur keeps its resourceVersion). */
    if (!(spec = our_spec(l, old, now_s)) || json_object_set_new(cur, "spec", spec)) goto out;
    rc = kc_update(l->c, &kc_leases, l->ns, cur, NULL, &out, NULL);
    if (rc) {
        log_debug("leader", "%s/%s: update: %s", l->ns, l->name, err_str(rc));
        goto out;
    }
    if (holder[0] == '\0' || strcmp(holder, l->identity) != 0)
        log_info("leader", "%s/%s: %s took the lease over from \"%s\"", l->ns, l->name, l->identity,
                 holder);
    keep_lease(l, out, clock_mono_ns());
    result = TRY_OURS;
out:
    json_decref(old);
    json_decref(cur);
    return result;
}

/* ReleaseOnCancel: hand the lease back (holderIdentity "", duration 1 s), over
 * the version we last wrote; a conflict means someone else has it already. */
static void release(kc_leader_t *l)
{
    if (!l->lease) return;
    char now_s[LE_TIME_MAX];
    micro_time(clock_wall_ns(), now_s, sizeof now_s);
    json_t *spec = json_object_get(l->lease, "spec");
    json_int_t transitions = json_integer_value(json_object_get(spec, "leaseTransitions"));
    json_t *ns =
        json_pack("{s:s, s:i, s:s, s:s, s:I}", "holderIdentity", "", "leaseDurationSeconds", 1,
                  "acquireTime", now_s, "renewTime", now_s, "leaseTransitions", transitions);
    if (!ns || json_object_set_new(l->lease, "spec", ns)) return;
    int rc = kc_update(l->c, &kc_leases, l->ns, l->lease, NULL, NULL, NULL);
    if (rc)
        log_info("leader", "%s/%s: release: %s", l->ns, l->name, err_str(rc));
    else
        log_info("leader", "%s/%s: %s released the lease", l->ns, l->name, l->identity);
}

static void set_leading(kc_leader_t *l, bool leading, int64_t valid_until)
{
    pthread_mutex_lock(&l->mu);
    l->leading = leading;
    l->valid_until = valid_until;
    pthread_mutex_unlock(&l->mu);
}

static bool still_valid(kc_leader_t *l, int64_t now)
{
    pthread_mutex_lock(&l->mu);
    bool v = now < l->valid_until;
    pthread_mutex_unlock(&l->mu);
    return v;
}

/* Campaign until we lead or stop. Returns true if leading. */
static bool campaign(kc_leader_t *l)
{
    for (;;) {
        int64_t start = clock_mono_ns();
        bool unchanged;
        if (try_acquire(l, false, &unchanged) == TRY_OURS) {
            int64_t took = clock_mono_ns() - start;
            /* Lead only with room in the term for the first renewal: it
             * starts a retry period from now and, at the latency just seen,
             * takes `took` to land. (ha_all_stopped: an acquire that took
             * 2.4 s of a 3 s term led with 0.6 s left, its renewal did not
             * land in time, and it exited.) */
            if (2 * took + l->retry_ns < l->renew_ns) {
                set_leading(l, true, start + l->renew_ns);
                log_info("leader", "%s/%s: %s is the leader", l->ns, l->name, l->identity);
                return true;
            }
            /* The answer came so late (a store that stalled) that the term
             * it began would end before the first renewal could land
             * (invariant 3): leading would lapse at once, and a process
             * that exits on a lapse would exit. The Lease is ours, though:
             * renew it at once for a term that starts now. */
            log_info("leader", "%s/%s: %s acquired the lease %.1f s late; renewing", l->ns, l->name,
                     l->identity, (double)took / 1e9);
            if (wait_stop(l, 0)) return false;
            continue;
        }
        /* client-go's JitterUntil: retry + up to 1.2 * retry more. */
        double f = (double)(rng_next(&l->rng) >> 11) / (double)(UINT64_C(1) << 53);
        if (wait_stop(l, l->retry_ns + (int64_t)(f * LE_JITTER * (double)l->retry_ns)))
            return false;
    }
}

/* Renew every retry period until the lease is lost or we stop. Returns true
 * if stopping. */
static bool lead(kc_leader_t *l)
{
    for (;;) {
        if (wait_stop(l, l->retry_ns)) return true;
        int64_t start = clock_mono_ns();
        bool unchanged;
        int r = try_acquire(l, still_valid(l, start), &unchanged);
        int64_t took = clock_mono_ns() - start;
        if (took > l->renew_ns / 2)
            log_warn("leader", "%s/%s: a renewal took %.2f s (renew deadline %.2f s)", l->ns,
                     l->name, (double)took / 1e9, (double)l->renew_ns / 1e9);
        /* A renewal continues our term if it began while we were still
         * leading, or if nobody wrote the Lease since our last write (the
         * thread was slow, e.g. in on_started, but no one else led). Any
         * other success may follow another leader's term: a loss and a new
         * acquisition, with both callbacks (invariant 6). */
        if (r == TRY_OURS && (still_valid(l, start) || unchanged)) {
            pthread_mutex_lock(&l->mu);
            l->valid_until = start + l->renew_ns;
            pthread_mutex_unlock(&l->mu);
            continue;
        }
        if (r == TRY_HELD) {
            log_warn("leader", "%s/%s: %s lost the lease to \"%s\"", l->ns, l->name, l->identity,
                     spec_str(l->observed, "holderIdentity"));
            return false;
        }
        if (!still_valid(l, clock_mono_ns())) {
            log_warn("leader", "%s/%s: %s could not renew within the deadline", l->ns, l->name,
                     l->identity);
            return false;
        }
    }
}

static void *elect_run(void *arg)
{
    kc_leader_t *l = arg;
    log_thread_name("leader", NULL);
    while (campaign(l)) {
        if (l->on_started) l->on_started(l->arg);
        bool stopping = lead(l);
        set_leading(l, false, 0);
        if (stopping) {
            release(l);
            break;
        }
        if (l->on_stopped) l->on_stopped(l->arg);
    }
    return NULL;
}

/* ---- the API ---- */

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int kc_leader_start(kc_client_t *c, const kc_leader_config_t *cfg, kc_leader_t **out)
{
    *out = NULL;
    if (!c || !cfg || !cfg->ns || !cfg->ns[0] || !cfg->name || !cfg->name[0]) return KP_EINVAL;
    if (cfg->lease_ms < 0 || cfg->renew_deadline_ms < 0 || cfg->retry_ms < 0) return KP_EINVAL;
    if (cfg->identity && !cfg->identity[0]) return KP_EINVAL;
    int64_t lease = cfg->lease_ms ? cfg->lease_ms : LE_LEASE_MS_DEFAULT;
    int64_t renew = cfg->renew_deadline_ms ? cfg->renew_deadline_ms : LE_RENEW_MS_DEFAULT;
    int64_t retry = cfg->retry_ms ? cfg->retry_ms : LE_RETRY_MS_DEFAULT;
    if (lease <= renew || (double)renew <= LE_JITTER * (double)retry) return KP_EINVAL;

    kc_leader_t *l = calloc(1, sizeof *l);
    if (!l) return KP_ENOMEM;
    l->c = c;
    l->lease_ns = lease * LE_NS_PER_MS;
    l->renew_ns = renew * LE_NS_PER_MS;
    l->retry_ns = retry * LE_NS_PER_MS;
    l->lease_s = (int)((lease + 999) / 1000);
    l->on_started = cfg->on_started;
    l->on_stopped = cfg->on_stopped;
    l->arg = cfg->arg;
    l->rng = rng_seed();
    l->ns = dup_str(cfg->ns);
    l->name = dup_str(cfg->name);
    l->identity = cfg->identity ? dup_str(cfg->identity) : default_identity(&l->rng);
    if (!l->ns || !l->name || !l->identity) goto fail_strings;
    if (pthread_mutex_init(&l->mu, NULL)) goto fail_strings;
    if (clock_cond_init(&l->cv)) goto fail_mu;
    if (pthread_create(&l->thread, NULL, elect_run, l)) goto fail_cv;
    *out = l;
    return 0;

fail_cv:
    pthread_cond_destroy(&l->cv);
fail_mu:
    pthread_mutex_destroy(&l->mu);
fail_strings:
    free(l->identity);
    free(l->name);
    free(l->ns);
    free(l);
    return KP_ENOMEM;
}

int kc_leader_is_leader(kc_leader_t *l)
{
    int64_t now = clock_mono_ns();
    pthread_mutex_lock(&l->mu);
    int r = l->leading && now < l->valid_until;
    pthread_mutex_unlock(&l->mu);
    return r;
}

const char *kc_leader_identity(const kc_leader_t *l)
{
    return l->identity;
}

void kc_leader_stop(kc_leader_t *l)
{
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->stopping = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    json_decref(l->observed);
    json_decref(l->lease);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l->identity);
    free(l->name);
    free(l->ns);
    free(l);
}
