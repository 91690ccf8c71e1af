/*
 * sim_int.h -- what the simulator's files share (sim.c: lifecycle and
 * metrics; sim_node.c: registration and heartbeats; sim_pod.c: the pod
 * workers; sim_status.c: the pod status a stage reports).
 *
 * LOCKS. hb_mu guards each node's heartbeat schedule; pods_mu guards the pod
 * table's buckets (never an entry: an entry belongs to the worker that holds
 * its key, see sim_pod.c). Neither is held across an API call. Counters are
 * atomics. The node array and everything cfg points to are immutable after
 * node_sim_new().
 */
#ifndef KP_NODE_SIM_INT_H
#define KP_NODE_SIM_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "client/sdk.h"
#include "node/node.h"

#define SIM_COMPONENT "node-sim"
#define SIM_LEASE_NS  "kube-node-lease"
#define SIM_KEY_MAX   512 /* "ns/name": 63 + 1 + 253, with room */
#define SIM_TIME_MAX  40  /* an RFC 3339 time with microseconds */

typedef struct sim_node {
    char *name;
    char ip[16]; /* InternalIP, unique in the simulator */
    char machine_id[33], system_uuid[37], boot_id[37];
    atomic_int paused;
    atomic_int recheck; /* resumed: read Ready back before the next status */
    /* Heartbeat state: the heartbeat thread's alone (and node_sim_start's
     * before that thread runs), except the dues, which hb_mu guards. */
    int registered;
    char uid[64];                                /* the Node's metadata.uid */
    char ready_since[SIM_TIME_MAX];              /* the conditions' lastTransitionTime */
    int retry_ms;                                /* registration back-off */
    int busy;                                    /* a heartbeat is in flight (hb_mu) */
    int failing;                                 /* the last heartbeat failed (logged once) */
    int64_t lease_due, status_due, register_due; /* monotonic ns */
} sim_node_t;

/* Pod stages (sim_pod.c has the diagram). */
enum {
    SP_CREATING = 0, /* waiting ContainerCreating / PodInitializing */
    SP_RUNNING,      /* containers running */
    SP_BACKOFF,      /* exited; waiting CrashLoopBackOff until restarted */
    SP_DONE,         /* terminal: Succeeded or Failed */
    SP_STOPPING,     /* deletion seen; containers stopping */
    SP_STOPPED,      /* stopped; the DELETE is next */
    SP_GONE,         /* deleted; waiting for the informer to drop it */
    SP_NSTAGES
};

/* What the simulator remembers of one pod (a kubelet's pod worker state).
 * Times: *_ns monotonic, *_wall wall clock (ns since the epoch). */
typedef struct sim_pod {
    struct sim_pod *next; /* hash chain */
    char *key;            /* "ns/name" */
    char uid[64];
    int node;              /* index into the simulator's nodes */
    int stage, dirty;      /* dirty: the stage's status is not written */
    int64_t written_rv;    /* resourceVersion of this node's last status write; 0: none */
    int prev_stage;        /* the stage deletion interrupted */
    int ran;               /* containers were started at least once */
    int timed;             /* the start latency was observed */
    unsigned events;       /* SIM_EV_* to record once the status is written */
    int64_t due_ns;        /* the stage's next transition; 0: none */
    int64_t seen_ns;       /* first seen (start latency) */
    int64_t start_wall;    /* status.startTime */
    int64_t first_wall;    /* the first start (Initialized) */
    int64_t started_wall;  /* the current run's startedAt */
    int64_t finished_wall; /* the current run's finishedAt (once it exited) */
    int64_t ready_wall;    /* Ready's lastTransitionTime */
    int ready;             /* containers ready */
    int restarts;          /* restartCount; also the current run's number */
    int exit_code;         /* the current run's exit code (once it exited) */
    int last_exit;         /* lastState: the previous run (restarts > 0) */
    int64_t last_started_wall, last_finished_wall;
    int backoff_ms; /* the back-off the waiting state names */
    uint64_t cid;   /* random: container ids derive from it */
    uint32_t ip;    /* the pod IP, host order */
} sim_pod_t;

enum { SIM_EV_STARTED = 1, SIM_EV_BACKOFF = 2, SIM_EV_KILLING = 4 };

struct node_sim {
    kc_client_t *client;
    node_sim_config_t cfg; /* its strings point into owned copies below */
    char *prefix, *cpu, *memory, *storage;
    char **labels; /* owned copies, NULL-terminated */
    sim_node_t *nodes;
    int nnodes;
    int *by_name; /* node indexes sorted by name */

    kc_informer_t *inf;  /* pods: borrowed from the factory */
    kc_informer_t *ninf; /* nodes: borrowed from the factory */
    kc_factory_t *own;   /* the factory when cfg.factory is NULL */
    kc_queue_t *queue;
    kc_recorder_t *rec; /* NULL when events are off */
    pthread_t workers[NODE_SIM_MAX_WORKERS];
    int nworkers;
    pthread_t hb;
    int hb_running, started;
    atomic_int stopping;

    pthread_mutex_t hb_mu;
    pthread_cond_t hb_cv; /* a pause change, or stop */

    pthread_mutex_t pods_mu;
    sim_pod_t **buckets;
    size_t nbuckets, npods;

    atomic_uint_fast64_t rng, next_ip;
    /* The runtime (proc.c sets these between node_sim_new and start; the
     * simulation leaves them zero): with rt_sync set, the pod workers call
     * rt_sync(rt_arg, key) instead of sim__pod_sync, and the nodes report
     * the runtime's kubelet port, version and OS image. The heartbeats,
     * registration, informer, queue and recorder are the simulator's. */
    int (*rt_sync)(void *arg, const char *key);
    void *rt_arg;
    int rt_port;              /* daemonEndpoints.kubeletEndpoint.Port: 0 (none) */
    const char *rt_version;   /* containerRuntimeVersion: "sim://1.0" */
    const char *rt_os_image;  /* "kplane simulated node" */
    const char *rt_instance;  /* node.kubernetes.io/instance-type: "kplane-sim" */
    /* metrics */
    atomic_uint_fast64_t lease_renewals, lease_errors, node_status_updates, node_status_errors,
        registrations, registration_errors, pod_patches, pod_patch_errors, pod_writes_elided,
        pod_status_reconciles, pod_deletes, pod_delete_errors, pod_starts, pod_restarts;
    atomic_long stage_count[SP_NSTAGES];
#define SIM_LAT_BUCKETS 9
    atomic_uint_fast64_t lat_hist[SIM_LAT_BUCKETS + 1], lat_count, lat_sum_us;
};

/* ---- sim.c ---- */
/* The index of node `name`, or -1. */
int sim__node_find(const node_sim_t *s, const char *name);
/* A fresh 64-bit random number (any thread). */
uint64_t sim__rand(node_sim_t *s);
/* An RFC 3339 UTC time ("...Z"), with microseconds when micro. */
void sim__time(char *buf, size_t n, int64_t wall_ns, int micro);
/* Record one pod start latency (microseconds) in the histogram. */
void sim__observe_start(node_sim_t *s, int64_t us);

/* ---- sim_node.c ---- */
/* Register node i: create or update the Node, then its Lease. On success
 * the node is registered, with its uid. Errors: the client's. */
int sim__node_register(node_sim_t *s, int i);
/* The heartbeat thread. */
void *sim__heartbeat_main(void *arg);

/* ---- sim_pod.c ---- */
/* The informer handlers (run on the informer thread): queue our pods' keys. */
void sim__pod_handlers(node_sim_t *s, kc_handlers_t *h);
/* Bring the pod named by key to its next state. 0 or an error (retry). */
int sim__pod_sync(node_sim_t *s, const char *key);
/* Queue every cached pod bound to node i. */
void sim__pod_requeue_node(node_sim_t *s, int i);
/* Free the pod table. */
void sim__pods_free(node_sim_t *s);

/* ---- sim_status.c ---- */
/* The merge patch {"status": ...} that reports st for pod (read-only), or
 * NULL when out of memory. */
json_t *sim__pod_status_patch(node_sim_t *s, const json_t *pod, const sim_pod_t *st);
/* 1 when pod's status (the API's, as the informer has it) says another
 * phase or Ready than the node reports for st, once it reported one
 * (RUNNING, BACKOFF, DONE): someone else wrote it since (the node
 * lifecycle controller marks the pods of a node it lost not ready). */
int sim__pod_status_stale(const json_t *pod, const sim_pod_t *st);
/* The pod's QoS class from its containers' requests and limits. */
const char *sim__qos_class(const json_t *pod);
/* An IPv4 address in dotted form. */
void sim__ip_str(uint32_t ip, char buf[16]);

#endif
