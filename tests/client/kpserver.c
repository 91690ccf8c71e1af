/*
 * kpserver.c -- start and stop a real kplane server for the SDK tests.
 */
#include "kpserver.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/err.h"
#include "testutil.h"

#ifndef KPLANE_BIN
#error "KPLANE_BIN must name the kplane binary"
#endif

static void start_in(kpserver_t *s, const char *const *extra);

void kpserver_start(kpserver_t *s, const char *const *extra)
{
    memset(s, 0, sizeof *s);
    s->dir = tu_tmpdir("kpserver");
    start_in(s, extra);
}

void kpserver_start_sharing(kpserver_t *s, const kpserver_t *peer, const char *const *extra)
{
    memset(s, 0, sizeof *s);
    s->dir = tu_tmpdir("kpserver");
    char data[600];
    snprintf(data, sizeof data, "%s/data", s->dir);
    if (mkdir(data, 0700)) abort();
    static const char *const files[] = {"ca.crt", "server.crt", "server.key", "admin-token"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char from[700], to[700], buf[8192];
        snprintf(from, sizeof from, "%s/data/%s", peer->dir, files[i]);
        snprintf(to, sizeof to, "%s/%s", data, files[i]);
        FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
        if (!in || !out) {
            fprintf(stderr, "kpserver: copying %s: cannot open\n", from);
            abort();
        }
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0)
            if (fwrite(buf, 1, n, out) != n) abort();
        fclose(in);
        if (fclose(out)) abort();
        chmod(to, 0600);
    }
    start_in(s, extra);
}

static void start_in(kpserver_t *s, const char *const *extra)
{
    char out[600], log[600], data[600];
    snprintf(out, sizeof out, "%s/server.out", s->dir);
    snprintf(log, sizeof log, "%s/server.log", s->dir);
    snprintf(data, sizeof data, "%s/data", s->dir);
    const char *bin = getenv("KP_KPLANE_BIN"); /* another build's (scripts/bench-compare) */
    if (!bin || !*bin) bin = KPLANE_BIN;
    const char *argv[32] = {bin, "server", "--data-dir", data, "--listen", "127.0.0.1:0"};
    int argc = 6;
    for (int i = 0; extra && extra[i] && argc < 31; i++) argv[argc++] = extra[i];
    argv[argc] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) abort();
    if (pid == 0) {
        /* Never outlive the test (a crash or an abort() ends it before
         * kpserver_stop): a server left behind burned 40% of a core under
         * every later benchmark. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent) _exit(127);
        if (!freopen(out, "w", stdout) || !freopen(log, "a", stderr)) _exit(127);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    s->pid = pid;
    /* Up to 30 s: an ASan server started beside a busy suite took over 10 s
     * to open its store and report its port; a server that exits ends the
     * wait at once. */
    for (int i = 0; i < 1200 && !s->port; i++) {
        FILE *f = fopen(out, "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "https://127.0.0.1:");
            if (p) s->port = (int)strtol(p + 18, NULL, 10);
        }
        if (f) fclose(f);
        if (!s->port) {
            int st;
            if (waitpid(pid, &st, WNOHANG) == pid) {
                fprintf(stderr, "kpserver: the server exited (see %s)\n", log);
                abort();
            }
            tu_sleep_ms(25);
        }
    }
    if (!s->port) {
        fprintf(stderr, "kpserver: no port reported (see %s)\n", log);
        kill(pid, SIGKILL);
        abort();
    }
    snprintf(s->kubeconfig, sizeof s->kubeconfig, "%s/kubeconfig", data);
}

void kpserver_kill(kpserver_t *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
    }
    s->pid = 0;
}

/* ThreadSanitizer's exit status when it reported a race (`make tsan`). */
#define KPSERVER_TSAN_EXIT 66

void kpserver_stop(kpserver_t *s)
{
    int st = 0, done = 0;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        for (int i = 0; i < 400 && !done; i++) {
            if (waitpid(s->pid, &st, WNOHANG) == s->pid) done = 1;
            else tu_sleep_ms(25);
        }
        if (!done) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
        }
    }
    s->pid = 0;
    /* A race in the server fails the test that started it: its log (with
     * TSan's reports) goes to the test's output before the dir goes. */
    if (done && WIFEXITED(st) && WEXITSTATUS(st) == KPSERVER_TSAN_EXIT) {
        char log[600];
        snprintf(log, sizeof log, "%s/server.log", s->dir);
        FILE *f = fopen(log, "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f))
            fputs(line, stderr);
        if (f) fclose(f);
        fprintf(stderr, "kpserver: ThreadSanitizer reported races in the server (above)\n");
        abort();
    }
    /* A server that died on its own (ASan, an abort) leaves its story in
     * its log: the end of it goes to the test's output before the dir goes. */
    if (done && ((WIFEXITED(st) && WEXITSTATUS(st) && WEXITSTATUS(st) != KPSERVER_TSAN_EXIT) ||
                 (WIFSIGNALED(st) && WTERMSIG(st) != SIGTERM))) {
        char log[600], cmd[700];
        snprintf(log, sizeof log, "%s/server.log", s->dir);
        snprintf(cmd, sizeof cmd, "tail -n 80 '%s' >&2", log);
        fprintf(stderr, "kpserver: the server ended abnormally; the end of its log:\n");
        if (system(cmd)) fprintf(stderr, "kpserver: (could not show %s)\n", log);
    }
    tu_rmtree(s->dir);
    free(s->dir);
    s->dir = NULL;
}

int kpserver_client(const kpserver_t *s, kc_config_t *cfg, json_t **storage, kc_client_t **c)
{
    kc_config_t local;
    if (!cfg) cfg = &local;
    *c = NULL;
    char err[256];
    int rc = kc_config_load(s->kubeconfig, cfg, storage, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kubeconfig %s: %s\n", s->kubeconfig, err);
        return rc;
    }
    if ((rc = kc_client_new(cfg, c))) {
        fprintf(stderr, "kc_client_new: %s\n", err_str(rc));
        json_decref(*storage);
        *storage = NULL;
    }
    return rc;
}
