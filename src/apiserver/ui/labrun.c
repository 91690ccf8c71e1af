/*
 * labrun.c -- one lab at a time as a child process (labrun.h).
 *
 * INVARIANTS
 *   1. At most one child: start() refuses (KP_EBUSY) while state is
 *      RUNNING, and state leaves RUNNING only once the reader thread has
 *      reaped the child (waitpid), so a pid is never signalled after it
 *      was reaped (it could be another process's by then).
 *   2. The output kept never passes cap: bytes beyond are read from the
 *      pipe (the child never blocks on a full pipe) and dropped, and
 *      `truncated` says so.
 *   3. free() returns only when the reader thread is joined: no child of
 *      the server is left running, nor a zombie; a run still going when
 *      free() is called loses its whole process group.
 *
 *   NONE --start()--> RUNNING --reader: child reaped--> EXITED --start()--> RUNNING
 *
 * The reader thread polls the pipe and the child: a grandchild that kept
 * the pipe open does not keep the run going once the child is reaped (its
 * remaining output is drained for a moment, then the pipe is closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apiserver/ui/labrun.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

extern char **environ;

#define EVENTS_ENV "KPLANE_LAB_EVENTS=1"
#define DRAIN_MS   1000 /* output still read after the child is reaped */

struct api_labrun {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* state left RUNNING */
    size_t cap;
    /* Guarded by mu: */
    api_labrun_state_t state;
    char name[API_LABRUN_NAME_MAX + 1];
    int exit_code;
    int truncated;
    int closing; /* free() began: no new run */
    pid_t pid;   /* the child until reaped, else 0 */
    pid_t pgid;  /* its process group (= its pid), kept after it is reaped */
    int64_t start_ns, end_ns;
    buf_t out;
    pthread_t reader;
    int joinable; /* a reader thread to join (the last run's) */
    int fd;       /* the pipe's read end (the reader's) */
};

int api_labrun_new(size_t cap, api_labrun_t **out)
{
    *out = NULL;
    api_labrun_t *lr = calloc(1, sizeof *lr);
    if (!lr) return KP_ENOMEM;
    lr->cap = cap ? cap : API_LABRUN_OUTPUT_MAX;
    lr->fd = -1;
    lr->exit_code = -1;
    buf_init(&lr->out, lr->cap);
    pthread_mutex_init(&lr->mu, NULL);
    if (clock_cond_init(&lr->cv)) {
        pthread_mutex_destroy(&lr->mu);
        free(lr);
        return KP_ENOMEM;
    }
    *out = lr;
    return 0;
}

/* Keep what fits of n bytes (invariant 2). Under mu. */
static void keep(api_labrun_t *lr, const char *p, size_t n)
{
    size_t room = lr->cap - lr->out.len;
    if (n > room) {
        lr->truncated = 1;
        n = room;
    }
    if (n && buf_append(&lr->out, p, n)) lr->truncated = 1; /* out of memory: dropped */
}

static void *reader(void *arg)
{
    api_labrun_t *lr = arg;
    log_thread_name("apiserver", "labrun");
    pthread_mutex_lock(&lr->mu);
    int fd = lr->fd;
    pid_t pid = lr->pid;
    pthread_mutex_unlock(&lr->mu);
    int status = 0, reaped = 0, eof = 0;
    int64_t reaped_at = 0;
    char chunk[8192];
    while (!(reaped && (eof || clock_mono_ns() - reaped_at > (int64_t)DRAIN_MS * 1000000))) {
        if (!eof) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int n = poll(&pfd, 1, 200);
            if (n > 0) {
                ssize_t got = read(fd, chunk, sizeof chunk);
                if (got > 0) {
                    pthread_mutex_lock(&lr->mu);
                    keep(lr, chunk, (size_t)got);
                    pthread_mutex_unlock(&lr->mu);
                } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                    eof = 1;
                }
            }
        } else if (!reaped) {
            usleep(50000);
        }
        if (!reaped) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid || (w < 0 && errno == ECHILD)) {
                reaped = 1;
                reaped_at = clock_mono_ns();
            }
        }
    }
    close(fd);
    pthread_mutex_lock(&lr->mu);
    lr->fd = -1;
    lr->exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                    : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                          : -1;
    lr->state = API_LABRUN_EXITED;
    lr->end_ns = clock_mono_ns();
    lr->pid = 0;
    pthread_cond_broadcast(&lr->cv);
    pthread_mutex_unlock(&lr->mu);
    return NULL;
}

/* The server's environment with EVENTS_ENV set: a new array of borrowed
 * strings (the caller frees the array), NULL when out of memory. */
static char **child_env(void)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "KPLANE_LAB_EVENTS=", 18)) env[k++] = environ[i];
    env[k++] = (char *)EVENTS_ENV;
    env[k] = NULL;
    return env;
}

/* Spawn argv with its output to the pipe's write end `wfd`. */
static int spawn(char *const argv[], int wfd, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa)) return KP_ENOMEM;
    if (posix_spawnattr_init(&at)) {
        posix_spawn_file_actions_destroy(&fa);
        return KP_ENOMEM;
    }
    char **env = child_env();
    sigset_t none, deflt;
    sigemptyset(&none);
    sigemptyset(&deflt);
    sigaddset(&deflt, SIGPIPE);
    sigaddset(&deflt, SIGINT);
    sigaddset(&deflt, SIGTERM);
    sigaddset(&deflt, SIGHUP);
    int rc = !env || posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) ||
                     posix_spawn_file_actions_adddup2(&fa, wfd, 1) ||
                     posix_spawn_file_actions_adddup2(&fa, wfd, 2) ||
                     posix_spawnattr_setpgroup(&at, 0) || posix_spawnattr_setsigmask(&at, &none) ||
                     posix_spawnattr_setsigdefault(&at, &deflt) ||
                     posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                       POSIX_SPAWN_SETSIGDEF)
                 ? KP_ENOMEM
                 : 0;
    if (!rc && posix_spawn(pid, argv[0], &fa, &at, argv, env)) rc = KP_EIO;
    free(env);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

int api_labrun_start(api_labrun_t *lr, const char *name, char *const argv[])
{
    if (!name || !*name || strlen(name) > API_LABRUN_NAME_MAX || !argv || !argv[0])
        return KP_EINVAL;
    pthread_mutex_lock(&lr->mu);
    int rc = lr->closing ? KP_ECLOSED : lr->state == API_LABRUN_RUNNING ? KP_EBUSY : 0;
    if (rc) {
        pthread_mutex_unlock(&lr->mu);
        return rc;
    }
    /* The last run's reader has ended (state EXITED): join it. */
    if (lr->joinable) {
        pthread_join(lr->reader, NULL);
        lr->joinable = 0;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC)) {
        pthread_mutex_unlock(&lr->mu);
        return KP_EIO;
    }
    pid_t pid;
    if ((rc = spawn(argv, p[1], &pid))) {
        close(p[0]);
        close(p[1]);
        pthread_mutex_unlock(&lr->mu);
        return rc;
    }
    close(p[1]);
    buf_reset(&lr->out);
    lr->truncated = 0;
    lr->exit_code = -1;
    memcpy(lr->name, name, strlen(name) + 1);
    lr->pid = lr->pgid = pid;
    lr->fd = p[0];
    lr->state = API_LABRUN_RUNNING;
    lr->start_ns = clock_mono_ns();
    lr->end_ns = 0;
    if (pthread_create(&lr->reader, NULL, reader, lr)) {
        /* No reader: end the child here (invariant 1 holds: not reaped yet). */
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(p[0]);
        lr->fd = -1;
        lr->pid = 0;
        lr->state = API_LABRUN_EXITED;
        lr->exit_code = 128 + SIGKILL;
        pthread_mutex_unlock(&lr->mu);
        return KP_ENOMEM;
    }
    lr->joinable = 1;
    pthread_mutex_unlock(&lr->mu);
    log_info("apiserver", "lab %s: started (pid %d)", name, (int)pid);
    return 0;
}

int api_labrun_read(api_labrun_t *lr, size_t offset, size_t max, char **data, size_t *len,
                    api_labrun_status_t *st)
{
    *data = NULL;
    *len = 0;
    pthread_mutex_lock(&lr->mu);
    memset(st, 0, sizeof *st);
    st->state = lr->state;
    memcpy(st->name, lr->name, sizeof st->name);
    st->exit_code = lr->state == API_LABRUN_EXITED ? lr->exit_code : -1;
    st->total = lr->out.len;
    st->truncated = lr->truncated;
    if (lr->state != API_LABRUN_NONE)
        st->seconds = (double)((lr->end_ns ? lr->end_ns : clock_mono_ns()) - lr->start_ns) / 1e9;
    int rc = 0;
    if (offset < lr->out.len) {
        size_t n = lr->out.len - offset;
        if (n > max) n = max;
        if ((*data = malloc(n + 1))) {
            memcpy(*data, lr->out.p + offset, n);
            (*data)[n] = '\0';
            *len = n;
        } else {
            rc = KP_ENOMEM;
        }
    }
    pthread_mutex_unlock(&lr->mu);
    return rc;
}

void api_labrun_free(api_labrun_t *lr)
{
    if (!lr) return;
    pthread_mutex_lock(&lr->mu);
    lr->closing = 1;
    if (lr->state == API_LABRUN_RUNNING) {
        /* Invariant 1: still RUNNING means not reaped, so the group is
         * ours: the lab and what it started get SIGTERM (the lab stops its
         * servers itself), and whatever is left of the group SIGKILL once
         * the lab ended or the grace passed. A group's ID is not reused
         * while a member lives. */
        log_info("apiserver", "lab %s: stopping it (the server stops)", lr->name);
        kill(-lr->pgid, SIGTERM);
        struct timespec until = clock_deadline_ms(API_LABRUN_GRACE_MS);
        while (lr->state == API_LABRUN_RUNNING)
            if (pthread_cond_timedwait(&lr->cv, &lr->mu, &until) == ETIMEDOUT) break;
        kill(-lr->pgid, SIGKILL);
    }
    int join = lr->joinable;
    lr->joinable = 0;
    pthread_mutex_unlock(&lr->mu);
    if (join) pthread_join(lr->reader, NULL);
    buf_free(&lr->out);
    pthread_cond_destroy(&lr->cv);
    pthread_mutex_destroy(&lr->mu);
    free(lr);
}
