/*
 * components.h -- the workers kplane runs beside (or apart from) the API
 * server: the controller manager, the scheduler and simulated nodes, each a
 * client of the API through src/client, optionally leader-elected.
 *
 * `kplane server` starts all three in its own process against its own API;
 * `kplane controller-manager`, `kplane scheduler` and `kplane node` start one
 * each against a kubeconfig. Both use this file so that the wiring is one.
 */
#ifndef KP_CLI_COMPONENTS_H
#define KP_CLI_COMPONENTS_H

#include "client/client.h"

typedef struct cli_components cli_components_t;

typedef struct cli_components_opts {
    int controllers;              /* run the controller manager */
    const char *const *enabled;   /* its controllers (NULL: all) */
    int workers;                  /* per controller; 0: default */
    int scheduler;                /* run the scheduler */
    int nodes;                    /* simulated nodes (0: none) */
    const char *node_prefix;      /* NULL: "kplane-node-" */
    int node_events;              /* simulated nodes record kubelet events */
    const char *node_runtime;     /* "process": one node running pods as processes
                                     (node_proc_*) instead of simulated ones; NULL/"sim" */
    const char *node_name;        /* the process node's name */
    const char *node_dir;         /* its data dir (pods, logs) */
    const char *node_token;       /* the bearer token its log server requires */
    int leader_elect;             /* campaign before running (controllers, scheduler) */
    int lease_ms, renew_ms, retry_ms; /* --leader-elect-*; 0: defaults */
    kc_client_t *leader_client;   /* leader election's client (borrowed, as c below; NULL:
                                     c), unthrottled so that renewals never queue behind
                                     the components' requests */
    int node_monitor_grace_ms;    /* --node-monitor-grace-period; 0: 40 s */
    int node_monitor_period_ms;   /* --node-monitor-period; 0: 5 s */
    const char *signing_cert_pem; /* the cluster CA csrsigning signs with (borrowed */
    const char *signing_key_pem;  /* until stop); NULL: csrsigning does not run */
    const char *root_ca_pem;      /* what root-ca-cert-publisher publishes (borrowed until
                                     stop); NULL: it does not run */
    int node_lease_s;             /* simulated nodes' --node-lease-duration-seconds
                                     (renewed every quarter of it, as a kubelet); 0: 40 */
    /* Each component's own identity (borrowed as c; NULL: c's): the
     * scheduler's writes and its Lease, and the nodes'. The shared
     * informers stay on c. */
    kc_client_t *sched_client, *node_client;
    int sa_credentials; /* controllers act as their ServiceAccounts
                           (ctrl_manager_config_t.sa_credentials) */
    int poll_ms;        /* > 0: the informers list every poll_ms instead of
                           watching (kc_informer_set_poll; the polling lab) */
} cli_components_opts_t;

/* Start what `o` asks for on client `c` (borrowed; it must outlive the
 * components). With leader_elect, the controller manager and the scheduler
 * start when their Lease is won, and the process exits (status 1, as
 * Kubernetes' components do) when it is lost. */
int cli_components_start(kc_client_t *c, const cli_components_opts_t *o, cli_components_t **out);
void cli_components_stop(cli_components_t *cc); /* stops and frees */
/* Prometheus text of every running component (caller frees). */
int cli_components_metrics(cli_components_t *cc, char **text);
/* 1 when every component asked for is running (leading, or not electing). */
int cli_components_healthy(cli_components_t *cc);
/* Is the component `name` ("scheduler", "controller-manager") running here:
 * 1 (leading, or not electing), 0 (asked for, not running: another holds
 * its Lease), -1 (not run by cc; cc may be NULL). Any thread. */
int cli_components_running(cli_components_t *cc, const char *name);

/* Go-style duration ("15s", "500ms", "1m30s", "2h") in milliseconds; -1 if
 * malformed. */
long cli_duration_ms(const char *s);

#endif
