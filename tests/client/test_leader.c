/*
 * test_leader.c -- leader election (src/client/leader.c) against a real
 * kplane server.
 *
 * What it proves:
 *  - A lone candidate creates the Lease and leads: holderIdentity
 *    "<hostname>_<uuid>", leaseDurationSeconds rounded up, MicroTime
 *    acquireTime/renewTime, renewals every retry period; stopping releases
 *    the Lease (holderIdentity "", leaseDurationSeconds 1) and calls no
 *    callback (on_stopped is for losses).
 *  - An on_started slower than the renew deadline does not cost the lease
 *    when no one else wrote it meanwhile (is_leader() was false for the
 *    gap, by the clock).
 *  - Two candidates never lead at the same time (sampled every 10 ms), one
 *    leads throughout, and stopping the leader hands over within about a
 *    retry period (leaseTransitions 1).
 *  - A Lease held by a silent holder is taken over only after it has not
 *    changed for the record's lease duration by the candidate's own clock,
 *    whatever its renewTime says.
 *  - A takeover answered with less than a retry period of its term left is
 *    renewed at once before leading: leading never lapses right after it
 *    begins.
 *  - A stolen Lease (another holder written with kc_update) makes the leader
 *    stop at its next renewal; it leads again once the thief goes silent.
 *  - A valid leader renews with one request (an update over its own last
 *    write), not a read and an update.
 *  - A leader that cannot reach the server stops leading within the renew
 *    deadline (is_leader by the clock, then on_stopped).
 *  - Bad configurations are refused.
 *
 * Threads never call cmocka asserts: callbacks count, the main thread asserts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "client/leader.h"
#include "kpserver.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "testutil.h"

#define LEASE_MS 1000
#define RENEW_MS 700
#define RETRY_MS 200

typedef struct fx {
    kpserver_t s;
    kc_config_t cfg;
    json_t *storage;
    kc_client_t *c;
} fx_t;

static int fx_setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    if (!f) return -1;
    kpserver_start(&f->s, NULL);
    if (kpserver_client(&f->s, &f->cfg, &f->storage, &f->c)) return -1;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx_t *f = *state;
    kc_client_free(f->c);
    json_decref(f->storage);
    kpserver_stop(&f->s);
    free(f);
    return 0;
}

static double now_ms(void)
{
    return (double)clock_mono_ns() / 1e6;
}

typedef struct cand {
    atomic_int started, stopped;
} cand_t;

static void on_started(void *arg)
{
    atomic_fetch_add(&((cand_t *)arg)->started, 1);
}
static void on_stopped(void *arg)
{
    atomic_fetch_add(&((cand_t *)arg)->stopped, 1);
}

static kc_leader_config_t config(const char *name, const char *identity, cand_t *cand)
{
    kc_leader_config_t cfg = {.ns = "default",
                              .name = name,
                              .identity = identity,
                              .lease_ms = LEASE_MS,
                              .renew_deadline_ms = RENEW_MS,
                              .retry_ms = RETRY_MS,
                              .on_started = on_started,
                              .on_stopped = on_stopped,
                              .arg = cand};
    return cfg;
}

static kc_leader_t *start(kc_client_t *c, const kc_leader_config_t *cfg)
{
    kc_leader_t *l = NULL;
    assert_int_equal(kc_leader_start(c, cfg, &l), 0);
    assert_non_null(l);
    return l;
}

/* Wait up to ms for l to lead; returns the time waited or -1. */
static double wait_leader(kc_leader_t *l, int ms)
{
    double t0 = now_ms();
    while (now_ms() - t0 < ms) {
        if (kc_leader_is_leader(l)) return now_ms() - t0;
        tu_sleep_ms(5);
    }
    return -1;
}

static double wait_count(atomic_int *n, int want, int ms)
{
    double t0 = now_ms();
    while (now_ms() - t0 < ms) {
        if (atomic_load(n) >= want) return now_ms() - t0;
        tu_sleep_ms(5);
    }
    return -1;
}

static json_t *get_lease(kc_client_t *c, const char *name)
{
    json_t *l = NULL;
    assert_int_equal(kc_get(c, &kc_leases, "default", name, &l), 0);
    return l;
}

static const char *spec_s(const json_t *lease, const char *field)
{
    const char *s = json_string_value(json_object_get(json_object_get(lease, "spec"), field));
    return s ? s : "";
}

static long long spec_i(const json_t *lease, const char *field)
{
    return json_integer_value(json_object_get(json_object_get(lease, "spec"), field));
}

/* "2006-01-02T15:04:05.000000Z" */
static void assert_micro_time(const char *s)
{
    assert_int_equal(strlen(s), 27);
    const char *shape = "dddd-dd-ddTdd:dd:dd.ddddddZ";
    for (int i = 0; i < 27; i++) {
        if (shape[i] == 'd')
            assert_true(isdigit((unsigned char)s[i]));
        else
            assert_int_equal(s[i], shape[i]);
    }
}

/* Write a Lease held by `holder` (created or overwritten), as another
 * process would; retried over conflicts with a renewing leader. */
static void write_holder(kc_client_t *c, const char *name, const char *holder, int secs,
                         const char *renew)
{
    for (int i = 0; i < 50; i++) {
        json_t *lease = NULL;
        int rc = kc_get(c, &kc_leases, "default", name, &lease);
        if (rc == KP_ENOTFOUND) {
            lease = json_pack("{s:s,s:s,s:{s:s,s:s},s:{}}", "apiVersion", "coordination.k8s.io/v1",
                              "kind", "Lease", "metadata", "name", name, "namespace", "default",
                              "spec");
        } else {
            assert_int_equal(rc, 0);
        }
        json_t *spec = json_object_get(lease, "spec");
        json_object_set_new(spec, "holderIdentity", json_string(holder));
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(secs));
        json_object_set_new(spec, "renewTime", json_string(renew));
        json_object_set_new(spec, "acquireTime", json_string(renew));
        if (rc == KP_ENOTFOUND)
            rc = kc_create(c, &kc_leases, "default", lease, NULL, NULL);
        else
            rc = kc_update(c, &kc_leases, "default", lease, NULL, NULL, NULL);
        json_decref(lease);
        if (rc == 0) return;
        assert_true(rc == KP_ECONFLICT || rc == KP_EEXIST);
    }
    fail_msg("could not write the lease %s", name);
}

/* ---- tests ---- */

static void test_bad_config(void **state)
{
    fx_t *f = *state;
    cand_t cand = {0};
    kc_leader_t *l = (kc_leader_t *)1;
    kc_leader_config_t cfg = config("bad", NULL, &cand);
    cfg.ns = NULL;
    assert_int_equal(kc_leader_start(f->c, &cfg, &l), KP_EINVAL);
    assert_null(l);
    cfg = config("", NULL, &cand);
    assert_int_equal(kc_leader_start(f->c, &cfg, &l), KP_EINVAL);
    cfg = config("bad", "", &cand);
    assert_int_equal(kc_leader_start(f->c, &cfg, &l), KP_EINVAL);
    cfg = config("bad", NULL, &cand);
    cfg.renew_deadline_ms = LEASE_MS; /* must be below the lease */
    assert_int_equal(kc_leader_start(f->c, &cfg, &l), KP_EINVAL);
    cfg = config("bad", NULL, &cand);
    cfg.renew_deadline_ms = 240; /* must be above 1.2 * retry */
    assert_int_equal(kc_leader_start(f->c, &cfg, &l), KP_EINVAL);
    cfg = config("bad", NULL, &cand);
    cfg.retry_ms = -1;
    assert_int_equal(kc_leader_start(f->c, &cfg, &l), KP_EINVAL);
    cfg = config("bad", NULL, &cand);
    cfg.lease_ms = 0; /* default 15 s with our 700 ms deadline: fine */
    l = start(f->c, &cfg);
    kc_leader_stop(l);
    kc_leader_stop(NULL);
}

static void test_one_candidate(void **state)
{
    fx_t *f = *state;
    cand_t cand = {0};
    kc_leader_config_t cfg = config("one", NULL, &cand);
    cfg.lease_ms = 1500; /* written as 2 s: rounded up */
    kc_leader_t *l = start(f->c, &cfg);
    assert_true(wait_leader(l, 3000) >= 0);
    /* is_leader() turns true just before on_started runs */
    assert_true(wait_count(&cand.started, 1, 1000) >= 0);

    /* The identity: "<hostname>_<uuid v4>". */
    const char *id = kc_leader_identity(l);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    assert_int_equal(strlen(id), strlen(host) + 1 + 36);
    assert_memory_equal(id, host, strlen(host));
    const char *u = id + strlen(host);
    assert_int_equal(u[0], '_');
    assert_true(u[9] == '-' && u[14] == '-' && u[15] == '4' && u[19] == '-' && u[24] == '-');

    json_t *lease = get_lease(f->c, "one");
    assert_string_equal(spec_s(lease, "holderIdentity"), id);
    assert_int_equal(spec_i(lease, "leaseDurationSeconds"), 2);
    assert_int_equal(spec_i(lease, "leaseTransitions"), 0);
    assert_micro_time(spec_s(lease, "renewTime"));
    assert_micro_time(spec_s(lease, "acquireTime"));
    char renew1[40], acquire1[40];
    snprintf(renew1, sizeof renew1, "%s", spec_s(lease, "renewTime"));
    snprintf(acquire1, sizeof acquire1, "%s", spec_s(lease, "acquireTime"));
    json_decref(lease);

    /* Renewed every retry period; acquireTime stays. */
    tu_sleep_ms(3 * RETRY_MS);
    lease = get_lease(f->c, "one");
    assert_string_not_equal(spec_s(lease, "renewTime"), renew1);
    assert_true(strcmp(spec_s(lease, "renewTime"), renew1) > 0);
    assert_string_equal(spec_s(lease, "acquireTime"), acquire1);
    assert_int_equal(spec_i(lease, "leaseTransitions"), 0);
    json_decref(lease);
    assert_true(kc_leader_is_leader(l));
    assert_int_equal(atomic_load(&cand.stopped), 0);

    /* Stop: the lease is released; on_stopped is for losses only. */
    kc_leader_stop(l);
    assert_int_equal(atomic_load(&cand.started), 1);
    assert_int_equal(atomic_load(&cand.stopped), 0);
    lease = get_lease(f->c, "one");
    assert_string_equal(spec_s(lease, "holderIdentity"), "");
    assert_int_equal(spec_i(lease, "leaseDurationSeconds"), 1);
    assert_int_equal(spec_i(lease, "leaseTransitions"), 0);
    json_decref(lease);
}

static void test_two_candidates(void **state)
{
    fx_t *f = *state;
    cand_t ca = {0}, cb = {0};
    kc_leader_config_t cfa = config("two", "cand-a", &ca), cfb = config("two", "cand-b", &cb);
    kc_leader_t *a = start(f->c, &cfa), *b = start(f->c, &cfb);
    int both = 0, none_after = 0, seen_leader = 0, samples = 0;
    double t0 = now_ms();
    while (now_ms() - t0 < 3500) {
        int la = kc_leader_is_leader(a), lb = kc_leader_is_leader(b);
        if (la && lb) both++;
        if (la || lb)
            seen_leader = 1;
        else if (seen_leader)
            none_after++;
        samples++;
        tu_sleep_ms(10);
    }
    assert_true(samples > 100);
    assert_int_equal(both, 0);
    assert_true(seen_leader);
    assert_int_equal(none_after, 0); /* one leads throughout */
    int a_leads = kc_leader_is_leader(a);
    cand_t *won = a_leads ? &ca : &cb, *lost = a_leads ? &cb : &ca;
    assert_int_equal(atomic_load(&won->started), 1);
    assert_int_equal(atomic_load(&won->stopped), 0);
    assert_int_equal(atomic_load(&lost->started), 0);

    /* Stop the leader: the other takes over at its next retry, well
     * within a lease duration, since the lease was released. */
    kc_leader_t *leader = a_leads ? a : b, *other = a_leads ? b : a;
    double t1 = now_ms();
    kc_leader_stop(leader);
    assert_int_equal(atomic_load(&won->stopped), 0);
    double waited = wait_leader(other, 5000);
    assert_true(waited >= 0);
    double handover = now_ms() - t1;
    assert_true(handover < LEASE_MS + 500);
    json_t *lease = get_lease(f->c, "two");
    assert_string_equal(spec_s(lease, "holderIdentity"), a_leads ? "cand-b" : "cand-a");
    assert_int_equal(spec_i(lease, "leaseTransitions"), 1);
    json_decref(lease);
    assert_true(wait_count(&lost->started, 1, 1000) >= 0);
    kc_leader_stop(other);
    assert_int_equal(atomic_load(&lost->stopped), 0);
}

/* on_started blocks past the renew deadline: is_leader() lapses by the
 * clock, but the next renewal finds the Lease as we wrote it, so the term
 * goes on without on_stopped. */
static void slow_started(void *arg)
{
    tu_sleep_ms(RENEW_MS + 400);
    on_started(arg);
}

static void test_slow_on_started(void **state)
{
    fx_t *f = *state;
    cand_t cand = {0};
    kc_leader_config_t cfg = config("slow", "sloth", &cand);
    cfg.on_started = slow_started;
    kc_leader_t *l = start(f->c, &cfg);
    assert_true(wait_leader(l, 3000) >= 0);
    double t0 = now_ms();
    while (kc_leader_is_leader(l) && now_ms() - t0 < 3000)
        tu_sleep_ms(5);
    assert_true(now_ms() - t0 < RENEW_MS + 100); /* lapsed by the clock */
    assert_true(wait_count(&cand.started, 1, 3000) >= 0);
    assert_true(wait_leader(l, 3000) >= 0); /* renewed over its own write */
    tu_sleep_ms(3 * RETRY_MS);
    assert_true(kc_leader_is_leader(l));
    assert_int_equal(atomic_load(&cand.started), 1);
    assert_int_equal(atomic_load(&cand.stopped), 0);
    json_t *lease = get_lease(f->c, "slow");
    assert_int_equal(spec_i(lease, "leaseTransitions"), 0);
    json_decref(lease);
    kc_leader_stop(l);
}

/* Bytes sent to the server's port that it has not read yet: some socket
 * of 127.0.0.1:port in /proc/net/tcp with a receive queue (the server's
 * in-process components use a Unix socket, so only this test's client
 * sends there). */
static int server_has_unread(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    assert_non_null(f);
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned addr, lport, tx, rx;
        if (sscanf(line, " %*d: %x:%x %*x:%*x %*x %x:%x", &addr, &lport, &tx, &rx) == 4)
            found = addr == 0x0100007f && (int)lport == port && rx > 0;
    }
    fclose(f);
    return found;
}

/* Stop the server until the candidate's next request reaches it (within
 * 5 s), then for `ms` more, then let it go on. */
static void stall_next_request(fx_t *f, int ms)
{
    assert_int_equal(kill(f->s.pid, SIGSTOP), 0);
    double t0 = now_ms();
    while (!server_has_unread(f->s.port) && now_ms() - t0 < 5000)
        tu_sleep_ms(1);
    int arrived = now_ms() - t0 < 5000;
    tu_sleep_ms(ms);
    assert_int_equal(kill(f->s.pid, SIGCONT), 0);
    assert_true(arrived);
}

/* The takeover's answer comes late (the server stalls), with less than a
 * retry period of its term left: the candidate renews at once instead of
 * leading for a moment and lapsing before its first renewal (a component
 * exits on such a lapse: both controller managers of the HA drill did). */
static void test_late_acquire(void **state)
{
    fx_t *f = *state;
    write_holder(f->c, "late", "ghost", 1, "2000-01-01T00:00:00.000000Z");
    cand_t cand = {0};
    kc_leader_config_t cfg = config("late", "tardy", &cand);
    kc_leader_t *l = start(f->c, &cfg);
    /* Stall the server just before the takeover is due; the next attempt
     * waits until SIGCONT, then takes over in one update, answered with
     * less than a retry period of its term left. */
    tu_sleep_ms(LEASE_MS - 100);
    stall_next_request(f, RENEW_MS - RETRY_MS + 50);
    assert_true(wait_leader(l, 3000) >= 0);
    /* From the first moment it leads, it leads throughout. */
    double led = now_ms();
    int lapses = 0;
    while (now_ms() - led < 4 * RETRY_MS) {
        if (!kc_leader_is_leader(l)) lapses++;
        tu_sleep_ms(2);
    }
    assert_int_equal(lapses, 0);
    assert_int_equal(atomic_load(&cand.started), 1);
    assert_int_equal(atomic_load(&cand.stopped), 0);
    json_t *lease = get_lease(f->c, "late");
    assert_string_equal(spec_s(lease, "holderIdentity"), "tardy");
    assert_int_equal(spec_i(lease, "leaseTransitions"), 1);
    json_decref(lease);
    kc_leader_stop(l);
}

/* Samples kc_leader_is_leader() every millisecond from another thread:
 * whether it led, and how often it stopped leading after. */
typedef struct {
    kc_leader_t *l;
    atomic_int stop, led, lapses;
} sampler_t;

static void *sample_leading(void *arg)
{
    sampler_t *s = arg;
    int was = 0;
    while (!atomic_load(&s->stop)) {
        int now = kc_leader_is_leader(s->l);
        if (now) atomic_store(&s->led, 1);
        if (was && !now) atomic_fetch_add(&s->lapses, 1);
        was = now;
        tu_sleep_ms(1);
    }
    return NULL;
}

#define STALL_MS 300 /* (RENEW_MS - RETRY_MS) / 2 < STALL_MS < RENEW_MS - RETRY_MS */

/* The takeover's answer comes STALL_MS late: more than a retry period of
 * its term is left, but not room for a first renewal as slow as that
 * answer, and the first renewal is that slow. A candidate that led at once
 * would stop leading before that renewal landed (02a37de: an acquire that
 * took 2.4 s of a 3 s term led with 0.6 s left, and its renewal came too
 * late); this one renews first, for a term that starts then, and leads
 * without a lapse. */
static void test_late_acquire_slow_renewal(void **state)
{
    fx_t *f = *state;
    write_holder(f->c, "slow", "ghost", 1, "2000-01-01T00:00:00.000000Z");
    cand_t cand = {0};
    kc_leader_config_t cfg = config("slow", "tardy", &cand);
    kc_leader_t *l = start(f->c, &cfg);
    sampler_t smp = {.l = l};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sample_leading, &smp), 0);
    tu_sleep_ms(LEASE_MS - 100); /* the takeover is due about now */
    stall_next_request(f, STALL_MS);
    tu_sleep_ms(100); /* its answer lands (a new acquire at once, if it renews first) */
    stall_next_request(f, STALL_MS); /* the next: the first renewal a retry period later */
    assert_true(wait_leader(l, 3000) >= 0);
    tu_sleep_ms(4 * RETRY_MS);
    atomic_store(&smp.stop, 1);
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&smp.led), 1);
    assert_int_equal(atomic_load(&smp.lapses), 0);
    assert_int_equal(atomic_load(&cand.started), 1);
    assert_int_equal(atomic_load(&cand.stopped), 0);
    json_t *lease = get_lease(f->c, "slow");
    assert_string_equal(spec_s(lease, "holderIdentity"), "tardy");
    json_decref(lease);
    kc_leader_stop(l);
}

/* A silent holder: taken over only after its record stayed the same for the
 * record's lease duration by our clock -- an old renewTime changes nothing. */
static void test_silent_holder(void **state)
{
    fx_t *f = *state;
    write_holder(f->c, "silent", "ghost", 1, "2000-01-01T00:00:00.000000Z");
    cand_t cand = {0};
    kc_leader_config_t cfg = config("silent", "heir", &cand);
    double t0 = now_ms();
    kc_leader_t *l = start(f->c, &cfg);
    double waited = wait_leader(l, 5000);
    assert_true(waited >= 0);
    assert_true(now_ms() - t0 >= LEASE_MS - 5);
    json_t *lease = get_lease(f->c, "silent");
    assert_string_equal(spec_s(lease, "holderIdentity"), "heir");
    assert_int_equal(spec_i(lease, "leaseTransitions"), 1);
    assert_int_equal(spec_i(lease, "leaseDurationSeconds"), 1);
    json_decref(lease);
    kc_leader_stop(l);

    /* The record's duration rules: a holder promising 2 s gets 2 s. */
    write_holder(f->c, "silent2", "ghost", 2, "2000-01-01T00:00:00.000000Z");
    cfg = config("silent2", "heir", &cand);
    t0 = now_ms();
    l = start(f->c, &cfg);
    assert_true(wait_leader(l, 6000) >= 0);
    assert_true(now_ms() - t0 >= 2000 - 5);
    kc_leader_stop(l);
}

static void test_stolen_lease(void **state)
{
    fx_t *f = *state;
    cand_t cand = {0};
    kc_leader_config_t cfg = config("steal", "owner", &cand);
    kc_leader_t *l = start(f->c, &cfg);
    assert_true(wait_leader(l, 3000) >= 0);
    tu_sleep_ms(RETRY_MS);

    char now_s[40];
    time_t t = time(NULL);
    struct tm tm;
    strftime(now_s, sizeof now_s, "%Y-%m-%dT%H:%M:%S.000000Z", gmtime_r(&t, &tm));
    write_holder(f->c, "steal", "thief", 1, now_s);
    double t_steal = now_ms();
    /* The owner sees the thief at its next renewal and stops at once. */
    double waited = wait_count(&cand.stopped, 1, 3000);
    assert_true(waited >= 0);
    assert_true(waited < RETRY_MS + 800);
    assert_false(kc_leader_is_leader(l));
    json_t *lease = get_lease(f->c, "steal");
    assert_string_equal(spec_s(lease, "holderIdentity"), "thief");
    json_decref(lease);

    /* The thief goes silent: the owner campaigns again and takes the lease
     * back a lease duration after it saw the thief's record. */
    assert_true(wait_leader(l, 5000) >= 0);
    assert_true(now_ms() - t_steal >= LEASE_MS - 100);
    assert_true(wait_count(&cand.started, 2, 1000) >= 0);
    lease = get_lease(f->c, "steal");
    assert_string_equal(spec_s(lease, "holderIdentity"), "owner");
    assert_int_equal(spec_i(lease, "leaseTransitions"), 1);
    json_decref(lease);
    kc_leader_stop(l);
    assert_int_equal(atomic_load(&cand.stopped), 1); /* the loss only */
}

/* While its term is valid, a leader renews with one update over its own last
 * write (client-go's optimistic path), not a read and an update: its own
 * client's request count grows by one per renewal seen in the Lease. */
static void test_renewal_one_request(void **state)
{
    fx_t *f = *state;
    kc_client_t *own = NULL;
    assert_int_equal(kc_client_new(&f->cfg, &own), 0);
    cand_t cand = {0};
    kc_leader_config_t cfg = config("fast", "fast-leader", &cand);
    kc_leader_t *l = start(own, &cfg);
    assert_true(wait_leader(l, 3000) >= 0);
    tu_sleep_ms(RETRY_MS / 2);
    kc_client_stats_t before, after;
    kc_client_stats(own, &before);
    /* Distinct renewTimes seen by polling with the fixture's client. */
    int renewals = 0;
    char last[40] = "";
    double t0 = now_ms();
    while (now_ms() - t0 < 6 * RETRY_MS) {
        json_t *lease = get_lease(f->c, "fast");
        if (strcmp(spec_s(lease, "renewTime"), last) != 0) {
            if (last[0]) renewals++;
            snprintf(last, sizeof last, "%s", spec_s(lease, "renewTime"));
        }
        json_decref(lease);
        tu_sleep_ms(10);
    }
    kc_client_stats(own, &after);
    unsigned long long reqs = (unsigned long long)(after.requests - before.requests);
    print_message("renewals %d, leader requests %llu\n", renewals, reqs);
    assert_true(renewals >= 3);
    /* One renewal may be in flight at either end of the window. */
    assert_true(reqs <= (unsigned long long)renewals + 2);
    assert_true(kc_leader_is_leader(l));
    assert_int_equal(atomic_load(&cand.stopped), 0);
    kc_leader_stop(l);
    kc_client_free(own);
}

/* The server goes away: is_leader() turns false by the renew deadline. */
static void test_server_lost(void **state)
{
    fx_t *f = *state;
    cand_t cand = {0};
    kc_leader_config_t cfg = config("lost", "alone", &cand);
    kc_leader_t *l = start(f->c, &cfg);
    assert_true(wait_leader(l, 3000) >= 0);
    double t0 = now_ms();
    kpserver_kill(&f->s);
    while (kc_leader_is_leader(l) && now_ms() - t0 < 5000)
        tu_sleep_ms(2);
    double gone = now_ms() - t0;
    assert_true(gone <= RENEW_MS + 50);
    assert_true(wait_count(&cand.stopped, 1, 5000) >= 0);
    assert_int_equal(atomic_load(&cand.started), 1);
    kc_leader_stop(l); /* no server: the release fails, logged */
    assert_int_equal(atomic_load(&cand.stopped), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_config),          cmocka_unit_test(test_one_candidate),
        cmocka_unit_test(test_two_candidates),      cmocka_unit_test(test_slow_on_started),
        cmocka_unit_test(test_silent_holder),       cmocka_unit_test(test_stolen_lease),
        cmocka_unit_test(test_renewal_one_request), cmocka_unit_test(test_late_acquire),
        cmocka_unit_test(test_late_acquire_slow_renewal),
    };
    const struct CMUnitTest kill_tests[] = {
        cmocka_unit_test(test_server_lost),
    };
    int failed = cmocka_run_group_tests_name("leader", tests, fx_setup, fx_teardown);
    failed += cmocka_run_group_tests_name("leader_server_lost", kill_tests, fx_setup, fx_teardown);
    return failed;
}
