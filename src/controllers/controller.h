/*
 * controller.h -- the shape every controller follows, and the manager that
 * runs them (kplane controller-manager, and inside kplane server).
 *
 *   informers (shared: one list+watch per resource for every controller)
 *     -> handlers enqueue keys ("ns/name") into the controller's queue
 *     -> workers: sync(key) reads the caches, compares with what is wanted,
 *        acts through the API (src/client only), returns 0 or an error
 *     -> an error requeues the key with backoff; 0 forgets its backoff
 *
 * Each controller is one file that opens with the invariant it protects and
 * the objects it owns, implements ctrl_ops_t, and registers its informers
 * and handlers in init(). Nothing is shared between controllers but the
 * informers' read-only caches and the API.
 *
 * Ownership: the manager owns the client, the informers, each controller's
 * queue and state; controllers borrow them for their lifetime.
 */
#ifndef KP_CONTROLLER_H
#define KP_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>

#include "client/sdk.h"

typedef struct ctrl_manager ctrl_manager_t;
typedef struct ctrl ctrl_t;

/* What a controller is. `self` is the controller's own state (init sets it). */
typedef struct ctrl_ops {
    const char *name; /* "replicaset": flags, metrics, event source */
    /* Events' source.component; NULL: "<name>-controller". Set where
     * Kubernetes' own name differs (e.g. "node-controller"). */
    const char *event_source;
    /* The ServiceAccount in kube-system it acts as under
     * --use-service-account-credentials (the subject of its bootstrap role
     * system:controller:<account>); NULL: "<name>-controller". Set where
     * Kubernetes' own name differs. */
    const char *service_account;
    /* Take the informers it needs (ctrl_informer), add handlers that call
     * ctrl_enqueue, allocate *self. Called before informers start.
     * KP_ENOTFOUND: what it needs is not configured (csrsigning without a
     * CA); the manager logs that it skips the controller and goes on. */
    int (*init)(ctrl_t *c, void **self);
    /* Bring the object named by key to its wanted state. Returns 0, or an
     * error to retry the key with backoff. Runs on a worker: at most one
     * worker holds a key at a time. */
    int (*sync)(ctrl_t *c, void *self, const char *key);
    void (*free)(void *self);
} ctrl_ops_t;

/* The controllers kplane has (src/controllers/<name>.c). */
extern const ctrl_ops_t ctrl_replicaset, ctrl_replicationcontroller, ctrl_deployment;
extern const ctrl_ops_t ctrl_garbagecollector, ctrl_namespace;
extern const ctrl_ops_t ctrl_job, ctrl_ttlafterfinished;
extern const ctrl_ops_t ctrl_statefulset;
extern const ctrl_ops_t ctrl_nodelifecycle, ctrl_tainteviction;
extern const ctrl_ops_t ctrl_daemonset;
extern const ctrl_ops_t ctrl_disruption;
extern const ctrl_ops_t ctrl_csrsigning;
extern const ctrl_ops_t ctrl_serviceaccount, ctrl_rootcapublisher, ctrl_clusterroleaggregation;

typedef struct ctrl_manager_config {
    int workers;          /* per controller; 0: 5 */
    int resync_ms;        /* own informers' resync; 0: 30 s (level-triggered safety net) */
    kc_factory_t *factory; /* shared informers (borrowed; it must outlive the manager);
                              NULL: the manager makes its own */
    const char *const *enabled; /* controller names, NULL-terminated; NULL: all */
    int node_monitor_grace_ms;  /* --node-monitor-grace-period; 0: 40 s */
    int node_monitor_period_ms; /* --node-monitor-period; 0: 5 s */
    int discovery_period_ms;    /* how old discovery may get, and the garbage
                                   collector's monitor resync; 0: 30 s */
    /* The cluster CA that csrsigning signs with, PEM (borrowed for the
     * manager's lifetime; NULL: csrsigning does not run). Kubernetes'
     * --cluster-signing-cert-file/--cluster-signing-key-file. */
    const char *signing_cert_pem, *signing_key_pem;
    long long signing_duration_s; /* --cluster-signing-duration; 0: one year */
    /* The root CA the root-ca-cert-publisher puts in every namespace, PEM
     * (borrowed as above; NULL: that controller does not run). Kubernetes'
     * --root-ca-file, else its client's CA. */
    const char *root_ca_pem;
    /* Kubernetes' --use-service-account-credentials: each controller acts
     * as its own ServiceAccount (kube-system/<service_account>, made when
     * missing) with a token the manager asks for at start (TokenRequest),
     * under its bootstrap role system:controller:<account>. The informers
     * stay on the manager's client. 0: every controller is the manager. */
    int sa_credentials;
} ctrl_manager_config_t;

/* A manager over client `c` (borrowed; it must outlive the manager). */
int ctrl_manager_new(kc_client_t *c, const ctrl_manager_config_t *cfg, ctrl_manager_t **out);
/* init every controller, start the informers, wait for their caches, start
 * the workers. Errors: KP_ETIMEDOUT (caches did not sync in 30 s), init's. */
int ctrl_manager_start(ctrl_manager_t *m);
/* Stop workers and informers (queues shut down; running syncs finish). */
void ctrl_manager_stop(ctrl_manager_t *m);
void ctrl_manager_free(ctrl_manager_t *m);
/* The name of controller i in the table that ctrl_manager_start starts
 * from (in its order), or NULL past the last: what --controllers accepts.
 * Static strings; thread-safe. */
const char *ctrl_manager_controller_name(size_t i);
/* Prometheus text of every controller's metrics into buf (NUL-terminated). */
int ctrl_manager_metrics(ctrl_manager_t *m, char **text);

/* ---- for controllers ---- */

/* The shared informer of resource r (all namespaces, no selectors), with
 * the built-in indexes "namespace" and "controller" (and "node" for pods).
 * Only during init. Handlers added to it must have the controller's self as
 * their arg: the manager removes them by it when it stops, and init removes
 * them (kc_informer_remove_handlers) before it fails. */
kc_informer_t *ctrl_informer(ctrl_t *c, const kc_resource_t *r);
/* ctrl_informer() of r if the process shares an informer of r already
 * (another controller or component asked for one), else NULL and none is
 * made: for a controller that would rather watch r another way than add a
 * full copy of it (the garbage collector's metadata informers). Only
 * during init; the same rules for handlers. */
kc_informer_t *ctrl_informer_if_shared(ctrl_t *c, const kc_resource_t *r);
/* An informer of r's objects that field_selector (a static string) selects (e.g.
 * "metadata.name=kube-root-ca.crt"), with the "namespace" index: for a
 * controller that needs a few objects of a resource whose whole cache it
 * would not use. Shared with any other user of the same selector; only
 * during init; the same rules for handlers. */
kc_informer_t *ctrl_informer_selected(ctrl_t *c, const kc_resource_t *r,
                                      const char *field_selector);
kc_client_t *ctrl_client(ctrl_t *c);
/* The manager's discovery client, shared by every controller (thread-safe;
 * borrowed for the controller's lifetime). */
kc_discovery_t *ctrl_discovery(ctrl_t *c);
/* The manager's configuration (borrowed for the controller's lifetime). */
const ctrl_manager_config_t *ctrl_config(ctrl_t *c);
kc_recorder_t *ctrl_recorder(ctrl_t *c);

/* Queue a key ("ns/name") now / after delay_ms. Safe from handlers. */
void ctrl_enqueue(ctrl_t *c, const char *key);
void ctrl_enqueue_after(ctrl_t *c, const char *key, int delay_ms);
/* Queue the key of obj. */
void ctrl_enqueue_obj(ctrl_t *c, const json_t *obj);

/* The controller ownerReference of obj: its uid, kind and name (borrowed
 * from obj), or 0 if it has none. */
int ctrl_owner(const json_t *obj, const char **uid, const char **kind, const char **name);

#endif
