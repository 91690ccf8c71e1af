/*
 * leader.h -- leader election on a coordination.k8s.io/v1 Lease.
 * Ownership, threads and errors as client.h states them.
 */
#ifndef KP_CLIENT_LEADER_H
#define KP_CLIENT_LEADER_H

#include "client/client.h"

/* ---- leader election ---- */

typedef struct kc_leader kc_leader_t;

typedef struct kc_leader_config {
    const char *ns, *name;   /* the Lease: "kube-system", "kube-controller-manager" */
    const char *identity;    /* NULL: "<hostname>_<random uuid>" */
    int lease_ms;            /* --leader-elect-lease-duration; 0: 15000 */
    int renew_deadline_ms;   /* --leader-elect-renew-deadline; 0: 10000 */
    int retry_ms;            /* --leader-elect-retry-period; 0: 2000 */
    /* Called on the elector's thread: leading begins; leading ended (the
     * lease was lost or kc_leader_stop). A process usually exits on lost. */
    void (*on_started)(void *arg);
    void (*on_stopped)(void *arg);
    void *arg;
} kc_leader_config_t;

/* Start campaigning on a thread of its own. */
int kc_leader_start(kc_client_t *c, const kc_leader_config_t *cfg, kc_leader_t **out);
int kc_leader_is_leader(kc_leader_t *l);
/* Stop (releasing the lease if held, as client-go's ReleaseOnCancel) and free. */
void kc_leader_stop(kc_leader_t *l);

#endif
