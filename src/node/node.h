/*
 * node.h -- simulated node agents (runtime "sim"): many Kubernetes nodes in
 * one process, each registered as a Node, heart-beating through its Lease in
 * kube-node-lease, and driving the pods bound to it through their lifecycle
 * (Pending/ContainerCreating -> Running -> Succeeded/Failed; graceful
 * deletion finished by a DELETE with gracePeriodSeconds 0), like a kubelet
 * whose containers start and stop instantly (after configurable delays).
 *
 * The simulator talks to the API only through src/client: one pod informer
 * for all its nodes (field selector spec.nodeName!=, index "node"), one work
 * queue of pod keys, a few workers, and one heartbeat thread that spreads
 * every node's Lease renewals evenly over the renew interval.
 *
 * Per-pod behaviour can be changed by annotations on the pod:
 *
 *   sim.kplane.io/start-delay-ms: "<ms>"   the time from binding to Running
 *                                           (ContainerCreating meanwhile)
 *                                           instead of cfg.start_delay_ms.
 *   sim.kplane.io/run-ms: "<ms>"           how long the containers run before
 *                                           they exit (restartPolicy Never or
 *                                           OnFailure, or a crash loop)
 *                                           instead of cfg.run_ms.
 *   sim.kplane.io/never-ready: "true"      Running, but readiness never
 *                                           passes: containers ready=false,
 *                                           Ready/ContainersReady False.
 *   sim.kplane.io/crash-loop: "true"       the containers exit with code 1
 *                                           (or exit-code's) after run-ms,
 *                                           every time; restartPolicy Always
 *                                           (and OnFailure) restarts them
 *                                           after Kubernetes' back-off (0,
 *                                           then 10 s doubling to 5 min, times
 *                                           cfg.backoff_scale) while the
 *                                           state is waiting CrashLoopBackOff
 *                                           and restartCount rises.
 *   sim.kplane.io/exit-code: "<0..255>"    the code the containers exit with
 *                                           after run-ms. restartPolicy Never:
 *                                           0 -> Succeeded (Completed), else
 *                                           Failed (reason Error).
 *                                           OnFailure: 0 -> Succeeded, else
 *                                           restarted as a crash loop (what a
 *                                           kubelet does). Always: implies a
 *                                           crash loop with this code.
 *
 * Pausing a node (node_sim_pause) makes it look partitioned: no Lease
 * renewals, no Node status updates and no pod status writes or deletes for
 * pods bound to it, until it is resumed; then it catches up at once.
 *
 * OWNERSHIP AND THREADS as client.h states them. The simulator borrows the
 * client (it must outlive the simulator). Calls on one simulator are made
 * from one thread, except node_sim_pause and node_sim_metrics, which are
 * safe from any thread while it runs.
 */
#ifndef KP_NODE_H
#define KP_NODE_H

#include <stddef.h>

#include "client/client.h"
#include "client/informer.h"

/* The annotations above. */
#define NODE_SIM_ANN_START_DELAY "sim.kplane.io/start-delay-ms"
#define NODE_SIM_ANN_RUN         "sim.kplane.io/run-ms"
#define NODE_SIM_ANN_NEVER_READY "sim.kplane.io/never-ready"
#define NODE_SIM_ANN_CRASH_LOOP  "sim.kplane.io/crash-loop"
#define NODE_SIM_ANN_EXIT_CODE   "sim.kplane.io/exit-code"

#define NODE_SIM_MAX_NODES   10000
#define NODE_SIM_MAX_WORKERS 64

typedef struct node_sim node_sim_t;

/* Fill cfg with node_sim_config_default() first, then change what differs.
 * Strings are copied by node_sim_new(). Every duration is in milliseconds
 * unless its name says otherwise. */
typedef struct node_sim_config {
    int count;                     /* nodes named <name_prefix>0..count-1 */
    const char *name_prefix;       /* "kplane-node-" */
    const char *const *names;      /* explicit names, NULL-terminated; when
                                      set, count and name_prefix are unused */
    const char *cpu;               /* capacity = allocatable: "4" */
    const char *memory;            /* "8Gi" */
    const char *ephemeral_storage; /* "100Gi" */
    int max_pods;                  /* 110 */
    const char *const *labels;     /* extra node labels "key=value",
                                      NULL-terminated; NULL: none */
    int lease_duration_s;          /* Lease spec.leaseDurationSeconds: 40 */
    int lease_renew_ms;            /* 10000 */
    int status_update_ms;          /* Node status (condition heartbeats):
                                      60000 */
    int start_delay_ms;            /* binding -> Running: 500; 0 skips the
                                      ContainerCreating status write (so
                                      does a backlog of pods to start) */
    int run_ms;                    /* Never/OnFailure pods run this long: 1000 */
    int stop_ms;                   /* a container's stop time on graceful
                                      deletion (capped by the grace period):
                                      100 */
    double backoff_scale;          /* CrashLoopBackOff delays x this: 1.0 */
    int workers;                   /* pod workers: 16 (at most 64); each
                                      has a request in flight at most */
    int events;                    /* 1: record Pulled/Created/Started/
                                      Killing/BackOff events (default);
                                      0: none (benchmarks) */
    kc_factory_t *factory;         /* shared informers (borrowed; it must
                                      outlive the simulator); NULL: own */
} node_sim_config_t;

/* The defaults named above (count 1). */
void node_sim_config_default(node_sim_config_t *cfg);

/* ---- lifecycle: new -> start -> stop -> free ---- */

/* A simulator of the nodes cfg names, talking through c (borrowed). *out is
 * the caller's: node_sim_free(). Nothing is sent yet.
 * Errors: KP_EINVAL (count outside 1..NODE_SIM_MAX_NODES, an empty or
 * duplicate name, a label without '=', a non-positive interval or lease
 * duration, a negative delay, backoff_scale <= 0, workers outside
 * 1..NODE_SIM_MAX_WORKERS), KP_ENOMEM. */
int node_sim_new(kc_client_t *c, const node_sim_config_t *cfg, node_sim_t **out);

/* Register every node (create its Node, or keep an existing one and update
 * its labels and status; create or take over its Lease), then start the pod
 * informer, the workers and the heartbeat thread. A node that cannot be
 * registered now is retried in the background (with back-off), so an
 * unreachable API server is not an error here.
 * Errors: KP_EINVAL (started before), KP_ENOMEM, the informer's and
 * pthread_create's (KP_ENOMEM); on error nothing is left running. */
int node_sim_start(node_sim_t *s);

/* Stop heart-beating and driving pods; running requests finish, queued work
 * is dropped. Nodes, Leases and pods stay as they are in the API (a stopped
 * kubelet deletes nothing). Idempotent; a no-op before start. */
void node_sim_stop(node_sim_t *s);

/* Stop if needed and free. NULL is a no-op. */
void node_sim_free(node_sim_t *s);

/* ---- control and observation ---- */

/* Pause (paused 1) or resume (0) node `name` (see above). Pausing waits
 * for a heartbeat of that node in flight, so no Lease renewal or Node
 * status update of it starts or lands after the call returns (a pod status
 * write in flight may). Resuming renews its Lease and status at once and
 * re-queues its pods. Errors: KP_ENOTFOUND (not one of this simulator's
 * nodes). */
int node_sim_pause(node_sim_t *s, const char *name, int paused);

/* The number of nodes and the name of node i (borrowed from the simulator:
 * valid until node_sim_free), or NULL when i is out of range. */
size_t node_sim_count(const node_sim_t *s);
const char *node_sim_name(const node_sim_t *s, size_t i);

/* Prometheus text of the simulator's metrics (nodes, Lease renewals and
 * failures, pods by stage, status writes, deletes, start latency). *text is
 * the caller's: free(). Errors: KP_ENOMEM. */
int node_sim_metrics(node_sim_t *s, char **text);

/* ---- the process runtime (proc*.c): one real node ----
 *
 * `kplane node --runtime process --name N` (and `kplane server --runtime
 * process`): node N is registered, heart-beaten and reported Ready by the
 * simulator's code (a node_sim_t of one node inside), but each pod bound to
 * it runs for real: every container's command + args (no image is pulled;
 * `image` is only reported) as a local process in its own process group,
 * with the container's env (values, fieldRef, configMapKeyRef and
 * secretKeyRef), workingDir or else <data_dir>/pods/<ns>_<name>_<uid>/work,
 * and stdout/stderr written in the CRI log format to
 * <data_dir>/pods/<ns>_<name>_<uid>/<container>/<restartCount>.log (the
 * previous run's file is kept for --previous). restartPolicy, the
 * crash-loop back-off (10 s doubling to 5 min, times backoff_scale, reset
 * after 10 min of running), exec liveness and readiness probes, and graceful
 * termination (SIGTERM to the group, SIGKILL after the grace period, then
 * the final DELETE) follow the kubelet.
 *
 * Logs are served as a kubelet serves them: GET /containerLogs/{ns}/{pod}/
 * {container}?follow=&previous=&tailLines=&sinceSeconds=&timestamps=&
 * limitBytes= over plain HTTP on listen_addr:port, which the Node reports in
 * status.daemonEndpoints.kubeletEndpoint.Port (address: InternalIP
 * 127.0.0.1). When token is set, a request must carry "Authorization:
 * Bearer <token>" (the API server sends its admin token); the API server's
 * pods/<name>/log proxies to it.
 *
 * Stopping the node kills the process groups of the pods it runs (SIGTERM,
 * then SIGKILL after 2 s): the node agent is also their runtime, and their
 * log pipes end with it. */
typedef struct node_proc node_proc_t;

typedef struct node_proc_config {
    const char *name;        /* the node's name: required */
    const char *data_dir;    /* pod directories and logs: required (created) */
    const char *listen_addr; /* the log server's address: "127.0.0.1" */
    int port;                /* its port: 0 picks a free one */
    const char *token;       /* bearer token the log server requires; NULL: none */
    double backoff_scale;    /* crash-loop back-off x this: 1.0 */
    kc_factory_t *factory;   /* shared informers (borrowed); NULL: own */
} node_proc_config_t;

/* Fill cfg with the defaults above (name and data_dir NULL). */
void node_proc_config_default(node_proc_config_t *cfg);

/* As node_sim_*: new (nothing runs; *out is the caller's), start (register,
 * serve logs, run pods), stop (idempotent; kills the pods' processes), free.
 * Errors of new: KP_EINVAL (no name or data_dir, backoff_scale <= 0),
 * KP_ENOMEM, KP_EIO (the data dir cannot be made). Errors of start: those
 * of node_sim_start, KP_EIO (the log server cannot listen). */
int node_proc_new(kc_client_t *c, const node_proc_config_t *cfg, node_proc_t **out);
int node_proc_start(node_proc_t *p);
void node_proc_stop(node_proc_t *p);
void node_proc_free(node_proc_t *p);

/* The log server's port once started (0 before). */
int node_proc_port(const node_proc_t *p);

/* Prometheus text of the node's metrics (the simulator's plus process
 * counts). *text is the caller's: free(). */
int node_proc_metrics(node_proc_t *p, char **text);

/* The crash-loop back-off before restart number n+1 of a container that
 * has been restarted n times since its back-off was last reset: 0 for the
 * first restart, then 10 s doubling to 5 min, times scale; milliseconds. */
int node_proc_backoff_ms(int n, double scale);

#endif
