/*
 * lab.c -- the framework behind `kplane lab` (lab.h): a run's directory, the
 * processes it starts, its API servers and clients, its output.
 *
 * INVARIANTS
 *   1. Every process a lab starts is forked by lab_spawn() (kubectl by
 *      lab_kubectl()), in a process group of its own, with PR_SET_PDEATHSIG
 *      SIGKILL, and listed in lab->procs before the lock is let go; once
 *      lab->finishing is set no process is started any more. So stop_all()
 *      sees every process there is, and the group kill reaches what they
 *      started in turn.
 *   2. Exactly one thread tears down: the lab's own thread when run()
 *      returns, or the signal thread on SIGINT or SIGTERM -- whichever sets
 *      lab->finishing first (under lab->mu). The signal thread then stops
 *      every process, removes the directory (without --keep), prints the
 *      done line and _exit()s; the lab's thread, finding finishing already
 *      set, waits for that.
 *   3. Output lines are whole: a line (and its `@lab` line) is written and
 *      flushed under lab->mu, so narration from writer threads never
 *      interleaves inside a line.
 *
 * No mutable global: SIGINT and SIGTERM are blocked in every thread (the
 * mask is set before the first thread starts, so every later thread --
 * writers, libcurl's -- inherits it) and taken by sigwait() in the signal
 * thread, which gets the lab as its argument. Children get a clean mask
 * before exec.
 *
 * States of a run: started (dir made, signal thread up) -> running (run())
 * -> finishing (stop_all, rmtree) -> done (the done line). finishing is
 * entered by finish() or sig_main().
 */
#include "lab/lab.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/lab_int.h"
#include "lib/buf.h"
#include "lib/err.h"

#define LAB_MAX_PROCS   64
#define LAB_MAX_SERVERS 16
#define LAB_MAX_CLIENTS 32
#define LAB_MAX_ROWS    512
#define LAB_MAX_COLS    16
#define LAB_MAX_EXTRA   24
#define LAB_TERM_MS     10000     /* SIGTERM's grace (an ASan server takes seconds) */
#define LAB_READY_MS    90000     /* a server's start, to /readyz 200 */
#define LAB_OUTPUT_MAX  (1 << 20) /* kubectl output kept */

/* Exit statuses, as the other subcommands' (cli/cli.h). */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_SIGNAL = 130 };

typedef struct lab_proc {
    pid_t pid;
    int reaped;
    char name[64];
} lab_proc_t;

/* A server and how to start it again (its first member is the public part,
 * so a lab_server_t * given out is one of these). */
typedef struct lab_srv {
    lab_server_t pub;
    char name[64];
    char token[256];
    char *ca_pem;
    char *argv[LAB_MAX_EXTRA + 24]; /* strdup'd; the --listen value at listen_i */
    int listen_i;
} lab_srv_t;

struct lab {
    const lab_def_t *def;
    char dir[256]; /* short enough for DIR/NAME/kplane.sock (108 bytes) most of the time */
    char self[1024];
    char last_say[2048]; /* the last narration: a failure's reason */
    int keep, events;
    struct timespec t0;
    pthread_mutex_t mu; /* guards procs, finishing and stdout */
    lab_proc_t procs[LAB_MAX_PROCS];
    int nprocs;
    int finishing;
    lab_srv_t *servers[LAB_MAX_SERVERS];
    int nservers;
    kc_client_t *clients[LAB_MAX_CLIENTS];
    int nclients;
    /* the table being filled (lab_table .. lab_table_end) */
    char *title;
    char *cols[LAB_MAX_COLS];
    size_t ncols;
    char **cells;
    size_t nrows;
};

/* ---- small helpers ---- */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

double lab_elapsed_ms(const lab_t *lab)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - lab->t0.tv_sec) * 1e3 +
           (double)(now.tv_nsec - lab->t0.tv_nsec) / 1e6;
}

const char *lab_dir(const lab_t *lab)
{
    return lab->dir;
}

const char *lab_kplane(const lab_t *lab)
{
    return lab->self;
}

/* A machine line (may be NULL) and a human text, written whole (inv. 3). */
static void emit(lab_t *lab, const buf_t *machine, const char *human, size_t hlen)
{
    pthread_mutex_lock(&lab->mu);
    if (lab->events && machine && machine->p) fwrite(machine->p, 1, machine->len, stdout);
    fwrite(human, 1, hlen, stdout);
    fflush(stdout);
    pthread_mutex_unlock(&lab->mu);
}

void lab_say(lab_t *lab, const char *fmt, ...)
{
    char text[2048], line[2048 + 400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    int n = snprintf(line, sizeof line, "[%5.1fs] %s\n", lab_elapsed_ms(lab) / 1e3, text);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    buf_t m;
    buf_init(&m, sizeof text * 7 + 64);
    lab__event_say(&m, text);
    pthread_mutex_lock(&lab->mu);
    snprintf(lab->last_say, sizeof lab->last_say, "%s", text);
    pthread_mutex_unlock(&lab->mu);
    emit(lab, &m, line, (size_t)n);
    buf_free(&m);
}

/* Is `file` an executable in $PATH? Its path into out. */
static int which(const char *file, char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        int len =
            n ? snprintf(out, size, "%.*s/%s", (int)n, p, file) : snprintf(out, size, "./%s", file);
        if (len > 0 && (size_t)len < size && access(out, X_OK) == 0) return 0;
        p += n;
        if (*p == ':') p++;
    }
    return KP_ENOTFOUND;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void rmtree(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The last `lines` lines of DIR/<name>.log said, for a start that failed. */
static void say_log_tail(lab_t *lab, const char *name, int lines)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s.log", lab->dir, name);
    buf_t b;
    buf_init(&b, 1 << 20);
    if (buf_append_file(&b, path) == 0 && b.p) {
        size_t start = b.len;
        for (int k = 0; start > 0 && k <= lines; start--)
            if (b.p[start - 1] == '\n' && ++k > lines) break;
        for (char *save = NULL, *l = strtok_r(b.p + start, "\n", &save); l;
             l = strtok_r(NULL, "\n", &save))
            lab_say(lab, "  %s: %s", name, l);
    }
    buf_free(&b);
}

/* ---- processes ---- */

/* In the child, between fork and exec: async-signal-safe calls only. */
static void child_setup(int out_fd, pid_t parent)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); /* the lab died before we got here */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    dup2(out_fd, 1);
    dup2(out_fd, 2);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, 0) != 0)
#endif
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
}

static int ended(lab_t *lab, pid_t pid);

/* Fork argv with stdout and stderr to out_fd (inv. 1). */
static int spawn_fd(lab_t *lab, const char *name, char *const argv[], int out_fd, pid_t *pid)
{
    *pid = 0;
    pid_t parent = getpid();
    /* The table full: reap what ended on its own, to reuse its entry. */
    pthread_mutex_lock(&lab->mu);
    pid_t known[LAB_MAX_PROCS];
    int nknown = 0;
    for (int i = 0; lab->nprocs == LAB_MAX_PROCS && i < lab->nprocs; i++)
        if (!lab->procs[i].reaped) known[nknown++] = lab->procs[i].pid;
    pthread_mutex_unlock(&lab->mu);
    for (int i = 0; i < nknown; i++)
        ended(lab, known[i]);
    pthread_mutex_lock(&lab->mu);
    /* A free entry: a new one, else one whose process was reaped (a lab
     * running kubectl a hundred times). */
    int slot = lab->nprocs < LAB_MAX_PROCS ? lab->nprocs : -1;
    for (int i = 0; slot < 0 && i < lab->nprocs; i++)
        if (lab->procs[i].reaped) slot = i;
    if (lab->finishing || slot < 0) {
        int full = !lab->finishing;
        pthread_mutex_unlock(&lab->mu);
        return full ? KP_ETOOLARGE : KP_ECLOSED;
    }
    pid_t p = fork();
    if (p == 0) {
        child_setup(out_fd, parent);
        execv(argv[0], argv);
        _exit(127);
    }
    if (p > 0) {
        if (slot == lab->nprocs) lab->nprocs++;
        lab_proc_t *e = &lab->procs[slot];
        e->pid = p;
        e->reaped = 0;
        snprintf(e->name, sizeof e->name, "%s", name);
    }
    pthread_mutex_unlock(&lab->mu);
    if (p < 0) return KP_EIO;
    setpgid(p, p); /* as the child does: whichever runs first */
    *pid = p;
    return 0;
}

int lab_spawn(lab_t *lab, const char *name, char *const argv[], pid_t *pid)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s.log", lab->dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        lab_say(lab, "cannot open %s: %s", path, strerror(errno));
        return KP_EIO;
    }
    int rc = spawn_fd(lab, name, argv, fd, pid);
    close(fd);
    if (rc) lab_say(lab, "cannot start %s (%s): %s", name, argv[0], err_str(rc));
    return rc;
}

/* The process with that pid: the running one if there is one (a pid may
 * come again after a reap, and entries are reused), else a reaped one. */
static lab_proc_t *proc_of(lab_t *lab, pid_t pid)
{
    lab_proc_t *reaped = NULL;
    for (int i = 0; i < lab->nprocs; i++)
        if (lab->procs[i].pid == pid) {
            if (!lab->procs[i].reaped) return &lab->procs[i];
            reaped = &lab->procs[i];
        }
    return reaped;
}

static void mark_reaped(lab_t *lab, pid_t pid)
{
    pthread_mutex_lock(&lab->mu);
    lab_proc_t *e = proc_of(lab, pid);
    if (e) e->reaped = 1;
    pthread_mutex_unlock(&lab->mu);
}

/* Has pid ended (reaped now or before)? */
static int ended(lab_t *lab, pid_t pid)
{
    pthread_mutex_lock(&lab->mu);
    lab_proc_t *e = proc_of(lab, pid);
    int done = !e || e->reaped;
    pthread_mutex_unlock(&lab->mu);
    if (done) return 1;
    pid_t w = waitpid(pid, NULL, WNOHANG);
    if (w == pid || (w < 0 && errno == ECHILD)) {
        mark_reaped(lab, pid);
        return 1;
    }
    return 0;
}

/* Wait up to ms for pid to end; SIGKILL (its group) after. */
static void reap(lab_t *lab, pid_t pid, int ms)
{
    for (int waited = 0; !ended(lab, pid); waited += 20) {
        if (waited >= ms) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            mark_reaped(lab, pid);
            break;
        }
        sleep_ms(20);
    }
    kill(-pid, SIGKILL); /* what it started in its group, if anything */
}

int lab_signal(lab_t *lab, pid_t pid, int sig)
{
    pthread_mutex_lock(&lab->mu);
    lab_proc_t *e = proc_of(lab, pid);
    int known = e && !e->reaped;
    pthread_mutex_unlock(&lab->mu);
    if (!known) return KP_ENOTFOUND;
    if (sig == SIGKILL) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        reap(lab, pid, 5000);
        return 0;
    }
    if (sig == SIGTERM) kill(pid, SIGCONT);
    if (kill(pid, sig)) return KP_EIO;
    if (sig == SIGTERM) reap(lab, pid, LAB_TERM_MS);
    return 0;
}

/* Stop the processes still running whose name starts with `prefix` (want
 * 1) or does not (want 0): SIGCONT and SIGTERM, up to grace_ms, SIGKILL. */
static void stop_wave(lab_t *lab, const char *prefix, int want, int grace_ms)
{
    pid_t pids[LAB_MAX_PROCS];
    int n = 0;
    pthread_mutex_lock(&lab->mu);
    for (int i = 0; i < lab->nprocs; i++)
        if (!lab->procs[i].reaped &&
            (strncmp(lab->procs[i].name, prefix, strlen(prefix)) == 0) == want)
            pids[n++] = lab->procs[i].pid;
    pthread_mutex_unlock(&lab->mu);
    for (int i = 0; i < n; i++) {
        kill(pids[i], SIGCONT);
        kill(pids[i], SIGTERM);
    }
    for (int waited = 0; waited < grace_ms; waited += 20) {
        int alive = 0;
        for (int i = 0; i < n; i++)
            alive += !ended(lab, pids[i]);
        if (!alive) break;
        sleep_ms(20);
    }
    for (int i = 0; i < n; i++)
        reap(lab, pids[i], 0);
}

/* Stop every process still running: the clients of the store first, then
 * the etcd members, whose leader would otherwise spend seconds trying to
 * hand its leadership to peers stopping beside it (their WAL makes a
 * SIGKILL after a short grace safe). */
static void stop_all(lab_t *lab)
{
    stop_wave(lab, "etcd-", 0, LAB_TERM_MS);
    stop_wave(lab, "etcd-", 1, 1000);
}

/* ---- servers ---- */

/* A free port on 127.0.0.1 (free when asked: another may take it after). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int port = 0;
    if (!bind(fd, (struct sockaddr *)&sa, sizeof sa) &&
        !getsockname(fd, (struct sockaddr *)&sa, &len))
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) ? 0 : (long)st.st_size;
}

/* The port in "... is serving on https://127.0.0.1:PORT;" written to the
 * log after byte `from`; 0 if not yet. */
static int served_port(const char *log, long from, const char *marker)
{
    FILE *f = fopen(log, "r");
    if (!f) return 0;
    int port = 0;
    char line[2048];
    if (fseek(f, from, SEEK_SET) == 0)
        while (!port && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, marker);
            if (p) port = (int)strtol(p + strlen(marker), NULL, 10);
        }
    fclose(f);
    return port;
}

/* A file's contents (malloc'd, NUL-terminated) or NULL. */
static char *slurp(const char *path)
{
    buf_t b;
    buf_init(&b, 1 << 20);
    if (buf_append_file(&b, path)) {
        buf_free(&b);
        return NULL;
    }
    size_t len;
    return buf_detach(&b, &len);
}

static int new_client(lab_t *lab, const lab_srv_t *s, const char *url, kc_client_t **out)
{
    *out = NULL;
    if (lab->nclients == LAB_MAX_CLIENTS) return KP_ETOOLARGE;
    kc_config_t cfg = {
        .server = url, .token = s->token, .ca_pem = s->ca_pem, .user_agent = "kplane-lab"};
    int rc = kc_client_new(&cfg, out);
    if (!rc) lab->clients[lab->nclients++] = *out;
    return rc;
}

kc_client_t *lab_client_via(lab_t *lab, const lab_server_t *s, const char *url)
{
    kc_client_t *c = NULL;
    int rc = new_client(lab, (const lab_srv_t *)s, url, &c);
    if (rc) lab_say(lab, "a client for %s: %s", url, err_str(rc));
    return c;
}

/* Wait for the server started with its log at `from` to serve and be ready. */
static int server_wait(lab_t *lab, lab_srv_t *s, long from)
{
    lab_server_t *p = &s->pub;
    char log[700];
    snprintf(log, sizeof log, "%s/%s.log", lab->dir, s->name);
    double t0 = lab_elapsed_ms(lab);
    int port = 0;
    while (!(port = served_port(log, from, "is serving on https://127.0.0.1:"))) {
        if (ended(lab, p->pid) || lab_elapsed_ms(lab) - t0 > LAB_READY_MS) {
            lab_say(lab, "%s did not start (its log: %s):", s->name, log);
            say_log_tail(lab, s->name, 8);
            return KP_EUNAVAILABLE;
        }
        sleep_ms(20);
    }
    p->port = port;
    snprintf(p->url, sizeof p->url, "https://127.0.0.1:%d", port);
    if (!p->client) {
        char path[700];
        snprintf(path, sizeof path, "%s/admin-token", p->dir);
        char *tok = slurp(path);
        snprintf(path, sizeof path, "%s/ca.crt", p->dir);
        s->ca_pem = slurp(path);
        if (!tok || !s->ca_pem) {
            free(tok);
            lab_say(lab, "%s: no admin-token or ca.crt in %s", s->name, p->dir);
            return KP_ENOTFOUND;
        }
        snprintf(s->token, sizeof s->token, "%.*s", (int)strcspn(tok, "\r\n"), tok);
        free(tok);
        int rc = new_client(lab, s, p->url, &p->client);
        if (rc) {
            lab_say(lab, "%s: a client: %s", s->name, err_str(rc));
            return rc;
        }
    }
    /* /readyz answers text ("ok"): kc_get_path calls a 2xx that is no JSON
     * object KP_ECORRUPT, and anything else an error. */
    for (;;) {
        json_t *j = NULL;
        int rc = kc_get_path(p->client, "/readyz", &j);
        json_decref(j);
        if (rc == 0 || rc == KP_ECORRUPT) return 0;
        if (ended(lab, p->pid) || lab_elapsed_ms(lab) - t0 > LAB_READY_MS) {
            lab_say(lab, "%s never became ready (%s; its log: %s):", s->name, err_str(rc), log);
            say_log_tail(lab, s->name, 8);
            return KP_EUNAVAILABLE;
        }
        sleep_ms(25);
    }
}

static void srv_free(lab_srv_t *s)
{
    if (!s) return;
    for (size_t i = 0; i < sizeof s->argv / sizeof s->argv[0]; i++)
        free(s->argv[i]);
    free(s->ca_pem);
    free(s);
}

/* Copy the files that make `to` a server of from's cluster (the HA drills'
 * ha_api_start does the same): the data dir is made 0700, the files 0600. */
static int copy_identity(lab_t *lab, const char *from, const char *to)
{
    static const char *const files[] = {"ca.crt", "server.crt", "server.key", "admin-token"};
    if (mkdir(to, 0700) && errno != EEXIST) {
        lab_say(lab, "cannot make %s: %s", to, strerror(errno));
        return KP_EIO;
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char src[700], dst[700];
        snprintf(src, sizeof src, "%s/%s", from, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", to, files[i]);
        if (access(dst, F_OK) == 0) continue; /* a restart keeps what it has */
        buf_t b;
        buf_init(&b, 1 << 20);
        int rc = buf_append_file(&b, src);
        int fd = rc ? -1 : open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (!rc && (fd < 0 || write(fd, b.p, b.len) != (ssize_t)b.len)) rc = KP_EIO;
        if (fd >= 0 && close(fd)) rc = KP_EIO;
        buf_free(&b);
        if (rc) {
            lab_say(lab, "copying %s to %s: %s", src, dst, err_str(rc));
            return rc;
        }
    }
    return 0;
}

int lab_server_start(lab_t *lab, const lab_server_opts_t *o, lab_server_t **out)
{
    *out = NULL;
    if (lab->nservers == LAB_MAX_SERVERS) return KP_ETOOLARGE;
    lab_srv_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    snprintf(s->name, sizeof s->name, "%s", o->name ? o->name : "server");
    if (o->data_dir)
        snprintf(s->pub.dir, sizeof s->pub.dir, "%s", o->data_dir);
    else
        snprintf(s->pub.dir, sizeof s->pub.dir, "%s/%s", lab->dir, s->name);
    snprintf(s->pub.kubeconfig, sizeof s->pub.kubeconfig, "%s/kubeconfig", s->pub.dir);

    char store[600] = "", nodes[16] = "";
    if (o->store)
        snprintf(store, sizeof store, "%s", o->store);
    else if (o->apiserver_only)
        snprintf(store, sizeof store, "lmdb:%s/store", s->pub.dir);
    const char *a[LAB_MAX_EXTRA + 24];
    int n = 0;
    a[n++] = lab->self;
    a[n++] = o->apiserver_only ? "apiserver" : "server";
    a[n++] = "--data-dir";
    a[n++] = s->pub.dir;
    a[n++] = "--listen";
    s->listen_i = n;
    a[n++] = "127.0.0.1:0";
    if (*store) {
        a[n++] = "--store";
        a[n++] = store;
    }
    if (!o->apiserver_only) {
        if (o->nodes) {
            snprintf(nodes, sizeof nodes, "%d", o->nodes < 0 ? 0 : o->nodes);
            a[n++] = "--nodes";
            a[n++] = nodes;
        }
        if (o->no_controllers) a[n++] = "--no-controllers";
        if (o->no_scheduler) a[n++] = "--no-scheduler";
    }
    for (int i = 0; o->extra && o->extra[i] && i < LAB_MAX_EXTRA; i++)
        a[n++] = o->extra[i];
    for (int i = 0; i < n; i++)
        if (!(s->argv[i] = strdup(a[i]))) {
            srv_free(s);
            return KP_ENOMEM;
        }
    lab->servers[lab->nservers++] = s;
    int rc = o->peer ? copy_identity(lab, o->peer->dir, s->pub.dir) : 0;
    if (rc) return rc;

    char log[700];
    snprintf(log, sizeof log, "%s/%s.log", lab->dir, s->name);
    long from = file_size(log);
    double t0 = lab_elapsed_ms(lab);
    rc = lab_spawn(lab, s->name, s->argv, &s->pub.pid);
    if (!rc) rc = server_wait(lab, s, from);
    if (rc) return rc;
    lab_say(lab, "%s: kplane %s serving on %s, ready in %.0f ms (pid %d)", s->name, s->argv[1],
            s->pub.url, lab_elapsed_ms(lab) - t0, (int)s->pub.pid);
    *out = &s->pub;
    return 0;
}

int lab_server_kill9(lab_t *lab, lab_server_t *s)
{
    return lab_signal(lab, s->pid, SIGKILL);
}

int lab_server_restart(lab_t *lab, lab_server_t *pub)
{
    lab_srv_t *s = (lab_srv_t *)pub;
    if (!ended(lab, pub->pid)) return KP_EBUSY;
    char listen[32], log[700];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", pub->port);
    char *keep = s->argv[s->listen_i];
    if (!(s->argv[s->listen_i] = strdup(listen))) {
        s->argv[s->listen_i] = keep;
        return KP_ENOMEM;
    }
    free(keep);
    snprintf(log, sizeof log, "%s/%s.log", lab->dir, s->name);
    /* The port was ours a moment ago; should the bind still fail, try again. */
    int rc = KP_EUNAVAILABLE;
    for (int attempt = 0; attempt < 5 && rc; attempt++) {
        long from = file_size(log);
        if ((rc = lab_spawn(lab, s->name, s->argv, &pub->pid))) return rc;
        rc = server_wait(lab, s, from);
        if (rc && !ended(lab, pub->pid)) return rc; /* running but not ready */
        if (rc) sleep_ms(200);
    }
    return rc;
}

int lab_component_start(lab_t *lab, const char *name, const char *what, const lab_server_t *s,
                        const char *server_url, const char *const *args, pid_t *pid)
{
    const char *a[LAB_MAX_EXTRA + 8];
    int n = 0;
    a[n++] = lab->self;
    a[n++] = what;
    a[n++] = "--kubeconfig";
    a[n++] = s->kubeconfig;
    if (server_url) {
        a[n++] = "--server";
        a[n++] = server_url;
    }
    for (int i = 0; args && args[i] && i < LAB_MAX_EXTRA; i++)
        a[n++] = args[i];
    a[n] = NULL;
    char log[700];
    snprintf(log, sizeof log, "%s/%s.log", lab->dir, name);
    long from = file_size(log);
    double t0 = lab_elapsed_ms(lab);
    int rc = lab_spawn(lab, name, (char *const *)a, pid);
    if (rc) return rc;
    /* "kplane controller-manager is running against URL" */
    char marker[96];
    snprintf(marker, sizeof marker, "kplane %s is running against", what);
    for (;;) {
        FILE *f = fopen(log, "r");
        int found = 0;
        char line[2048];
        if (f && fseek(f, from, SEEK_SET) == 0)
            while (!found && fgets(line, sizeof line, f))
                found = strstr(line, marker) != NULL;
        if (f) fclose(f);
        if (found) break;
        if (ended(lab, *pid) || lab_elapsed_ms(lab) - t0 > LAB_READY_MS) {
            lab_say(lab, "%s did not start (its log: %s):", name, log);
            say_log_tail(lab, name, 8);
            return KP_EUNAVAILABLE;
        }
        sleep_ms(20);
    }
    lab_say(lab, "%s: kplane %s running (pid %d)", name, what, (int)*pid);
    return 0;
}

/* ---- etcd ---- */

static int etcd_binary(char *out, size_t size)
{
    const char *env = getenv("KP_ETCD_BIN");
    if (env && *env && access(env, X_OK) == 0) {
        snprintf(out, size, "%s", env);
        return 0;
    }
    return which("etcd", out, size);
}

static void say_no_etcd(lab_t *lab)
{
    lab_say(lab, "etcd is not installed; on Debian: apt-get install etcd-server");
}

int lab_etcd_start(lab_t *lab, int n, char *store_url, size_t size, pid_t *pids)
{
    enum { MAX_MEMBERS = 7 };
    char bin[1024];
    if (etcd_binary(bin, sizeof bin)) {
        say_no_etcd(lab);
        return KP_ENOTFOUND;
    }
    if (n < 1 || n > MAX_MEMBERS) return KP_EINVAL;
    int client[MAX_MEMBERS], peer[MAX_MEMBERS];
    char cluster[1024] = "";
    buf_t url;
    buf_init(&url, size);
    int rc = buf_append(&url, "etcd://", 7);
    for (int i = 0; i < n; i++) {
        client[i] = free_port();
        peer[i] = free_port();
        if (!client[i] || !peer[i]) rc = KP_EIO;
        size_t len = strlen(cluster);
        snprintf(cluster + len, sizeof cluster - len, "%se%d=http://127.0.0.1:%d", i ? "," : "", i,
                 peer[i]);
        if (!rc) rc = buf_printf(&url, "%s127.0.0.1:%d", i ? "," : "", client[i]);
    }
    if (rc || url.len >= size) {
        buf_free(&url);
        return rc ? rc : KP_ETOOLARGE;
    }
    memcpy(store_url, url.p, url.len + 1);
    buf_free(&url);
    for (int i = 0; !rc && i < n; i++) {
        char name[16], dir[600], curl_[64], purl[64];
        snprintf(name, sizeof name, "e%d", i);
        snprintf(dir, sizeof dir, "%s/etcd-%d", lab->dir, i);
        snprintf(curl_, sizeof curl_, "http://127.0.0.1:%d", client[i]);
        snprintf(purl, sizeof purl, "http://127.0.0.1:%d", peer[i]);
        /* clang-format off */
        const char *a[] = {bin, "--name", name, "--data-dir", dir,
                           "--listen-client-urls", curl_, "--advertise-client-urls", curl_,
                           "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
                           "--initial-cluster", cluster, "--initial-cluster-state", "new",
                           "--initial-cluster-token", "kp-lab",
                           "--heartbeat-interval", "50", "--election-timeout", "500",
                           "--max-request-bytes", "8388608",
                           /* the watch progress the API servers' watch caches wait
                            * for, as in tests/ha/harness.sh */
                           "--experimental-watch-progress-notify-interval", "100ms", NULL};
        /* clang-format on */
        char logname[32];
        snprintf(logname, sizeof logname, "etcd-%d", i);
        rc = lab_spawn(lab, logname, (char *const *)a, &pids[i]);
    }
    /* Healthy: every member's /health says so. */
    double t0 = lab_elapsed_ms(lab);
    for (int i = 0; !rc && i < n; i++) {
        char u[64];
        snprintf(u, sizeof u, "http://127.0.0.1:%d", client[i]);
        kc_config_t cfg = {.server = u, .timeout_ms = 1000, .user_agent = "kplane-lab"};
        kc_client_t *c = NULL;
        if ((rc = kc_client_new(&cfg, &c))) break;
        for (;;) {
            json_t *h = NULL;
            int hrc = kc_get_path(c, "/health", &h);
            const char *v = json_string_value(json_object_get(h, "health"));
            int ok = !hrc && v && !strcmp(v, "true");
            json_decref(h);
            if (ok) break;
            if (ended(lab, pids[i]) || lab_elapsed_ms(lab) - t0 > 30000) {
                char logname[32];
                snprintf(logname, sizeof logname, "etcd-%d", i);
                lab_say(lab, "etcd member %d is not healthy:", i);
                say_log_tail(lab, logname, 6);
                rc = KP_EUNAVAILABLE;
                break;
            }
            sleep_ms(50);
        }
        kc_client_free(c);
    }
    if (!rc)
        lab_say(lab, "etcd: %d member%s ready in %.0f ms (%s)", n, n == 1 ? "" : "s",
                lab_elapsed_ms(lab) - t0, store_url);
    return rc;
}

/* ---- kubectl ---- */

int lab_kubectl(lab_t *lab, const lab_server_t *s, int timeout_ms, char **output, double *took_ms,
                const char *const *args)
{
    if (output) *output = NULL;
    if (took_ms) *took_ms = 0;
    char bin[1024], cache[600];
    if (which("kubectl", bin, sizeof bin)) {
        lab_say(lab, "kubectl is not installed (on Debian: apt-get install kubernetes-client)");
        return KP_ENOTFOUND;
    }
    snprintf(cache, sizeof cache, "%s/kubectl-cache", lab->dir);
    const char *a[LAB_MAX_EXTRA + 8];
    int n = 0;
    a[n++] = bin;
    a[n++] = "--kubeconfig";
    a[n++] = s->kubeconfig;
    a[n++] = "--cache-dir";
    a[n++] = cache;
    for (int i = 0; args && args[i] && i < LAB_MAX_EXTRA; i++)
        a[n++] = args[i];
    a[n] = NULL;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) return KP_EIO;
    double t0 = lab_elapsed_ms(lab);
    pid_t pid;
    int rc = spawn_fd(lab, "kubectl", (char *const *)a, fds[1], &pid);
    close(fds[1]);
    if (rc) {
        close(fds[0]);
        return rc;
    }
    buf_t out;
    buf_init(&out, LAB_OUTPUT_MAX);
    int timed_out = 0;
    for (;;) {
        int left = timeout_ms - (int)(lab_elapsed_ms(lab) - t0);
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&pfd, 1, left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) continue;
        char chunk[4096];
        ssize_t got = read(fds[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        buf_append(&out, chunk, (size_t)got); /* past the cap: the rest is dropped */
    }
    close(fds[0]);
    if (timed_out) kill(-pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    mark_reaped(lab, pid);
    kill(-pid, SIGKILL);
    if (took_ms) *took_ms = lab_elapsed_ms(lab) - t0;
    if (output) {
        buf_append(&out, "", 0);
        size_t len;
        *output = buf_detach(&out, &len);
    }
    buf_free(&out);
    if (timed_out) return KP_ETIMEDOUT;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* ---- tables ---- */

static void table_free(lab_t *lab)
{
    free(lab->title);
    lab->title = NULL;
    for (size_t i = 0; i < lab->ncols; i++)
        free(lab->cols[i]);
    for (size_t i = 0; i < lab->nrows * lab->ncols; i++)
        free(lab->cells[i]);
    free(lab->cells);
    lab->cells = NULL;
    lab->ncols = lab->nrows = 0;
}

void lab_table(lab_t *lab, const char *title, const char *const *columns)
{
    table_free(lab);
    lab->title = strdup(title ? title : "");
    while (columns && columns[lab->ncols] && lab->ncols < LAB_MAX_COLS) {
        lab->cols[lab->ncols] = strdup(columns[lab->ncols]);
        lab->ncols++;
    }
    buf_t m;
    buf_init(&m, 1 << 16);
    lab__event_table(&m, lab->title, (const char *const *)lab->cols, lab->ncols);
    if (lab->events) emit(lab, &m, "", 0);
    buf_free(&m);
}

void lab_row(lab_t *lab, const char *const *cells)
{
    if (!lab->ncols || lab->nrows == LAB_MAX_ROWS) return;
    if (!lab->cells && !(lab->cells = calloc(LAB_MAX_ROWS * lab->ncols, sizeof(char *)))) return;
    char **row = lab->cells + lab->nrows * lab->ncols;
    for (size_t i = 0; i < lab->ncols; i++)
        row[i] = strdup(cells[i] ? cells[i] : "");
    lab->nrows++;
    buf_t m;
    buf_init(&m, 1 << 16);
    lab__event_row(&m, (const char *const *)row, lab->ncols);
    if (lab->events) emit(lab, &m, "", 0);
    buf_free(&m);
}

void lab_table_end(lab_t *lab)
{
    if (!lab->title) return;
    buf_t m, h;
    buf_init(&m, 1 << 16);
    buf_init(&h, 1 << 20);
    lab__event_end(&m, lab->title);
    buf_append(&h, "\n", 1);
    lab__table_text(&h, lab->title, (const char *const *)lab->cols, lab->ncols,
                    (const char *const *)lab->cells, lab->nrows);
    buf_append(&h, "\n", 1);
    emit(lab, &m, h.p ? h.p : "", h.len);
    buf_free(&m);
    buf_free(&h);
    table_free(lab);
}

/* ---- the run ---- */

const lab_def_t *lab_find(const char *name)
{
    for (size_t i = 0; lab_all[i]; i++)
        if (!strcmp(lab_all[i]->name, name)) return lab_all[i];
    return NULL;
}

/* The last lines of a run: the human one, then (events on) {"done":...},
 * the very last line of all. */
static void done_line(lab_t *lab, int ok, const char *error)
{
    buf_t m;
    buf_init(&m, 4096);
    lab__event_done(&m, ok, error);
    char human[2400];
    int n = ok ? snprintf(human, sizeof human, "lab %s: done in %.1f s\n", lab->def->name,
                          lab_elapsed_ms(lab) / 1e3)
               : snprintf(human, sizeof human, "lab %s: FAILED after %.1f s: %s\n", lab->def->name,
                          lab_elapsed_ms(lab) / 1e3, error ? error : "failed");
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof human) n = (int)sizeof human - 1;
    pthread_mutex_lock(&lab->mu);
    fwrite(human, 1, (size_t)n, stdout);
    if (lab->events && m.p) fwrite(m.p, 1, m.len, stdout);
    fflush(stdout);
    pthread_mutex_unlock(&lab->mu);
    buf_free(&m);
}

/* The files removed, or kept with --keep (said). */
static void leave_dir(lab_t *lab)
{
    if (lab->keep)
        lab_say(lab, "kept %s (every process's log, the stores)", lab->dir);
    else
        rmtree(lab->dir);
}

/* The signal thread (inv. 2): SIGINT or SIGTERM stop the run; SIGUSR2 with
 * finishing set ends the thread. */
static void *sig_main(void *arg)
{
    lab_t *lab = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR2);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig)) continue;
        pthread_mutex_lock(&lab->mu);
        int already = lab->finishing;
        if (!already && sig != SIGUSR2) lab->finishing = 1;
        pthread_mutex_unlock(&lab->mu);
        if (already && sig == SIGUSR2) return NULL;
        if (already || sig == SIGUSR2) continue;
        lab_say(lab, "%s: stopping every process the lab started",
                sig == SIGINT ? "SIGINT" : "SIGTERM");
        stop_all(lab);
        leave_dir(lab);
        done_line(lab, 0, sig == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)");
        _exit(EXIT_SIGNAL);
    }
}

static void usage(FILE *out)
{
    fputs("Usage: kplane lab list\n"
          "       kplane lab run NAME [--keep]\n"
          "\n"
          "The seed investigations' experiments, run for real on loopback: each lab\n"
          "starts the kplane processes it needs (servers, controller managers, etcd)\n"
          "in a temp dir of its own, drives them with real clients, and prints what\n"
          "it observed as the seed's own table, filled in.\n"
          "\n"
          "  list        every lab: name, investigation, what it shows\n"
          "  run NAME    run one; every process it started is stopped at the end,\n"
          "              also when it fails or gets SIGINT or SIGTERM (a SIGKILL\n"
          "              takes them down with it and leaves only its directory)\n"
          "  --keep      keep its directory (every process's log, the stores)\n"
          "\n"
          "KPLANE_LAB_EVENTS=1 adds a machine line, @lab <json>, before each line of\n"
          "output (narration, table, row, end of table, and done at the very end).\n"
          "Exit status: 0 when the lab ran, 1 when it failed (or needs what is not\n"
          "installed), 2 for a bad command line, 130 when interrupted.\n",
          out);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kplane: %s\nRun 'kplane lab --help' for usage.\n", msg);
    return EXIT_USAGE;
}

static int list(void)
{
    size_t w = 4;
    for (size_t i = 0; lab_all[i]; i++)
        if (strlen(lab_all[i]->name) > w) w = strlen(lab_all[i]->name);
    printf("%-*s  SEED  WHAT IT SHOWS\n", (int)w, "NAME");
    for (size_t i = 0; lab_all[i]; i++) {
        char needs[64] = "";
        if (lab_all[i]->needs) snprintf(needs, sizeof needs, " (needs %s)", lab_all[i]->needs);
        printf("%-*s  %-4s  %s%s\n", (int)w, lab_all[i]->name, lab_all[i]->seed, lab_all[i]->title,
               needs);
    }
    return EXIT_OK;
}

/* What a lab needs that is missing: said (with how to install it); 0: none. */
static int missing(const lab_def_t *def)
{
    if (!def->needs) return 0;
    char bin[1024];
    if (!strcmp(def->needs, "etcd") && etcd_binary(bin, sizeof bin)) {
        printf("lab %s needs etcd: etcd is not installed; on Debian: apt-get install etcd-server\n",
               def->name);
        if (getenv("KPLANE_LAB_EVENTS") && !strcmp(getenv("KPLANE_LAB_EVENTS"), "1"))
            printf("@lab {\"done\":0,\"error\":\"etcd is not installed\"}\n");
        return 1;
    }
    return 0;
}

int lab__run(const lab_def_t *def, int keep, const char *kplane)
{
    if (missing(def)) return EXIT_FAIL;
    lab_t *lab = calloc(1, sizeof *lab);
    if (!lab) return EXIT_FAIL;
    lab->def = def;
    lab->keep = keep;
    const char *ev = getenv("KPLANE_LAB_EVENTS");
    lab->events = ev && !strcmp(ev, "1");
    clock_gettime(CLOCK_MONOTONIC, &lab->t0);
    pthread_mutex_init(&lab->mu, NULL);
    ssize_t n = kplane ? (ssize_t)snprintf(lab->self, sizeof lab->self, "%s", kplane)
                       : readlink("/proc/self/exe", lab->self, sizeof lab->self - 1);
    if (n >= (ssize_t)sizeof lab->self) n = -1;
    const char *tmp = getenv("TMPDIR");
    int dn = snprintf(lab->dir, sizeof lab->dir, "%s/kplane-lab-%s-XXXXXX",
                      tmp && *tmp ? tmp : "/tmp", def->name);
    if (dn < 0 || (size_t)dn >= sizeof lab->dir) errno = ENAMETOOLONG;
    if (n <= 0 || dn < 0 || (size_t)dn >= sizeof lab->dir || !mkdtemp(lab->dir)) {
        fprintf(stderr, "kplane: lab %s: %s: %s\n", def->name, n <= 0 ? "/proc/self/exe" : lab->dir,
                strerror(errno));
        pthread_mutex_destroy(&lab->mu);
        free(lab);
        return EXIT_FAIL;
    }
    lab->self[n] = '\0';

    /* Before any thread: every thread inherits the mask (see the top). A
     * shell starts background jobs with SIGINT ignored, and an ignored
     * signal is never pending for sigwait: the default again. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    pthread_t sig_thread;
    if (pthread_create(&sig_thread, NULL, sig_main, lab)) {
        rmtree(lab->dir);
        pthread_mutex_destroy(&lab->mu);
        free(lab);
        return EXIT_FAIL;
    }

    lab_say(lab, "lab %s (investigation %s): %s", def->name, def->seed, def->title);
    lab_say(lab, "its directory: %s", lab->dir);
    int rc = def->run(lab);
    char reason[sizeof lab->last_say];
    pthread_mutex_lock(&lab->mu);
    snprintf(reason, sizeof reason, "%s", lab->last_say);
    int taken = lab->finishing;
    lab->finishing = 1;
    pthread_mutex_unlock(&lab->mu);
    if (taken) /* the signal thread is tearing down and will _exit */
        for (;;)
            pause();
    table_free(lab);
    stop_all(lab);
    for (int i = 0; i < lab->nclients; i++)
        kc_client_free(lab->clients[i]);
    for (int i = 0; i < lab->nservers; i++)
        srv_free(lab->servers[i]);
    leave_dir(lab);
    if (rc && !*reason) snprintf(reason, sizeof reason, "%s", err_str(rc));
    done_line(lab, !rc, rc ? reason : NULL);
    pthread_kill(sig_thread, SIGUSR2);
    pthread_join(sig_thread, NULL);
    pthread_mutex_destroy(&lab->mu);
    free(lab);
    return rc ? EXIT_FAIL : EXIT_OK;
}

int lab_main(int argc, char **argv)
{
    int keep = 0;
    const char *words[3] = {NULL};
    int nwords = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return EXIT_OK;
        }
        if (!strcmp(a, "--keep")) {
            keep = 1;
        } else if (a[0] == '-' && a[1]) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
            if (a[1] != '-') snprintf(name, sizeof name, "-%c", a[1]);
            return usage_error("unknown option %s", name);
        } else if (nwords < 3) {
            words[nwords++] = a;
        } else {
            return usage_error("unexpected argument '%s'", a);
        }
    }
    if (!nwords) return usage_error("%s", "lab needs a subcommand: list or run NAME");
    if (!strcmp(words[0], "list")) {
        if (nwords > 1) return usage_error("unexpected argument '%s'", words[1]);
        return list();
    }
    if (strcmp(words[0], "run")) return usage_error("unknown lab subcommand '%s'", words[0]);
    if (nwords != 2) return usage_error("%s", "run takes one lab: kplane lab run NAME");
    const lab_def_t *def = lab_find(words[1]);
    if (!def) return usage_error("unknown lab '%s' (kplane lab list)", words[1]);
    return lab__run(def, keep, NULL);
}
