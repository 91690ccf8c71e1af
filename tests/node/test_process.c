/*
 * test_process.c -- the process runtime (node_proc_*) against a real kplane
 * server (no simulated nodes).
 *
 * What it proves: the back-off arithmetic is Kubernetes' (0, 10 s doubling
 * to 5 min, scaled); bad configurations are refused; a pod bound to the
 * node runs its command with its env, its stdout and stderr land in the CRI
 * log file and come back from the log server (which wants the token), and
 * its exit code and reason are reported (Failed, Error, 7); an OnFailure pod
 * that keeps failing is restarted with restartCount rising and its last
 * termination reported; deleting a pod that ignores SIGTERM takes its grace
 * period (then SIGKILL) and one that exits on SIGTERM goes at once; no
 * process is left under the node's data dir when the node stops; init
 * containers run one by one before the containers, and one failing with
 * restartPolicy Never fails the pod.
 *
 * How: one server for the file (kpserver.c, --nodes 0); each test runs its
 * own node (own name, own data dir) and creates pods already bound to it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/sdk.h"
#include "kpserver.h"
#include "lib/err.h"
#include "node/node.h"
#include "testutil.h"

#define WAIT_MS 30000
#define NS      "default"

typedef struct env {
    kpserver_t srv;
    json_t *storage;
    kc_client_t *c;
    kc_config_t cfg;
    char token[128]; /* DIR/admin-token: the kubeconfig's user is a client certificate */
} env_t;

static env_t E;
static node_proc_t *cur;
static char cur_dir[256];

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **state)
{
    (void)state;
    const char *extra[] = {"--nodes", "0", NULL};
    kpserver_start(&E.srv, extra);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (kpserver_client(&E.srv, &E.cfg, &E.storage, &E.c)) return -1;
    /* The log server checks the API server's admin token. */
    char path[700];
    snprintf(path, sizeof path, "%s/data/admin-token", E.srv.dir);
    FILE *f = fopen(path, "r");
    int ok = f && fgets(E.token, sizeof E.token, f);
    if (f) fclose(f);
    if (!ok) return -1;
    E.token[strcspn(E.token, "\r\n")] = '\0';
    E.cfg.token = E.token;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kc_client_free(E.c);
    json_decref(E.storage);
    kpserver_stop(&E.srv);
    curl_global_cleanup();
    return 0;
}

/* ---- helpers ---- */

static const json_t *at(const json_t *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *p = strtok_r(buf, ".", &save); p && o; p = strtok_r(NULL, ".", &save)) {
        if (json_is_array(o))
            o = json_array_get(o, strtoul(p, NULL, 10));
        else
            o = json_object_get(o, p);
    }
    return o;
}

static const char *str_at(const json_t *o, const char *path)
{
    return json_string_value(at(o, path));
}

/* Processes whose working directory is under dir. */
static int procs_under(const char *dir)
{
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    size_t len = strlen(dir);
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char link[300], target[1024];
        snprintf(link, sizeof link, "/proc/%s/cwd", e->d_name);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k <= 0) continue;
        target[k] = '\0';
        if (!strncmp(target, dir, len)) n++;
    }
    closedir(d);
    return n;
}

static node_proc_t *node_start(const char *name, double scale)
{
    snprintf(cur_dir, sizeof cur_dir, "/tmp/kp-test-process-XXXXXX");
    assert_non_null(mkdtemp(cur_dir));
    node_proc_config_t cfg;
    node_proc_config_default(&cfg);
    cfg.name = name;
    cfg.data_dir = cur_dir;
    cfg.token = E.cfg.token;
    cfg.backoff_scale = scale;
    node_proc_t *p = NULL;
    assert_int_equal(node_proc_new(E.c, &cfg, &p), 0);
    assert_int_equal(node_proc_start(p), 0);
    assert_true(node_proc_port(p) > 0);
    cur = p;
    return p;
}

static int node_free(void **state)
{
    (void)state;
    node_proc_free(cur);
    cur = NULL;
    if (cur_dir[0]) {
        assert_int_equal(procs_under(cur_dir), 0); /* nothing outlives the node */
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", cur_dir);
        if (system(cmd)) {
        }
        cur_dir[0] = '\0';
    }
    return 0;
}

/* Create a pod bound to node from a JSON text (printf-style). */
static void create_pod(const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_error_t jerr;
    json_t *pod = json_loads(text, 0, &jerr);
    if (!pod) fail_msg("bad pod JSON: %s", jerr.text);
    assert_int_equal(kc_create(E.c, &kc_pods, NS, pod, NULL, NULL), 0);
    json_decref(pod);
}

typedef int (*pod_pred_t)(const json_t *pod, void *arg);

/* Poll pod `name` until pred holds; the pod (caller decrefs), or fail. */
static json_t *wait_pod(const char *name, pod_pred_t pred, void *arg, const char *what)
{
    int64_t end = now_ms() + WAIT_MS;
    json_t *pod = NULL;
    while (now_ms() < end) {
        json_decref(pod);
        pod = NULL;
        if (!kc_get(E.c, &kc_pods, NS, name, &pod) && pred(pod, arg)) return pod;
        tu_sleep_ms(50);
    }
    char *dump = pod ? json_dumps(at(pod, "status"), JSON_COMPACT) : NULL;
    fail_msg("pod %s: timed out waiting for %s; status: %s", name, what, dump ? dump : "(none)");
    return NULL;
}

static int phase_is(const json_t *pod, void *arg)
{
    const char *p = str_at(pod, "status.phase");
    return p && !strcmp(p, arg);
}

static int restarts_at_least(const json_t *pod, void *arg)
{
    return json_integer_value(at(pod, "status.containerStatuses.0.restartCount")) >= *(int *)arg;
}

static int wait_gone(const char *name)
{
    int64_t start = now_ms(), end = start + WAIT_MS;
    while (now_ms() < end) {
        json_t *pod = NULL;
        int rc = kc_get(E.c, &kc_pods, NS, name, &pod);
        json_decref(pod);
        if (rc == KP_ENOTFOUND) return (int)(now_ms() - start);
        tu_sleep_ms(20);
    }
    fail_msg("pod %s: not gone", name);
    return -1;
}

static size_t on_body(char *ptr, size_t size, size_t n, void *ud)
{
    strncat(ud, ptr, size * n < 4000 - strlen(ud) ? size * n : 4000 - strlen(ud));
    return size * n;
}

/* GET path from the node's log server; the HTTP code, body into out. */
static long node_get(node_proc_t *p, const char *path, const char *token, char out[4096])
{
    char url[512], auth[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", node_proc_port(p), path);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token ? token : "");
    out[0] = '\0';
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, auth);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
    long code = 0;
    if (curl_easy_perform(e) == CURLE_OK) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(e);
    curl_slist_free_all(h);
    return code;
}

/* ---- tests ---- */

static void test_backoff(void **state)
{
    (void)state;
    assert_int_equal(node_proc_backoff_ms(0, 1.0), 0);
    assert_int_equal(node_proc_backoff_ms(1, 1.0), 10000);
    assert_int_equal(node_proc_backoff_ms(2, 1.0), 20000);
    assert_int_equal(node_proc_backoff_ms(3, 1.0), 40000);
    assert_int_equal(node_proc_backoff_ms(5, 1.0), 160000);
    assert_int_equal(node_proc_backoff_ms(6, 1.0), 300000); /* 320 s, capped */
    assert_int_equal(node_proc_backoff_ms(100, 1.0), 300000);
    assert_int_equal(node_proc_backoff_ms(1, 0.01), 100);
    assert_int_equal(node_proc_backoff_ms(3, 0.5), 20000);
}

static void test_bad_config(void **state)
{
    (void)state;
    node_proc_config_t cfg;
    node_proc_t *p = (node_proc_t *)1;
    node_proc_config_default(&cfg);
    cfg.data_dir = "/tmp";
    assert_int_equal(node_proc_new(E.c, &cfg, &p), KP_EINVAL); /* no name */
    assert_null(p);
    cfg.name = "x";
    cfg.data_dir = NULL;
    assert_int_equal(node_proc_new(E.c, &cfg, &p), KP_EINVAL); /* no data dir */
    cfg.data_dir = "/tmp";
    cfg.backoff_scale = 0;
    assert_int_equal(node_proc_new(E.c, &cfg, &p), KP_EINVAL);
}

static void test_run_and_log(void **state)
{
    (void)state;
    node_proc_t *p = node_start("proc-run", 1.0);
    json_t *node = NULL;
    assert_int_equal(kc_get(E.c, &kc_nodes, NULL, "proc-run", &node), 0);
    assert_int_equal(json_integer_value(at(node, "status.daemonEndpoints.kubeletEndpoint.Port")),
                     node_proc_port(p));
    assert_string_equal(str_at(node, "status.addresses.0.address"), "127.0.0.1");
    json_decref(node);
    create_pod("{\"metadata\":{\"name\":\"runner\"},\"spec\":{\"nodeName\":\"proc-run\","
               "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\",\"image\":\"x\","
               "\"command\":[\"sh\",\"-c\"],\"args\":[\"echo out $(WHO); echo err >&2; exit 7\"],"
               "\"env\":[{\"name\":\"WHO\",\"value\":\"me\"}]}]}}");
    json_t *pod = wait_pod("runner", phase_is, "Failed", "phase Failed");
    assert_int_equal(json_integer_value(at(pod, "status.containerStatuses.0.state.terminated."
                                                "exitCode")),
                     7);
    assert_string_equal(str_at(pod, "status.containerStatuses.0.state.terminated.reason"), "Error");
    assert_string_equal(str_at(pod, "status.containerStatuses.0.image"), "x");
    assert_int_equal(json_integer_value(at(pod, "status.containerStatuses.0.restartCount")), 0);
    /* The CRI log file. */
    char path[600], line[512];
    snprintf(path, sizeof path, "%s/pods/default_runner_%s/main/0.log", cur_dir,
             str_at(pod, "metadata.uid"));
    json_decref(pod);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int out = 0, err = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "Z stdout F out me\n")) out++;
        if (strstr(line, "Z stderr F err\n")) err++;
    }
    fclose(f);
    assert_int_equal(out, 1);
    assert_int_equal(err, 1);
    /* The log server: the token is required; text comes back. */
    char body[4096];
    assert_int_equal(node_get(p, "/containerLogs/default/runner/main", "wrong", body), 401);
    assert_int_equal(node_get(p, "/containerLogs/default/runner/main", E.cfg.token, body), 200);
    assert_non_null(strstr(body, "out me\n"));
    assert_non_null(strstr(body, "err\n"));
    assert_int_equal(
        node_get(p, "/containerLogs/default/runner/main?tailLines=1", E.cfg.token, body), 200);
    assert_non_null(strchr(body, '\n'));
    assert_null(strchr(strchr(body, '\n') + 1, '\n')); /* one line */
    assert_int_equal(node_get(p, "/containerLogs/default/runner/nope", E.cfg.token, body), 404);
    assert_int_equal(
        node_get(p, "/containerLogs/default/runner/main?previous=true", E.cfg.token, body), 400);
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "runner", NULL, NULL), 0);
    wait_gone("runner");
}

static void test_restart_backoff(void **state)
{
    (void)state;
    node_start("proc-crash", 0.01); /* 10 s -> 100 ms */
    create_pod("{\"metadata\":{\"name\":\"crasher\"},\"spec\":{\"nodeName\":\"proc-crash\","
               "\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":\"main\",\"image\":"
               "\"x\",\"command\":[\"sh\",\"-c\",\"echo boom; exit 1\"]}]}}");
    int three = 3;
    json_t *pod = wait_pod("crasher", restarts_at_least, &three, "restartCount >= 3");
    assert_int_equal(
        json_integer_value(at(pod, "status.containerStatuses.0.lastState.terminated.exitCode")), 1);
    assert_string_equal(str_at(pod, "status.containerStatuses.0.lastState.terminated.reason"),
                        "Error");
    assert_string_equal(str_at(pod, "status.phase"), "Running");
    json_decref(pod);
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "crasher", NULL, NULL), 0);
    wait_gone("crasher");
}

static void test_sigterm_then_sigkill(void **state)
{
    (void)state;
    node_start("proc-term", 1.0);
    create_pod("{\"metadata\":{\"name\":\"stubborn\"},\"spec\":{\"nodeName\":\"proc-term\","
               "\"terminationGracePeriodSeconds\":1,\"containers\":[{\"name\":\"main\","
               "\"image\":\"x\",\"command\":[\"sh\",\"-c\",\"trap '' TERM; while true; do sleep "
               "0.05; done\"]}]}}");
    create_pod("{\"metadata\":{\"name\":\"polite\"},\"spec\":{\"nodeName\":\"proc-term\","
               "\"terminationGracePeriodSeconds\":20,\"containers\":[{\"name\":\"main\","
               "\"image\":\"x\",\"command\":[\"sh\",\"-c\",\"trap 'exit 0' TERM; while true; do "
               "sleep 0.05; done\"]}]}}");
    json_decref(wait_pod("stubborn", phase_is, "Running", "Running"));
    json_decref(wait_pod("polite", phase_is, "Running", "Running"));
    tu_sleep_ms(300); /* let the shells set their traps */
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "stubborn", NULL, NULL), 0);
    int ms = wait_gone("stubborn");
    assert_true(ms >= 900);  /* SIGTERM was ignored: the grace period passed */
    assert_true(ms < 15000); /* and then SIGKILL ended it */
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "polite", NULL, NULL), 0);
    ms = wait_gone("polite");
    assert_true(ms < 10000); /* well inside its 20 s grace */
    tu_sleep_ms(200);
    assert_int_equal(procs_under(cur_dir), 0);
}

static void test_init_containers(void **state)
{
    (void)state;
    node_proc_t *p = node_start("proc-init", 1.0);
    create_pod("{\"metadata\":{\"name\":\"inited\"},\"spec\":{\"nodeName\":\"proc-init\","
               "\"restartPolicy\":\"Never\",\"initContainers\":[{\"name\":\"one\",\"image\":"
               "\"x\",\"command\":[\"sh\",\"-c\",\"echo one > f\"]},{\"name\":\"two\",\"image\":"
               "\"x\",\"command\":[\"sh\",\"-c\",\"echo two >> f\"]}],\"containers\":[{\"name\":"
               "\"main\",\"image\":\"x\",\"command\":[\"cat\",\"f\"]}]}}");
    json_t *pod = wait_pod("inited", phase_is, "Succeeded", "phase Succeeded");
    assert_string_equal(str_at(pod, "status.initContainerStatuses.0.state.terminated.reason"),
                        "Completed");
    assert_string_equal(str_at(pod, "status.initContainerStatuses.1.name"), "two");
    json_decref(pod);
    char body[4096];
    assert_int_equal(node_get(p, "/containerLogs/default/inited/main", E.cfg.token, body), 200);
    assert_string_equal(body, "one\ntwo\n"); /* the init containers ran first, in order */
    /* An init container that fails with restartPolicy Never fails the pod;
     * the containers never start. */
    create_pod("{\"metadata\":{\"name\":\"initfail\"},\"spec\":{\"nodeName\":\"proc-init\","
               "\"restartPolicy\":\"Never\",\"initContainers\":[{\"name\":\"bad\",\"image\":"
               "\"x\",\"command\":[\"sh\",\"-c\",\"exit 2\"]}],\"containers\":[{\"name\":"
               "\"main\",\"image\":\"x\",\"command\":[\"true\"]}]}}");
    pod = wait_pod("initfail", phase_is, "Failed", "phase Failed");
    assert_int_equal(
        json_integer_value(at(pod, "status.initContainerStatuses.0.state.terminated.exitCode")), 2);
    assert_string_equal(str_at(pod, "status.containerStatuses.0.state.waiting.reason"),
                        "PodInitializing");
    json_decref(pod);
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "inited", NULL, NULL), 0);
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "initfail", NULL, NULL), 0);
    wait_gone("inited");
    wait_gone("initfail");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test_teardown(test_run_and_log, node_free),
        cmocka_unit_test_teardown(test_restart_backoff, node_free),
        cmocka_unit_test_teardown(test_sigterm_then_sigkill, node_free),
        cmocka_unit_test_teardown(test_init_containers, node_free),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
