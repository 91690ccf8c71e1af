/*
 * proc_int.h -- what the process runtime's files share (proc.c: lifecycle,
 * the pod table, metrics; proc_spawn.c: starting processes and the io
 * thread that reaps them and writes their logs; proc_pod.c: the pod
 * workers; proc_status.c: the status a pod reports; proc_http.c: the log
 * server).
 *
 * THREADS AND LOCKS.
 *   - The pod workers (the simulator's queue workers) call proc__pod_sync.
 *     A pod entry (proc_pod_t) and its containers belong to the worker that
 *     holds the pod's key, as in sim_pod.c; `mu` guards the pod list and
 *     each container's log pointers, which the log server reads.
 *   - The io thread owns every child's pipes and log file descriptor; `io_mu`
 *     guards the child list and each child's exited/status/orphan fields.
 *     It never calls the API; it only adds keys to the queue.
 *   - The log server's connection threads take log references under `mu`
 *     and then read files only.
 *   Lock order: mu before io_mu; neither is held across an API call.
 */
#ifndef KP_NODE_PROC_INT_H
#define KP_NODE_PROC_INT_H

#include <stdatomic.h>
#include <sys/types.h>

#include "node/sim_int.h"

#define PROC_COMPONENT "node-process"
#define PROC_LINE_MAX  16384 /* a longer line is split into partial (P) records */
#define PROC_PROBE_OUT 512   /* probe output kept for the Unhealthy event */
#define PROC_PATH_MAX  1024
#define PROC_NAME_MAX  64 /* a container's name: a DNS-1123 label */

/* One run's log file. Counted: the container holds one reference, each
 * log server stream another. `ended` is set by the io thread once every
 * byte of the run is in the file. */
typedef struct proc_log {
    atomic_int refs;
    atomic_int ended;
    char path[];
} proc_log_t;

proc_log_t *proc__log_new(const char *path); /* one reference; NULL: no memory */
proc_log_t *proc__log_ref(proc_log_t *l);
void proc__log_unref(proc_log_t *l); /* NULL: no-op */

/* A process the runtime started (a container's, or an exec probe's). */
typedef struct proc_child {
    struct proc_child *next; /* io_mu */
    pid_t pid;               /* also its process group */
    int pidfd;               /* -1: reaped by the io thread's periodic check */
    int fds[2];              /* stdout, stderr pipes; -1 when closed (io thread's) */
    char line[2][PROC_LINE_MAX];
    size_t line_len[2];
    int log_fd;               /* the run's log file (io thread's); -1 for probes */
    proc_log_t *log;          /* a reference; NULL for probes */
    char out[PROC_PROBE_OUT]; /* a probe's first output bytes */
    size_t out_len;
    char key[SIM_KEY_MAX]; /* the pod to re-queue when it exits */
    int exited, status;    /* io_mu: waitpid's status once exited */
    int64_t exit_wall;
    int orphan; /* io_mu: nobody waits for it; freed when it exits */
} proc_child_t;

/* An exec probe's settings and state (the worker's). */
typedef struct proc_probe {
    int on;
    int period_ms, initial_ms, timeout_ms, failure_thr, success_thr;
    int64_t due_ns;      /* the next run (monotonic) */
    int64_t deadline_ns; /* the running one's timeout */
    proc_child_t *child; /* the running one, or NULL */
    int successes, failures;
    int ok; /* the current result (readiness) */
} proc_probe_t;

enum { PC_WAITING = 0, PC_RUNNING, PC_TERMINATED };

typedef struct proc_ctr {
    char name[PROC_NAME_MAX];
    int init; /* an init container (spec.initContainers[idx]), else spec.containers[idx] */
    int idx;
    int state;
    char reason[64];   /* waiting reason, or terminated reason */
    char message[512]; /* waiting or terminated message ("" none) */
    int fatal;         /* cannot ever start (no command): never retried */
    proc_child_t *child;
    int64_t started_wall, finished_wall, started_mono;
    int exit_code;
    int restarts;           /* restartCount */
    int backoff_n;          /* restarts since the back-off was last reset */
    int backoff_ms;         /* the back-off the waiting state names */
    int64_t restart_due_ns; /* when waiting: the next start; 0: none */
    int has_last;
    int last_exit;
    char last_reason[32], last_cid[80];
    int64_t last_started_wall, last_finished_wall;
    int ready, started; /* started: it ran at least once */
    int killing;        /* SIGTERM sent; SIGKILL at kill_due_ns */
    int64_t kill_due_ns;
    int liveness_kill; /* the kill is a liveness failure's */
    proc_probe_t live, readiness;
    char cid[80];           /* the current (or last) run's containerID */
    proc_log_t *log, *prev; /* mu: the current and previous run's logs */
} proc_ctr_t;

enum { PP_ACTIVE = 0, PP_STOPPING, PP_GONE };

typedef struct proc_pod {
    struct proc_pod *next; /* mu */
    char key[SIM_KEY_MAX];
    char ns[64], name[254], uid[64];
    char dir[PROC_PATH_MAX]; /* <data_dir>/pods/<ns>_<name>_<uid> */
    int stage;
    int frozen;       /* found terminal (the node restarted): reported as it is */
    int nctr;         /* init containers and containers */
    int ninit;        /* ctrs[0..ninit) are the init containers, in order */
    int init_next;    /* the init container to run next; ninit: all completed */
    proc_ctr_t *ctrs; /* spec.initContainers then spec.containers, in order */
    int64_t start_wall, ready_wall;
    int64_t stop_ns; /* when deletion was seen (monotonic) */
    int ready;
    json_t *written; /* the last status patch written (to skip repeats) */
    uint64_t cid_base;
} proc_pod_t;

struct node_proc {
    node_sim_t *sim; /* the node's registration, heartbeats, informer, queue, events */
    kc_client_t *client;
    char *name, *dir, *addr, *token;
    int port_cfg, port;
    double backoff_scale;
    pthread_mutex_t mu;
    proc_pod_t *pods;
    int started;
    atomic_int stopping;
    /* io thread */
    pthread_mutex_t io_mu;
    proc_child_t *children;
    int wake_fd; /* eventfd: a new child, or stop */
    int devnull; /* O_RDONLY /dev/null for stdin */
    pthread_t io;
    int io_running;
    struct httpd *http;      /* the log server (proc_http.c) */
    atomic_uint_fast64_t starts, exits, start_errors, kills, probe_runs, probe_failures;
};

/* ---- proc.c ---- */
/* The pod entry of key (borrowed; the calling worker's), or NULL. */
proc_pod_t *proc__pod_find(node_proc_t *p, const char *key);
void proc__pod_insert(node_proc_t *p, proc_pod_t *pp);
void proc__pod_remove(node_proc_t *p, proc_pod_t *pp); /* unlinks; does not free */
/* A reference to the current (previous 0) or previous (1) log of container
 * `ctr` of pod key, or NULL (*why: "pod", "container" or "previous"). */
proc_log_t *proc__log_lookup(node_proc_t *p, const char *key, const char *ctr, int previous,
                             const char **why);
/* An RFC 3339 time with 9 fractional digits ("...Z"), as log records carry. */
void proc__time_nano(char *buf, size_t n, int64_t wall_ns);

/* ---- proc_spawn.c ---- */
/* Start argv with environment envp in directory cwd, in a new process
 * group, stdin /dev/null, stdout and stderr to log (a reference is taken;
 * NULL: captured into child->out, for probes). *out is listed for the io
 * thread, which re-queues key when it exits. Errors: KP_ENOMEM, KP_EIO
 * (pipes, fork); an exec or chdir failure returns KP_EINVAL with its errno
 * in *err. */
int proc__spawn(node_proc_t *p, const char *key, char *const argv[], char *const envp[],
                const char *cwd, proc_log_t *log, proc_child_t **out, int *err);
/* Has c exited? 1 with its waitpid status in *status. */
int proc__child_exited(node_proc_t *p, proc_child_t *c, int *status);
/* Signal c's process group (if it has not exited). */
void proc__child_signal(node_proc_t *p, proc_child_t *c, int sig);
/* The caller no longer wants c: freed now if exited, else when it exits
 * (it is SIGKILLed first when kill is set). c is invalid afterwards. */
void proc__child_release(node_proc_t *p, proc_child_t *c, int kill);
int proc__io_start(node_proc_t *p);
/* Stop the io thread: SIGTERM every child's group, SIGKILL after grace_ms,
 * reap and free them all. */
void proc__io_stop(node_proc_t *p, int grace_ms);

/* ---- proc_pod.c ---- */
int proc__pod_sync(void *arg, const char *key);
void proc__pod_free(node_proc_t *p, proc_pod_t *pp); /* kills its processes */

/* ---- proc_status.c ---- */
/* The merge patch {"status": ...} for pod (read-only) and its entry, or
 * NULL when out of memory. */
json_t *proc__status_patch(node_proc_t *p, const json_t *pod, const proc_pod_t *pp);
/* The phase a kubelet computes from the containers' states. */
const char *proc__phase(const json_t *pod, const proc_pod_t *pp);

/* ---- proc_http.c ---- */
int proc__http_start(node_proc_t *p);
void proc__http_stop(node_proc_t *p);

#endif
