/*
 * leader.h -- leader election on a coordination.k8s.io/v1 Lease, as
 * client-go's tools/leaderelection (LeaseLock, ReleaseOnCancel).
 * Ownership, threads and errors as client.h states them.
 *
 * A candidate reads the Lease every retry period (with jitter: 1x to 2.2x);
 * it creates the Lease if absent, and takes it over (a resourceVersion-guarded
 * update, leaseTransitions+1) when it is released (holderIdentity "") or its
 * record has not changed for a lease duration by the candidate's own clock.
 * The leader renews every retry period. It stops leading when a renewal has
 * not succeeded within the renew deadline (unless the renewal finds the
 * Lease exactly as it last wrote it: then no one else can have led), or at
 * once when it sees another holder; then it campaigns again like any
 * candidate.
 *
 * Safety: kc_leader_is_leader() turns false no later than renew deadline
 * after the start of the last successful renewal, even if the elector thread
 * is stuck in a request; another candidate cannot take over sooner than a
 * lease duration after that renewal was written. So with renew deadline <
 * lease duration (checked) and clocks that run at the same rate, two
 * candidates never both see is_leader() true.
 */
#ifndef KP_CLIENT_LEADER_H
#define KP_CLIENT_LEADER_H

#include "client/client.h"

/* ---- leader election ---- */

typedef struct kc_leader kc_leader_t;

typedef struct kc_leader_config {
    const char *ns, *name; /* the Lease: "kube-system", "kube-controller-manager" */
    const char *identity;  /* NULL: "<hostname>_<random uuid>" */
    int lease_ms;          /* --leader-elect-lease-duration; 0: 15000. Written
                              as leaseDurationSeconds, rounded up */
    int renew_deadline_ms; /* --leader-elect-renew-deadline; 0: 10000 */
    int retry_ms;          /* --leader-elect-retry-period; 0: 2000 */
    /* Called on the elector's thread, which renews nothing meanwhile: return
     * promptly (start workers elsewhere). on_started: leading begins.
     * on_stopped: the lease was LOST (another holder, or no renewal within
     * the deadline); is_leader() is already false. Not called for
     * kc_leader_stop (the caller knows; unlike client-go's
     * OnStoppedLeading), so an on_stopped that exits the process is safe.
     * After a loss the elector campaigns again; a process that cannot stop
     * its leader-only work at once should exit instead. */
    void (*on_started)(void *arg);
    void (*on_stopped)(void *arg);
    void *arg;
} kc_leader_config_t;

/* Start campaigning on a thread of its own. The strings in cfg are copied;
 * c must outlive the elector. *out is the caller's: kc_leader_stop().
 * Errors: KP_EINVAL (no ns or name, a negative time, or not lease_ms >
 * renew_deadline_ms > 1.2 * retry_ms, client-go's rule), KP_ENOMEM. */
int kc_leader_start(kc_client_t *c, const kc_leader_config_t *cfg, kc_leader_t **out);

/* 1 while leading (by the clock: see Safety above), else 0. Any thread. */
int kc_leader_is_leader(kc_leader_t *l);

/* The identity this elector writes as holderIdentity (borrowed until stop). */
const char *kc_leader_identity(const kc_leader_t *l);

/* Stop and free: if leading, is_leader() turns false and the lease is
 * released (holderIdentity "", leaseDurationSeconds 1, as client-go's
 * ReleaseOnCancel) so another candidate takes over at its next retry; no
 * callback runs. As with ReleaseOnCancel, stop the leader-only work BEFORE
 * this call, or another process may start it while yours still runs.
 * Waits for a request in flight (up to the client's timeout). NULL is a
 * no-op. */
void kc_leader_stop(kc_leader_t *l);

#endif
