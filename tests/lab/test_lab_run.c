/*
 * test_lab_run.c -- src/lab/lab.c's run, with labs of the test's own
 * against the kplane binary the build made (KPLANE_BIN): servers started,
 * killed and restarted on the same port, components frozen and stopped,
 * kubectl, etcd members (skipped without etcd), a peer API server of the
 * same cluster; and after each run, whether it ended well or failed, no
 * process it started is left and its directory is gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/lab_int.h"
#include "lib/err.h"

#ifndef KPLANE_BIN
#error "KPLANE_BIN must name the kplane binary"
#endif

/* What a test lab saw, for the checks after its run (test state only). */
static struct {
    char dir[512];
    pid_t pids[8];
    int npids;
    int port_before, port_after;
    int ok;
} seen;

static void remember(pid_t pid)
{
    if (seen.npids < 8) seen.pids[seen.npids++] = pid;
}

/* Is pid gone (no such process; a zombie of ours would still answer)? */
static int gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

static void check_nothing_left(void)
{
    assert_true(seen.dir[0] != '\0');
    assert_int_equal(access(seen.dir, F_OK), -1);
    for (int i = 0; i < seen.npids; i++)
        assert_true(gone(seen.pids[i]));
}

static char *const sleeper[] = {"/bin/sleep", "300", NULL};

/* A server (API only) killed and restarted on its port, a scheduler frozen,
 * thawed and stopped, kubectl, a process left running, a table. */
static int lab_framework(lab_t *lab)
{
    snprintf(seen.dir, sizeof seen.dir, "%s", lab_dir(lab));
    lab_server_opts_t o = {.name = "api", .nodes = -1, .no_controllers = 1, .no_scheduler = 1};
    lab_server_t *s;
    int rc = lab_server_start(lab, &o, &s);
    if (rc) return rc;
    remember(s->pid);
    seen.port_before = s->port;
    pid_t sched;
    if ((rc = lab_component_start(lab, "sched", "scheduler", s, NULL, NULL, &sched))) return rc;
    remember(sched);
    if ((rc = lab_signal(lab, sched, SIGSTOP)) || (rc = lab_signal(lab, sched, SIGCONT)) ||
        (rc = lab_signal(lab, sched, SIGTERM)))
        return rc;
    if (!gone(sched) || lab_signal(lab, sched, SIGTERM) != KP_ENOTFOUND) return KP_EINVAL;

    char *out = NULL;
    double ms = 0;
    const char *args[] = {"get", "namespaces", "-o", "name", NULL};
    rc = lab_kubectl(lab, s, 30000, &out, &ms, args);
    int kubectl_ok = rc == KP_ENOTFOUND || (rc == 0 && out && strstr(out, "namespace/default"));
    free(out);
    if (!kubectl_ok) return KP_EINVAL;

    if ((rc = lab_server_kill9(lab, s)) || (rc = lab_server_restart(lab, s))) return rc;
    remember(s->pid);
    seen.port_after = s->port;
    json_t *v = NULL;
    if ((rc = kc_get_path(s->client, "/version", &v))) return rc;
    json_decref(v);

    /* More processes than the table has entries, each ending on its own:
     * entries are reused. */
    static char *const truth[] = {"/bin/true", NULL};
    pid_t p;
    for (int i = 0; i < 100; i++) {
        if ((rc = lab_spawn(lab, "true", truth, &p))) return rc;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    if ((rc = lab_spawn(lab, "sleeper", sleeper, &p))) return rc;
    remember(p);
    lab_table(lab, "T", (const char *const[]){"a", "b", NULL});
    lab_row(lab, (const char *const[]){"1", "2"});
    lab_table_end(lab);
    seen.ok = 1;
    return 0;
}

static const lab_def_t framework = {
    .name = "framework", .seed = "000", .title = "t", .run = lab_framework};

static void test_framework(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    assert_int_equal(lab__run(&framework, 0, KPLANE_BIN), 0);
    assert_true(seen.ok);
    assert_int_equal(seen.port_after, seen.port_before);
    check_nothing_left();
}

/* A lab that fails with processes running: they are stopped all the same. */
static int lab_failing(lab_t *lab)
{
    snprintf(seen.dir, sizeof seen.dir, "%s", lab_dir(lab));
    pid_t p;
    for (int i = 0; i < 3; i++) {
        int rc = lab_spawn(lab, "sleeper", sleeper, &p);
        if (rc) return rc;
        remember(p);
    }
    lab_say(lab, "failing on purpose");
    return KP_EIO;
}

static const lab_def_t failing = {
    .name = "failing", .seed = "000", .title = "t", .run = lab_failing};

static void test_failing(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    assert_int_equal(lab__run(&failing, 0, KPLANE_BIN), 1);
    assert_int_equal(seen.npids, 3);
    check_nothing_left();
}

/* Three etcd members, an API server on them, a second one of the same
 * cluster (peer), a scheduler through the second with the first's
 * kubeconfig. */
static int lab_etcd(lab_t *lab)
{
    snprintf(seen.dir, sizeof seen.dir, "%s", lab_dir(lab));
    char url[256];
    pid_t etcd[3];
    int rc = lab_etcd_start(lab, 3, url, sizeof url, etcd);
    if (rc) return rc;
    for (int i = 0; i < 3; i++)
        remember(etcd[i]);
    if (strncmp(url, "etcd://127.0.0.1:", 17)) return KP_EINVAL;
    lab_server_opts_t o1 = {.name = "api-1", .apiserver_only = 1, .store = url};
    lab_server_t *a, *b;
    if ((rc = lab_server_start(lab, &o1, &a))) return rc;
    remember(a->pid);
    lab_server_opts_t o2 = {.name = "api-2", .apiserver_only = 1, .store = url, .peer = a};
    if ((rc = lab_server_start(lab, &o2, &b))) return rc;
    remember(b->pid);
    kc_client_t *via = lab_client_via(lab, a, b->url);
    json_t *ns = NULL;
    if (!via || (rc = kc_get(via, &kc_namespaces, NULL, "default", &ns)))
        return rc ? rc : KP_ENOMEM;
    json_decref(ns);
    pid_t sched;
    if ((rc = lab_component_start(lab, "sched", "scheduler", a, b->url, NULL, &sched))) return rc;
    remember(sched);
    seen.ok = 1;
    return 0;
}

static const lab_def_t etcd = {
    .name = "etcd", .seed = "000", .title = "t", .needs = "etcd", .run = lab_etcd};

static void test_etcd(void **state)
{
    (void)state;
    if (access("/usr/bin/etcd", X_OK) && !getenv("KP_ETCD_BIN")) skip();
    memset(&seen, 0, sizeof seen);
    assert_int_equal(lab__run(&etcd, 0, KPLANE_BIN), 0);
    assert_true(seen.ok);
    check_nothing_left();
}

/* A lab that needs etcd, without etcd: it says how to install it and does
 * not run (no directory, no process). */
static void test_needs_missing(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    const char *path = getenv("PATH"), *bin = getenv("KP_ETCD_BIN");
    char *keep_path = path ? strdup(path) : NULL, *keep_bin = bin ? strdup(bin) : NULL;
    setenv("PATH", "/nonexistent", 1);
    unsetenv("KP_ETCD_BIN");
    int rc = lab__run(&etcd, 0, KPLANE_BIN);
    if (keep_path) setenv("PATH", keep_path, 1);
    if (keep_bin) setenv("KP_ETCD_BIN", keep_bin, 1);
    free(keep_path);
    free(keep_bin);
    assert_int_equal(rc, 1);
    assert_false(seen.ok);
    assert_int_equal(seen.dir[0], '\0');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_framework),
        cmocka_unit_test(test_failing),
        cmocka_unit_test(test_etcd),
        cmocka_unit_test(test_needs_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
