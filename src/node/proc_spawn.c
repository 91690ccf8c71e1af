/*
 * proc_spawn.c -- starting processes, and the io thread that writes their
 * output to log files and reaps them.
 *
 * INVARIANT: every child the runtime starts is in the child list until it
 * has been reaped (waitpid) and its owner has released it, and no process
 * of its process group outlives its reaping: when the main process exits,
 * the rest of its group is SIGKILLed (as a container's processes die with
 * its PID 1), before waitpid, while the zombie still holds the group id.
 *
 * OWNS the child list (io_mu), each child's pipes and log descriptor, the
 * wake eventfd and the io thread.
 *
 * A child is started with fork + exec (the child only calls async-signal-
 * safe functions: setpgid, sigprocmask, sigaction, dup2, chdir, execvpe,
 * write, _exit): it runs in its own process group, with every signal
 * unblocked and at its default disposition (the server blocks SIGTERM and
 * ignores SIGPIPE, which exec would otherwise hand on), stdin /dev/null and
 * stdout/stderr on pipes. A close-on-exec pipe reports a failed chdir or
 * exec (its errno) to the parent, so that a missing executable is a start
 * error, not an exit.
 *
 * The io thread polls the wake eventfd, every child's pidfd (Linux >= 5.3;
 * without one, a child is checked with waitpid(WNOHANG) every poll round of
 * at most 200 ms) and its pipes. Output becomes CRI log records, one per
 * line: "<RFC 3339 time, 9 digits> <stdout|stderr> <F|P> <text>\n" (P: a
 * partial line, split at PROC_LINE_MAX or at the end of the output). When a
 * child exits: its group is killed, its pipes drained and closed, its log
 * marked ended, and its pod's key queued; an orphan is freed instead.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "node/proc_int.h"

#define IO_POLL_MS 200

static void wake(node_proc_t *p)
{
    uint64_t one = 1;
    if (p->wake_fd >= 0 && write(p->wake_fd, &one, sizeof one) < 0) { /* full: awake anyway */
    }
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    return -1;
#endif
}

/* In the child: never returns. */
static void child_main(int devnull, int out, int err, int report, const char *cwd,
                       char *const argv[], char *const envp[])
{
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP, RT gaps */
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) goto fail;
    if (cwd && chdir(cwd)) goto fail;
    execvpe(argv[0], argv, envp);
fail:;
    int e = errno;
    if (write(report, &e, sizeof e) < 0) { /* nothing more to do */
    }
    _exit(127);
}

int proc__spawn(node_proc_t *p, const char *key, char *const argv[], char *const envp[],
                const char *cwd, proc_log_t *log, proc_child_t **out, int *err)
{
    *out = NULL;
    *err = 0;
    proc_child_t *c = calloc(1, sizeof *c);
    if (!c) return KP_ENOMEM;
    c->fds[0] = c->fds[1] = c->log_fd = c->pidfd = -1;
    snprintf(c->key, sizeof c->key, "%s", key);
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, rep[2] = {-1, -1};
    int rc = KP_EIO;
    if (log) {
        c->log_fd = open(log->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (c->log_fd < 0) {
            *err = errno;
            goto fail;
        }
    }
    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)) goto fail;
    pid_t pid = fork();
    if (pid < 0) goto fail;
    if (pid == 0) child_main(p->devnull, po[1], pe[1], rep[1], cwd, argv, envp);
    setpgid(pid, pid); /* also here: no window where a signal to the group misses it */
    close(po[1]);
    close(pe[1]);
    close(rep[1]);
    po[1] = pe[1] = rep[1] = -1;
    int e = 0;
    ssize_t n;
    do
        n = read(rep[0], &e, sizeof e);
    while (n < 0 && errno == EINTR);
    close(rep[0]);
    rep[0] = -1;
    if (n == (ssize_t)sizeof e) {
        /* chdir or exec failed: the child exits at once. */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        *err = e;
        rc = KP_EINVAL;
        goto fail;
    }
    c->pid = pid;
    c->pidfd = pidfd_open_(pid);
    c->fds[0] = po[0];
    c->fds[1] = pe[0];
    fcntl(po[0], F_SETFL, O_NONBLOCK);
    fcntl(pe[0], F_SETFL, O_NONBLOCK);
    c->log = proc__log_ref(log);
    pthread_mutex_lock(&p->io_mu);
    c->next = p->children;
    p->children = c;
    pthread_mutex_unlock(&p->io_mu);
    wake(p);
    *out = c;
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0) close(po[i]);
        if (pe[i] >= 0) close(pe[i]);
        if (rep[i] >= 0) close(rep[i]);
    }
    if (c->log_fd >= 0) close(c->log_fd);
    free(c);
    return rc;
}

int proc__child_exited(node_proc_t *p, proc_child_t *c, int *status)
{
    pthread_mutex_lock(&p->io_mu);
    int done = c->exited;
    if (done) *status = c->status;
    pthread_mutex_unlock(&p->io_mu);
    return done;
}

void proc__child_signal(node_proc_t *p, proc_child_t *c, int sig)
{
    pthread_mutex_lock(&p->io_mu);
    if (!c->exited) kill(-c->pid, sig);
    pthread_mutex_unlock(&p->io_mu);
}

static void child_free(proc_child_t *c)
{
    for (int i = 0; i < 2; i++)
        if (c->fds[i] >= 0) close(c->fds[i]);
    if (c->pidfd >= 0) close(c->pidfd);
    if (c->log_fd >= 0) close(c->log_fd);
    proc__log_unref(c->log);
    free(c);
}

static void unlink_child(node_proc_t *p, proc_child_t *c)
{
    proc_child_t **q = &p->children;
    while (*q && *q != c)
        q = &(*q)->next;
    if (*q) *q = c->next;
}

void proc__child_release(node_proc_t *p, proc_child_t *c, int kill_it)
{
    if (!c) return;
    pthread_mutex_lock(&p->io_mu);
    if (c->exited) {
        unlink_child(p, c);
        child_free(c);
    } else {
        if (kill_it) kill(-c->pid, SIGKILL);
        c->orphan = 1;
    }
    pthread_mutex_unlock(&p->io_mu);
}

/* ---- output ---- */

static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* a full disk loses log lines, nothing else */
        s += w;
        n -= (size_t)w;
    }
}

static void record(proc_child_t *c, int stream, const char *text, size_t n, int partial)
{
    if (c->log_fd < 0) {
        size_t room = sizeof c->out - 1 - c->out_len;
        if (n > room) n = room;
        memcpy(c->out + c->out_len, text, n);
        c->out_len += n;
        c->out[c->out_len] = '\0';
        if (!partial && c->out_len < sizeof c->out - 1) c->out[c->out_len++] = '\n';
        c->out[c->out_len] = '\0';
        return;
    }
    char head[64];
    proc__time_nano(head, sizeof head - 16, clock_wall_ns());
    size_t hl = strlen(head);
    hl += (size_t)snprintf(head + hl, sizeof head - hl, " %s %c ", stream ? "stderr" : "stdout",
                           partial ? 'P' : 'F');
    /* One write per record, so a reader never sees half a header. */
    char *rec = malloc(hl + n + 1);
    if (!rec) return;
    memcpy(rec, head, hl);
    memcpy(rec + hl, text, n);
    rec[hl + n] = '\n';
    write_all(c->log_fd, rec, hl + n + 1);
    free(rec);
}

/* Append n bytes of stream's output; complete lines become records. */
static void feed(proc_child_t *c, int stream, const char *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (d[i] == '\n') {
            record(c, stream, c->line[stream], c->line_len[stream], 0);
            c->line_len[stream] = 0;
            continue;
        }
        c->line[stream][c->line_len[stream]++] = d[i];
        if (c->line_len[stream] == PROC_LINE_MAX) {
            record(c, stream, c->line[stream], c->line_len[stream], 1);
            c->line_len[stream] = 0;
        }
    }
}

/* Read what stream has; at EOF (or an error) close it, flushing a partial
 * line. Returns 1 when data was read. */
static int drain(proc_child_t *c, int stream)
{
    char buf[8192];
    int got = 0;
    while (c->fds[stream] >= 0) {
        ssize_t n = read(c->fds[stream], buf, sizeof buf);
        if (n > 0) {
            feed(c, stream, buf, (size_t)n);
            got = 1;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        close(c->fds[stream]);
        c->fds[stream] = -1;
        if (c->line_len[stream]) record(c, stream, c->line[stream], c->line_len[stream], 1);
        c->line_len[stream] = 0;
    }
    return got;
}

/* c's process exited (status st): finish it. Called with io_mu held. */
static void finish(node_proc_t *p, proc_child_t *c, int st)
{
    for (int i = 0; i < 2; i++) {
        drain(c, i);
        if (c->fds[i] >= 0) { /* a grandchild still holds the pipe: stop here */
            close(c->fds[i]);
            c->fds[i] = -1;
            if (c->line_len[i]) record(c, i, c->line[i], c->line_len[i], 1);
            c->line_len[i] = 0;
        }
    }
    if (c->log_fd >= 0) {
        close(c->log_fd);
        c->log_fd = -1;
    }
    if (c->log) atomic_store(&c->log->ended, 1);
    if (c->pidfd >= 0) {
        close(c->pidfd);
        c->pidfd = -1;
    }
    c->exited = 1;
    c->status = st;
    c->exit_wall = clock_wall_ns();
    if (c->orphan) {
        unlink_child(p, c);
        child_free(c);
        return;
    }
    if (c->log) atomic_fetch_add(&p->exits, 1);
    int rc = p->sim->queue ? kc_queue_add(p->sim->queue, c->key) : 0;
    if (rc && rc != KP_ECLOSED) log_warn(PROC_COMPONENT, "queue %s: %s", c->key, err_str(rc));
}

/* Reap c if it has exited. Called with io_mu held. */
static void try_reap(node_proc_t *p, proc_child_t *c)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    /* Peek first (WNOWAIT): the zombie keeps its pid, so the group id cannot
     * have been reused when the rest of the group is killed. */
    if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) || si.si_pid != c->pid)
        return;
    kill(-c->pid, SIGKILL);
    int st = 0;
    if (waitpid(c->pid, &st, 0) != c->pid) st = 0;
    finish(p, c, st);
}

typedef struct slot {
    proc_child_t *c;
    int what; /* 0, 1: a pipe; 2: the pidfd */
} slot_t;

static void *io_main(void *arg)
{
    node_proc_t *p = arg;
    size_t cap = 0;
    struct pollfd *pf = NULL;
    slot_t *sl = NULL;
    while (!atomic_load(&p->stopping)) {
        pthread_mutex_lock(&p->io_mu);
        size_t n = 1, want = 1;
        for (proc_child_t *c = p->children; c; c = c->next)
            want += 3;
        if (want > cap) {
            struct pollfd *npf = realloc(pf, want * sizeof *pf);
            if (npf) pf = npf;
            slot_t *nsl = realloc(sl, want * sizeof *sl);
            if (nsl) sl = nsl;
            if (npf && nsl) cap = want;
        }
        pf[0] = (struct pollfd){.fd = p->wake_fd, .events = POLLIN};
        for (proc_child_t *c = p->children; c && n + 3 <= cap; c = c->next) {
            if (c->exited) continue;
            for (int i = 0; i < 2; i++) {
                if (c->fds[i] < 0) continue;
                pf[n] = (struct pollfd){.fd = c->fds[i], .events = POLLIN};
                sl[n++] = (slot_t){c, i};
            }
            if (c->pidfd >= 0) {
                pf[n] = (struct pollfd){.fd = c->pidfd, .events = POLLIN};
                sl[n++] = (slot_t){c, 2};
            }
        }
        pthread_mutex_unlock(&p->io_mu);
        int r = poll(pf, (nfds_t)n, IO_POLL_MS);
        if (r < 0 && errno != EINTR) break;
        if (pf[0].revents & POLLIN) {
            uint64_t v;
            if (read(p->wake_fd, &v, sizeof v) < 0) { /* spurious */
            }
        }
        pthread_mutex_lock(&p->io_mu);
        /* Children in the slots cannot have been freed meanwhile: only an
         * exited child is freed by others, and only this thread marks one
         * exited. */
        for (size_t i = 1; r > 0 && i < n; i++) {
            if (!pf[i].revents || sl[i].c->exited) continue;
            if (sl[i].what < 2) drain(sl[i].c, sl[i].what);
        }
        for (size_t i = 1; r > 0 && i < n; i++)
            if (pf[i].revents && sl[i].what == 2 && !sl[i].c->exited) try_reap(p, sl[i].c);
        /* Without pidfds, and as a safety net: check every child. */
        for (proc_child_t *c = p->children, *next; c; c = next) {
            next = c->next;
            if (!c->exited) try_reap(p, c);
        }
        pthread_mutex_unlock(&p->io_mu);
    }
    free(pf);
    free(sl);
    return NULL;
}

int proc__io_start(node_proc_t *p)
{
    if (p->devnull < 0 && (p->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) return KP_EIO;
    if (p->wake_fd < 0 && (p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) return KP_EIO;
    if (pthread_create(&p->io, NULL, io_main, p)) return KP_ENOMEM;
    p->io_running = 1;
    return 0;
}

void proc__io_stop(node_proc_t *p, int grace_ms)
{
    atomic_store(&p->stopping, 1);
    wake(p);
    if (p->io_running) {
        pthread_join(p->io, NULL);
        p->io_running = 0;
    }
    /* Stop every process still running: TERM, then KILL after grace. */
    pthread_mutex_lock(&p->io_mu);
    int alive = 0;
    for (proc_child_t *c = p->children; c; c = c->next)
        if (!c->exited) {
            kill(-c->pid, grace_ms > 0 ? SIGTERM : SIGKILL);
            alive = 1;
        }
    pthread_mutex_unlock(&p->io_mu);
    int64_t deadline = clock_mono_ns() + (int64_t)grace_ms * 1000000;
    while (alive) {
        alive = 0;
        pthread_mutex_lock(&p->io_mu);
        int late = clock_mono_ns() >= deadline;
        for (proc_child_t *c = p->children; c; c = c->next) {
            if (c->exited) continue;
            for (int i = 0; i < 2; i++)
                drain(c, i);
            try_reap(p, c);
            if (c->exited) continue;
            if (late) kill(-c->pid, SIGKILL);
            alive = 1;
        }
        pthread_mutex_unlock(&p->io_mu);
        if (alive) usleep(20000);
    }
    /* Everything has exited now: free what nobody will release. The pods'
     * entries still point at theirs; proc__pod_free releases them later,
     * so only orphans go here (finish freed those already). */
}
