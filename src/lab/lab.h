/*
 * lab.h -- `kplane lab`: the seed investigations' experiments, run for real
 * on loopback and reported as the seeds' own tables, filled in with what the
 * run observed.
 *
 *   kplane lab list               every lab: name, seed, one line
 *   kplane lab run NAME [--keep]  run one; --keep leaves its directory (every
 *                                 process's log, the stores) for reading
 *
 * A lab is one lab_def_t (lab_*.c, one file each, listed in labs.c) whose
 * run() starts what it needs through this header -- `kplane server`s,
 * `kplane apiserver`s, controller managers, etcd members, proxies -- drives
 * it with real clients (src/client, and kubectl where the seed names it),
 * and reports through lab_say() and the table calls. Everything it starts is
 * stopped by the framework when run() returns, when it fails, and on SIGINT
 * or SIGTERM: no process, port or (without --keep) file is left behind.
 *
 * OUTPUT. Human text on stdout, one line at a time, flushed: narration
 * (lab_say), then tables, each printed whole once its rows are in
 * (lab_table_end). With KPLANE_LAB_EVENTS=1 each line is also preceded by a
 * machine line, `@lab <json>` ({"say":...}, {"table":...,"columns":[...]},
 * {"row":[...]}, {"end":...}), for the dashboard's lab page, which shows the
 * table filling in; the very last line of a run is {"done":1}, or
 * {"done":0,"error":"..."} when it failed or was interrupted.
 *
 * THREADS. A lab_t belongs to the thread running run(); the calls below are
 * that thread's, except lab_say and lab_elapsed_ms (any thread).
 *
 * ERRORS are KP_* codes (lib/err.h); a failing call has already said why
 * through lab_say (what, and the log to read).
 */
#ifndef KP_LAB_H
#define KP_LAB_H

#include <stddef.h>
#include <sys/types.h>

#include "client/client.h"

typedef struct lab lab_t;

typedef struct lab_def {
    const char *name;    /* "exercise" */
    const char *seed;    /* the investigation: "003" or "007" */
    const char *title;   /* one line for `lab list` */
    const char *needs;   /* NULL, or what must be installed ("etcd"): the lab
                            says so, and how to install it, instead of running */
    int (*run)(lab_t *lab);
} lab_def_t;

/* Every lab, NULL-terminated (labs.c). */
extern const lab_def_t *const lab_all[];
const lab_def_t *lab_find(const char *name);

/* `kplane lab` (argv[0] is "lab"). */
int lab_main(int argc, char **argv);

/* ---- the run ---- */

const char *lab_dir(const lab_t *lab);     /* its own temp dir */
const char *lab_kplane(const lab_t *lab);  /* this binary (/proc/self/exe) */
double lab_elapsed_ms(const lab_t *lab);   /* since the run began */
void lab_say(lab_t *lab, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- processes (each stopped by pid at the end, SIGTERM then SIGKILL) ---- */

/* Start argv (argv[0] a path; NULL-terminated) with stdout and stderr to
 * DIR/<name>.log. */
int lab_spawn(lab_t *lab, const char *name, char *const argv[], pid_t *pid);
/* Send sig (SIGKILL for kill -9, SIGSTOP/SIGCONT to freeze) to a process
 * lab_spawn started; SIGKILL and SIGTERM also reap it. */
int lab_signal(lab_t *lab, pid_t pid, int sig);

/* One API server: `kplane server` (controllers, scheduler, nodes per the
 * options) or `kplane apiserver` (serve only), on 127.0.0.1 and a free port,
 * its data in DIR/<name>/, ready (GET /readyz 200) before this returns. */
typedef struct lab_server_opts {
    const char *name;             /* "server", "api-1", ... */
    int apiserver_only;           /* kplane apiserver instead of kplane server */
    const char *store;            /* NULL: embedded; "etcd://..." */
    const char *data_dir;         /* NULL: DIR/<name>; an earlier server's to restart it */
    int nodes;                    /* simulated nodes (kplane server); 0: its default
                                     (3); -1: none */
    int no_controllers, no_scheduler;
    const char *const *extra;     /* more flags, NULL-terminated, or NULL */
    /* NULL, or a server of the same cluster (the same etcd): this one
     * starts with its CA, serving certificate and key and admin token
     * (copied into the data dir before the first start), so that one
     * kubeconfig, token and client work for both. */
    const struct lab_server *peer;
} lab_server_opts_t;

typedef struct lab_server {
    pid_t pid;
    int port;
    char url[64];          /* https://127.0.0.1:PORT */
    char dir[512];         /* its data dir */
    char kubeconfig[600];  /* DIR/kubeconfig (admin) */
    kc_client_t *client;   /* the admin's (owned by the lab) */
} lab_server_t;

int lab_server_start(lab_t *lab, const lab_server_opts_t *o, lab_server_t **out);
/* kill -9 it (the client stays; its calls fail until a restart). */
int lab_server_kill9(lab_t *lab, lab_server_t *s);
/* Start it again on the same data dir and port. */
int lab_server_restart(lab_t *lab, lab_server_t *s);

/* A client (owned by the lab) for the admin of `s` that talks to `url`
 * instead: a proxy in front of it, or another server of the same cluster. */
kc_client_t *lab_client_via(lab_t *lab, const lab_server_t *s, const char *url);

/* `kplane controller-manager` (or scheduler, node) against s's kubeconfig,
 * or against `server_url` when not NULL; args: more flags. */
int lab_component_start(lab_t *lab, const char *name, const char *what, const lab_server_t *s,
                        const char *server_url, const char *const *args, pid_t *pid);

/* An etcd cluster of n members on loopback (DIR/etcd-I), ready; endpoints
 * in "etcd://127.0.0.1:P1,127.0.0.1:P2,..." form for --store. KP_ENOTFOUND
 * (and said how to install it) when etcd is missing. */
int lab_etcd_start(lab_t *lab, int n, char *store_url, size_t size, pid_t *pids);

/* kubectl with s's kubeconfig: its exit status, its output (the caller's;
 * may be NULL) and how long it took. KP_ENOTFOUND when kubectl is missing. */
int lab_kubectl(lab_t *lab, const lab_server_t *s, int timeout_ms, char **output,
                double *took_ms, const char *const *args);

/* ---- tables (the seeds' tables, filled in) ---- */

void lab_table(lab_t *lab, const char *title, const char *const *columns); /* NULL-terminated */
void lab_row(lab_t *lab, const char *const *cells);                        /* as many */
void lab_table_end(lab_t *lab);

#endif
