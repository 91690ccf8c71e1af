/*
 * test_client.c -- the API client and watches (src/client/client.c,
 * src/client/watch.c) against a real kplane server.
 *
 * What it proves:
 *  - kc_config_load() reads the server's kubeconfig (inline CA and the
 *    admin's client certificate), the file variants (certificate-authority,
 *    tokenFile, client-certificate and client-key, relative to the
 *    kubeconfig) and insecure-skip-tls-verify, and refuses a missing file,
 *    broken YAML, a file without current-context, dangling references, a
 *    certificate without its key and plugins. A client certificate the
 *    server does not take (its own serving certificate: not for clients)
 *    is a 401; one that does not match its key fails the connection.
 *  - Every verb, and every error mapping client.h promises that a server can
 *    be made to answer: 404, 409 AlreadyExists, 409 Conflict (a stale
 *    resourceVersion), 422, 400, 401, 413, 410; no connection and a request
 *    timeout; the Status comes back in *status.
 *  - The four patch types; pods/binding; the status subresource.
 *  - kc_list follows continue over 1,200 objects (3 pages of 500) and keeps
 *    the first page's resourceVersion; 8 threads x 200 creates share one
 *    client; the rate limit (qps 50, burst 5) holds 60 requests to >= 1 s.
 *  - A metadata client (kc_client_metadata) gets, lists and watches
 *    PartialObjectMetadata.
 *  - Watches: events in order, the initial ADDEDs for rv "", a bookmark on an
 *    idle stream, an event line far larger than one read, 410 as
 *    KP_ECOMPACTED, the stream's end as KP_ECLOSED, cancel from another
 *    thread waking a blocked next(), and a killed server giving an error, not
 *    a hang.
 *
 * Each group starts its own server; the kill test has a group of its own.
 * Threads never call cmocka asserts: they record, the main thread asserts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "kpserver.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "testutil.h"

typedef struct fx {
    kpserver_t s;
    kc_config_t cfg;
    json_t *storage;
    kc_client_t *c;
} fx_t;

static int fx_setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    if (!f) return -1;
    /* The API server alone: no scheduler or nodes acting on test objects. */
    static const char *const quiet[] = {"--no-controllers", "--no-scheduler", "--nodes", "0", NULL};
    kpserver_start(&f->s, quiet);
    if (kpserver_client(&f->s, &f->cfg, &f->storage, &f->c)) return -1;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx_t *f = *state;
    kc_client_free(f->c);
    json_decref(f->storage);
    kpserver_stop(&f->s);
    free(f);
    return 0;
}

static double now_s(void)
{
    return (double)clock_mono_ns() / 1e9;
}

static json_t *cm(const char *ns, const char *name)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "name", name, "namespace", ns, "data", "k", "v");
}

static json_t *pod(const char *ns, const char *name)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:[{s:s,s:s}]}}", "apiVersion", "v1", "kind", "Pod",
                     "metadata", "name", name, "namespace", ns, "spec", "containers", "name", "app",
                     "image", "busybox");
}

static void make_ns(kc_client_t *c, const char *name)
{
    json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                           "name", name);
    assert_int_equal(kc_create(c, &kc_namespaces, NULL, ns, NULL, NULL), 0);
    json_decref(ns);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

static long long rv_num(const json_t *o)
{
    const char *rv = str_at(o, "metadata", "resourceVersion");
    return rv ? strtoll(rv, NULL, 10) : -1;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A file of s's data dir (malloc'd, trailing white space cut). */
static char *data_file(const kpserver_t *s, const char *name)
{
    char path[800], buf[8192];
    snprintf(path, sizeof path, "%s/data/%s", s->dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    while (n && strchr(" \t\r\n", buf[n - 1]))
        n--;
    buf[n] = '\0';
    return strdup(buf);
}

/* ---- kubeconfig ---- */

static void test_config_good(void **state)
{
    fx_t *f = *state;
    assert_non_null(f->cfg.server);
    assert_true(!strncmp(f->cfg.server, "https://127.0.0.1:", 18));
    /* kubeadm's admin.conf: a client certificate, no token. */
    assert_null(f->cfg.token);
    assert_non_null(f->cfg.cert_pem);
    assert_non_null(strstr(f->cfg.cert_pem, "-----BEGIN CERTIFICATE-----"));
    assert_non_null(f->cfg.key_pem);
    assert_non_null(strstr(f->cfg.key_pem, "PRIVATE KEY-----"));
    assert_non_null(f->cfg.ca_pem);
    assert_non_null(strstr(f->cfg.ca_pem, "-----BEGIN CERTIFICATE-----"));
    assert_int_equal(f->cfg.insecure, 0);
    json_t *ns = NULL;
    assert_int_equal(kc_get(f->c, &kc_namespaces, NULL, "default", &ns), 0);
    assert_string_equal(str_at(ns, "metadata", "name"), "default");
    json_decref(ns);
}

static void test_config_errors(void **state)
{
    fx_t *f = *state;
    char *dir = tu_tmpdir("kcconf"), path[600], err[256];
    kc_config_t cfg;
    json_t *st = (json_t *)1;

    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), KP_ENOTFOUND);
    assert_null(st);
    assert_null(cfg.server);

    snprintf(path, sizeof path, "%s/broken", dir);
    write_text(path, "clusters: [\n  - name: x\n   bad: : :\n");
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), KP_EINVAL);
    assert_true(strlen(err) > 0);
    assert_null(st);

    snprintf(path, sizeof path, "%s/nocurrent", dir);
    write_text(path, "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\n"
                     "    server: https://127.0.0.1:1\n");
    err[0] = '\0';
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), KP_EINVAL);
    assert_non_null(strstr(err, "current-context"));

    snprintf(path, sizeof path, "%s/nocluster", dir);
    write_text(path, "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: gone\n");
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), KP_EINVAL);
    assert_non_null(strstr(err, "cluster"));

    snprintf(path, sizeof path, "%s/nouser", dir);
    write_text(path, "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: a\n"
                     "    user: gone\nclusters:\n- name: a\n  cluster:\n    server: http://x\n");
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), KP_EINVAL);
    assert_non_null(strstr(err, "gone"));

    snprintf(path, sizeof path, "%s/notmap", dir);
    write_text(path, "- just\n- a list\n");
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), KP_EINVAL);

    snprintf(path, sizeof path, "%s/badca", dir);
    write_text(path, "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: a\n"
                     "clusters:\n- name: a\n  cluster:\n    server: https://x\n"
                     "    certificate-authority-data: '***'\n");
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), KP_EINVAL);

    /* The file variants, relative to the kubeconfig: they must work. */
    char *admin_token = data_file(&f->s, "admin-token");
    char p2[700];
    snprintf(p2, sizeof p2, "%s/ca.pem", dir);
    write_text(p2, f->cfg.ca_pem);
    snprintf(p2, sizeof p2, "%s/token", dir);
    char tok[300];
    snprintf(tok, sizeof tok, "%s\n", admin_token);
    write_text(p2, tok);
    char text[2048];
    snprintf(text, sizeof text,
             "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: a\n"
             "    user: u\nclusters:\n- name: a\n  cluster:\n    server: %s\n"
             "    certificate-authority: ca.pem\nusers:\n- name: u\n  user:\n"
             "    tokenFile: token\n",
             f->cfg.server);
    snprintf(path, sizeof path, "%s/files", dir);
    write_text(path, text);
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), 0);
    assert_string_equal(cfg.token, admin_token);
    assert_null(cfg.cert_pem);
    assert_string_equal(cfg.ca_pem, f->cfg.ca_pem);
    kc_client_t *c = NULL;
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    json_t *ns = NULL;
    assert_int_equal(kc_get(c, &kc_namespaces, NULL, "default", &ns), 0);
    json_decref(ns);
    kc_client_free(c);
    json_decref(st);

    /* A tokenFile that is not there. */
    snprintf(text, sizeof text,
             "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: a\n"
             "    user: u\nclusters:\n- name: a\n  cluster:\n    server: %s\n"
             "users:\n- name: u\n  user:\n    tokenFile: nope\n",
             f->cfg.server);
    write_text(path, text);
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), KP_EINVAL);
    assert_non_null(strstr(err, "nope"));

    /* insecure-skip-tls-verify: no CA, still connects. */
    snprintf(text, sizeof text,
             "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: a\n"
             "    user: u\nclusters:\n- name: a\n  cluster:\n    server: %s\n"
             "    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n"
             "    token: %s\n",
             f->cfg.server, admin_token);
    write_text(path, text);
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), 0);
    assert_int_equal(cfg.insecure, 1);
    assert_null(cfg.ca_pem);
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    assert_int_equal(kc_get(c, &kc_namespaces, NULL, "default", &ns), 0);
    json_decref(ns);
    kc_client_free(c);
    /* ... while without it an unknown CA fails the handshake. */
    cfg.insecure = 0;
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    assert_int_equal(kc_get(c, &kc_namespaces, NULL, "default", &ns), KP_EUNAVAILABLE);
    assert_null(ns);
    kc_client_free(c);
    json_decref(st);

    /* Client certificate files, relative to the kubeconfig. */
    snprintf(p2, sizeof p2, "%s/admin.crt", dir);
    write_text(p2, f->cfg.cert_pem);
    snprintf(p2, sizeof p2, "%s/admin.key", dir);
    write_text(p2, f->cfg.key_pem);
    snprintf(text, sizeof text,
             "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: a\n"
             "    user: u\nclusters:\n- name: a\n  cluster:\n    server: %s\n"
             "    certificate-authority: ca.pem\nusers:\n- name: u\n  user:\n"
             "    client-certificate: admin.crt\n    client-key: %s/admin.key\n",
             f->cfg.server, dir);
    write_text(path, text);
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), 0);
    assert_null(cfg.token);
    assert_string_equal(cfg.cert_pem, f->cfg.cert_pem);
    assert_string_equal(cfg.key_pem, f->cfg.key_pem);
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    assert_int_equal(kc_get(c, &kc_namespaces, NULL, "default", &ns), 0);
    json_decref(ns);
    kc_client_free(c);
    /* The server's own certificate, signed by the same CA, is for servers
     * only: not a client's (401, the Status says so). */
    char *srv_crt = data_file(&f->s, "server.crt"), *srv_key = data_file(&f->s, "server.key");
    kc_config_t sc = cfg;
    sc.cert_pem = srv_crt;
    sc.key_pem = srv_key;
    json_t *status = NULL, *obj = cm("default", "x");
    assert_int_equal(kc_client_new(&sc, &c), 0);
    assert_int_equal(kc_create(c, &kc_configmaps, "default", obj, &ns, &status), KP_EINVAL);
    assert_int_equal(json_integer_value(json_object_get(status, "code")), 401);
    json_decref(status);
    json_decref(obj);
    kc_client_free(c);
    /* A certificate with another key: no connection. */
    sc.cert_pem = cfg.cert_pem;
    assert_int_equal(kc_client_new(&sc, &c), 0);
    assert_int_equal(kc_get(c, &kc_namespaces, NULL, "default", &ns), KP_EUNAVAILABLE);
    kc_client_free(c);
    free(srv_crt);
    free(srv_key);
    json_decref(st);

    /* Inline data, a certificate without its key, bad base64, a plugin. */
    static const char *const users[] = {
        "    client-certificate-data: %s\n",
        "    client-key-data: %s\n",
        "    client-certificate-data: '***'\n    client-key-data: '***'\n",
        "    exec:\n      command: get-token\n      apiVersion: client.authentication.k8s.io/v1\n",
        "    auth-provider:\n      name: oidc\n",
    };
    static const char *const want[] = {"without its key", "without its key", "not base64", "plugin",
                                       "plugin"};
    for (size_t i = 0; i < sizeof users / sizeof *users; i++) {
        char user[256];
        snprintf(user, sizeof user, users[i], "QUJD");
        snprintf(text, sizeof text,
                 "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: a\n"
                 "    user: u\nclusters:\n- name: a\n  cluster:\n    server: %s\n"
                 "users:\n- name: u\n  user:\n%s",
                 f->cfg.server, user);
        write_text(path, text);
        err[0] = '\0';
        assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), KP_EINVAL);
        if (!strstr(err, want[i])) fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, want[i]);
    }
    /* A token beside a plugin: the token serves. */
    snprintf(text, sizeof text,
             "current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: a\n"
             "    user: u\nclusters:\n- name: a\n  cluster:\n    server: %s\n"
             "users:\n- name: u\n  user:\n    token: t0123456789abcdef\n"
             "    exec:\n      command: x\n",
             f->cfg.server);
    write_text(path, text);
    assert_int_equal(kc_config_load(path, &cfg, &st, err, sizeof err), 0);
    assert_string_equal(cfg.token, "t0123456789abcdef");
    json_decref(st);
    /* kc_client_new wants both halves. */
    kc_config_t half = {.server = f->cfg.server, .cert_pem = f->cfg.cert_pem};
    assert_int_equal(kc_client_new(&half, &c), KP_EINVAL);
    half.cert_pem = NULL;
    half.key_pem = f->cfg.key_pem;
    assert_int_equal(kc_client_new(&half, &c), KP_EINVAL);

    free(admin_token);
    tu_rmtree(dir);
    free(dir);
}

static void test_client_new_errors(void **state)
{
    (void)state;
    kc_client_t *c = (kc_client_t *)1;
    kc_config_t cfg = {.server = NULL};
    assert_int_equal(kc_client_new(&cfg, &c), KP_EINVAL);
    assert_null(c);
    const char *bad[] = {"ftp://x", "https://", "http:///x", "127.0.0.1:6443", "https://a b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cfg.server = bad[i];
        assert_int_equal(kc_client_new(&cfg, &c), KP_EINVAL);
    }
    cfg.server = "https://127.0.0.1:1";
    cfg.token = "abc\r\nX-Evil: 1";
    assert_int_equal(kc_client_new(&cfg, &c), KP_EINVAL);
    cfg.token = NULL;
    cfg.qps = -1;
    assert_int_equal(kc_client_new(&cfg, &c), KP_EINVAL);
    cfg.qps = 0;
    char long_path[200];
    memset(long_path, 'x', sizeof long_path - 1);
    long_path[sizeof long_path - 1] = '\0';
    const char *socks[] = {"", long_path};
    for (size_t i = 0; i < 2; i++) {
        cfg.unix_socket = socks[i];
        assert_int_equal(kc_client_new(&cfg, &c), KP_EINVAL);
    }
}

/* ---- requests and their errors ---- */

static void test_crud_configmap(void **state)
{
    fx_t *f = *state;
    kc_client_t *c = f->c;
    make_ns(c, "crud");
    json_t *obj = cm("crud", "a"), *out = NULL, *st = NULL;
    assert_int_equal(kc_create(c, &kc_configmaps, "crud", obj, &out, &st), 0);
    assert_null(st);
    assert_non_null(str_at(out, "metadata", "uid"));
    long long rv1 = rv_num(out);
    assert_true(rv1 > 0);
    json_decref(out);

    /* 409 AlreadyExists */
    assert_int_equal(kc_create(c, &kc_configmaps, "crud", obj, &out, &st), KP_EEXIST);
    assert_null(out);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "AlreadyExists");
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 409);
    json_decref(st);
    /* status not wanted: still the right code */
    assert_int_equal(kc_create(c, &kc_configmaps, "crud", obj, NULL, NULL), KP_EEXIST);

    /* GET, 404 */
    assert_int_equal(kc_get(c, &kc_configmaps, "crud", "a", &out), 0);
    assert_string_equal(str_at(out, "data", "k"), "v");
    json_t *cur = out;
    assert_int_equal(kc_get(c, &kc_configmaps, "crud", "nope", &out), KP_ENOTFOUND);
    assert_null(out);
    assert_int_equal(kc_get(c, &kc_configmaps, NULL, "a", &out), KP_EINVAL);
    assert_int_equal(kc_get(c, &kc_configmaps, "crud", "", &out), KP_EINVAL);

    /* PUT with the current resourceVersion, then with the stale one: 409 */
    json_t *upd = json_deep_copy(cur);
    json_object_set_new(json_object_get(upd, "data"), "k", json_string("v2"));
    assert_int_equal(kc_update(c, &kc_configmaps, "crud", upd, NULL, &out, &st), 0);
    assert_true(rv_num(out) > rv_num(cur));
    assert_string_equal(str_at(out, "data", "k"), "v2");
    json_decref(out);
    json_object_set_new(json_object_get(upd, "data"), "k", json_string("v3"));
    assert_int_equal(kc_update(c, &kc_configmaps, "crud", upd, NULL, &out, &st), KP_ECONFLICT);
    assert_null(out);
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Conflict");
    json_decref(st);
    /* namespace from the object when ns is NULL */
    json_object_del(json_object_get(upd, "metadata"), "resourceVersion");
    assert_int_equal(kc_update(c, &kc_configmaps, NULL, upd, NULL, &out, NULL), 0);
    assert_string_equal(str_at(out, "data", "k"), "v3");
    json_decref(out);
    /* PUT of a missing object */
    json_object_set_new(json_object_get(upd, "metadata"), "name", json_string("missing"));
    assert_int_equal(kc_update(c, &kc_configmaps, "crud", upd, NULL, NULL, NULL), KP_ENOTFOUND);
    json_decref(upd);
    json_decref(cur);

    /* 422 Invalid */
    json_t *bad = cm("crud", "Bad_Name");
    assert_int_equal(kc_create(c, &kc_configmaps, "crud", bad, &out, &st), KP_EINVAL);
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 422);
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Invalid");
    json_decref(st);
    json_decref(bad);

    /* DELETE, twice */
    assert_int_equal(kc_delete(c, &kc_configmaps, "crud", "a", NULL, &st), 0);
    assert_null(st);
    assert_int_equal(kc_delete(c, &kc_configmaps, "crud", "a", NULL, &st), KP_ENOTFOUND);
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 404);
    json_decref(st);
    assert_int_equal(kc_get(c, &kc_configmaps, "crud", "a", &out), KP_ENOTFOUND);
    /* DELETE with options */
    assert_int_equal(kc_create(c, &kc_configmaps, "crud", obj, NULL, NULL), 0);
    json_t *opts = json_pack("{s:s,s:s,s:i}", "kind", "DeleteOptions", "apiVersion", "v1",
                             "gracePeriodSeconds", 0);
    assert_int_equal(kc_delete(c, &kc_configmaps, "crud", "a", opts, NULL), 0);
    json_decref(opts);
    json_decref(obj);

    /* A name that needs escaping never reaches another path. */
    assert_int_equal(kc_get(c, &kc_configmaps, "crud", "a/../b", &out), KP_ENOTFOUND);
    /* Cluster-scoped ignores ns. */
    assert_int_equal(kc_get(c, &kc_namespaces, "ignored", "crud", &out), 0);
    json_decref(out);
}

static void test_other_errors(void **state)
{
    fx_t *f = *state;
    kc_client_t *c = f->c;
    json_t *out = NULL, *st = NULL;

    /* 413: a body over the server's 3 MiB cap */
    size_t big = 4u << 20;
    char *blob = malloc(big + 1);
    assert_non_null(blob);
    memset(blob, 'x', big);
    blob[big] = '\0';
    json_t *obj = cm("default", "big");
    json_object_set_new(json_object_get(obj, "data"), "k", json_string(blob));
    free(blob);
    assert_int_equal(kc_create(c, &kc_configmaps, "default", obj, &out, &st), KP_ETOOLARGE);
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 413);
    json_decref(st);
    json_decref(obj);

    /* 400: a selector that does not parse */
    assert_int_equal(kc_list(c, &kc_configmaps, "default", "labelSelector=a%20in%20(", &out),
                     KP_EINVAL);
    assert_null(out);

    /* 401: a wrong token; the Status says so */
    kc_config_t cfg = f->cfg;
    cfg.token = "not-the-token";
    cfg.cert_pem = cfg.key_pem = NULL;
    kc_client_t *c2 = NULL;
    assert_int_equal(kc_client_new(&cfg, &c2), 0);
    obj = cm("default", "x");
    assert_int_equal(kc_create(c2, &kc_configmaps, "default", obj, &out, &st), KP_EINVAL);
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 401);
    json_decref(st);
    kc_client_free(c2);

    /* No connection: a port nobody listens on. */
    int port;
    int fd = tu_loopback_socket(&port);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    cfg = (kc_config_t){.server = url, .timeout_ms = 2000};
    assert_int_equal(kc_client_new(&cfg, &c2), 0);
    assert_int_equal(kc_get(c2, &kc_configmaps, "default", "x", &out), KP_EUNAVAILABLE);
    kc_watch_t *w = (kc_watch_t *)1;
    assert_int_equal(kc_watch_open(c2, &kc_configmaps, "default", NULL, "", 5, &w),
                     KP_EUNAVAILABLE);
    assert_null(w);
    kc_client_stats_t cs;
    kc_client_stats(c2, &cs);
    assert_int_equal(cs.requests, 2);
    assert_int_equal(cs.errors, 2);
    assert_int_equal(cs.watches, 1);
    kc_client_free(c2);

    /* A server that accepts and never answers: the request times out. */
    assert_int_equal(listen(fd, 4), 0);
    cfg.timeout_ms = 300;
    assert_int_equal(kc_client_new(&cfg, &c2), 0);
    double t0 = now_s();
    assert_int_equal(kc_create(c2, &kc_configmaps, "default", obj, &out, &st), KP_ETIMEDOUT);
    assert_null(st);
    assert_true(now_s() - t0 < 5);
    assert_int_equal(kc_watch_open(c2, &kc_configmaps, "default", NULL, "", 5, &w), KP_ETIMEDOUT);
    kc_client_free(c2);
    close(fd);
    json_decref(obj);
}

static void test_pods_bind_status(void **state)
{
    fx_t *f = *state;
    kc_client_t *c = f->c;
    make_ns(c, "pods");
    json_t *p = pod("pods", "p1"), *out = NULL, *st = NULL;
    assert_int_equal(kc_create(c, &kc_pods, NULL, p, &out, NULL), 0);
    assert_string_equal(str_at(out, "metadata", "namespace"), "pods");
    json_decref(out);
    assert_int_equal(kc_create(c, &kc_pods, "pods", p, NULL, &st), KP_EEXIST);
    json_decref(st);
    json_decref(p);

    /* A pod without containers is invalid. */
    p = json_pack("{s:s,s:s,s:{s:s},s:{}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name",
                  "p2", "spec");
    assert_int_equal(kc_create(c, &kc_pods, "pods", p, NULL, &st), KP_EINVAL);
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 422);
    json_decref(st);
    json_decref(p);

    assert_int_equal(kc_bind(c, "pods", "p1", "node-7"), 0);
    assert_int_equal(kc_get(c, &kc_pods, "pods", "p1", &out), 0);
    assert_string_equal(str_at(out, "spec", "nodeName"), "node-7");
    /* Bound already: the binding conflicts. */
    assert_int_equal(kc_bind(c, "pods", "p1", "node-8"), KP_ECONFLICT);
    assert_int_equal(kc_bind(c, "pods", "nope", "node-8"), KP_ENOTFOUND);
    assert_int_equal(kc_bind(c, "pods", "p1", ""), KP_EINVAL);

    /* The status subresource. */
    json_t *upd = json_deep_copy(out);
    json_decref(out);
    json_object_set_new(upd, "status", json_pack("{s:s}", "phase", "Running"));
    assert_int_equal(kc_update(c, &kc_pods, "pods", upd, "status", &out, NULL), 0);
    assert_string_equal(str_at(out, "status", "phase"), "Running");
    json_decref(out);
    json_decref(upd);
    /* A patch through status changes the status and the labels and
     * annotations it carries; its spec is ignored, as Kubernetes' status
     * strategy does (and a uid in it would be a precondition: 409). */
    json_t *sp = json_pack("{s:{s:{s:s}},s:{s:s},s:{s:s,s:s}}", "metadata", "labels", "x", "y",
                           "spec", "nodeName", "node-9", "status", "phase", "Succeeded", "podIP",
                           "10.1.2.3");
    assert_int_equal(kc_patch(c, &kc_pods, "pods", "p1", "status", KC_PATCH_MERGE, sp, NULL, &out,
                              NULL),
                     0);
    json_decref(sp);
    assert_string_equal(str_at(out, "status", "phase"), "Succeeded");
    assert_string_equal(str_at(out, "status", "podIP"), "10.1.2.3");
    assert_string_equal(str_at(out, "spec", "nodeName"), "node-7");
    assert_string_equal(str_at(json_object_get(out, "metadata"), "labels", "x"), "y");
    assert_non_null(str_at(out, "metadata", "resourceVersion"));
    json_decref(out);

    json_t *opts = json_pack("{s:i}", "gracePeriodSeconds", 0);
    assert_int_equal(kc_delete(c, &kc_pods, "pods", "p1", opts, NULL), 0);
    json_decref(opts);
}

static void test_patches(void **state)
{
    fx_t *f = *state;
    kc_client_t *c = f->c;
    make_ns(c, "patch");
    json_t *obj = cm("patch", "p"), *out = NULL, *st = NULL;
    assert_int_equal(kc_create(c, &kc_configmaps, "patch", obj, NULL, NULL), 0);
    json_decref(obj);

    json_t *mp = json_pack("{s:{s:s,s:n}}", "data", "m", "1", "k");
    assert_int_equal(
        kc_patch(c, &kc_configmaps, "patch", "p", NULL, KC_PATCH_MERGE, mp, NULL, &out, &st), 0);
    assert_string_equal(str_at(out, "data", "m"), "1");
    assert_null(json_object_get(json_object_get(out, "data"), "k"));
    json_decref(out);
    json_decref(mp);

    json_t *sp = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "s", "2");
    assert_int_equal(
        kc_patch(c, &kc_configmaps, "patch", "p", NULL, KC_PATCH_STRATEGIC, sp, NULL, &out, NULL),
        0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(out, "metadata"), "labels"), "s")),
                        "2");
    json_decref(out);
    json_decref(sp);

    /* Only the written version's resourceVersion: the one a GET sees. */
    json_t *rp = json_pack("{s:{s:s}}", "data", "r", "5");
    int64_t rv = -1;
    assert_int_equal(
        kc_patch_rv(c, &kc_configmaps, "patch", "p", NULL, KC_PATCH_MERGE, rp, &rv, NULL), 0);
    assert_int_equal(kc_get(c, &kc_configmaps, "patch", "p", &out), 0);
    assert_true(rv > 0);
    assert_int_equal(rv, strtoll(json_string_value(json_object_get(json_object_get(out, "metadata"),
                                                                   "resourceVersion")),
                                 NULL, 10));
    assert_string_equal(str_at(out, "data", "r"), "5");
    json_decref(out);
    json_decref(rp);

    json_t *jp = json_pack("[{s:s,s:s,s:s}]", "op", "add", "path", "/data/j", "value", "3");
    assert_int_equal(
        kc_patch(c, &kc_configmaps, "patch", "p", NULL, KC_PATCH_JSON, jp, NULL, &out, NULL), 0);
    assert_string_equal(str_at(out, "data", "j"), "3");
    json_decref(out);
    json_decref(jp);
    /* A JSON patch whose test fails. */
    jp = json_pack("[{s:s,s:s,s:s}]", "op", "test", "path", "/data/j", "value", "nope");
    int rc = kc_patch(c, &kc_configmaps, "patch", "p", NULL, KC_PATCH_JSON, jp, NULL, &out, &st);
    assert_true(rc == KP_EINVAL || rc == KP_ECONFLICT);
    assert_null(out);
    assert_non_null(st);
    json_decref(st);
    json_decref(jp);

    json_t *ap = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                           "metadata", "name", "p", "namespace", "patch", "data", "a", "4");
    assert_int_equal(kc_patch(c, &kc_configmaps, "patch", "p", NULL, KC_PATCH_APPLY, ap,
                              "fieldManager=test&force=true", &out, NULL),
                     0);
    assert_string_equal(str_at(out, "data", "a"), "4");
    json_decref(out);
    /* Apply creates, too, with the default field manager. */
    json_object_set_new(json_object_get(ap, "metadata"), "name", json_string("q"));
    assert_int_equal(
        kc_patch(c, &kc_configmaps, "patch", "q", NULL, KC_PATCH_APPLY, ap, NULL, &out, NULL), 0);
    assert_string_equal(str_at(out, "data", "a"), "4");
    json_decref(out);

    assert_int_equal(
        kc_patch(c, &kc_configmaps, "patch", "p", NULL, (kc_patch_type_t)99, ap, NULL, &out, NULL),
        KP_EINVAL);
    assert_int_equal(
        kc_patch(c, &kc_configmaps, "patch", "nope", NULL, KC_PATCH_MERGE, ap, NULL, &out, NULL),
        KP_ENOTFOUND);
    json_decref(ap);
}

/* ---- many requests ---- */

typedef struct creator {
    pthread_t t;
    kc_client_t *c;
    const char *ns;
    int id, n, fails, first_rc;
} creator_t;

static void *create_many(void *arg)
{
    creator_t *w = arg;
    for (int i = 0; i < w->n; i++) {
        char name[64];
        snprintf(name, sizeof name, "cm-%d-%d", w->id, i);
        json_t *o = cm(w->ns, name);
        json_object_set_new(json_object_get(o, "metadata"), "labels",
                            json_pack("{s:s}", "half", i % 2 ? "odd" : "even"));
        int rc = kc_create(w->c, &kc_configmaps, w->ns, o, NULL, NULL);
        json_decref(o);
        if (rc) {
            w->fails++;
            if (!w->first_rc) w->first_rc = rc;
        }
    }
    return NULL;
}

static void create_parallel(kc_client_t *c, const char *ns, int threads, int per)
{
    creator_t w[16];
    assert_true(threads <= 16);
    for (int i = 0; i < threads; i++) {
        w[i] = (creator_t){.c = c, .ns = ns, .id = i, .n = per};
        assert_int_equal(pthread_create(&w[i].t, NULL, create_many, &w[i]), 0);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].t, NULL);
        if (w[i].fails) fprintf(stderr, "thread %d: %s\n", i, err_str(w[i].first_rc));
        assert_int_equal(w[i].fails, 0);
    }
}

static void test_concurrency(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "conc");
    kc_client_stats_t a, b;
    kc_client_stats(f->c, &a);
    create_parallel(f->c, "conc", 8, 200);
    kc_client_stats(f->c, &b);
    assert_int_equal(b.requests - a.requests, 1600);
    assert_int_equal(b.errors - a.errors, 0);
    json_t *list = NULL;
    assert_int_equal(kc_list(f->c, &kc_configmaps, "conc", NULL, &list), 0);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 1600);
    json_decref(list);
}

static void test_list_pages(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "page");
    create_parallel(f->c, "page", 8, 150); /* 1,200 */
    kc_client_stats_t a, b;
    kc_client_stats(f->c, &a);
    json_t *list = NULL;
    assert_int_equal(kc_list(f->c, &kc_configmaps, "page", NULL, &list), 0);
    kc_client_stats(f->c, &b);
    assert_int_equal(b.requests - a.requests, 3); /* 500 + 500 + 200 */
    json_t *items = json_object_get(list, "items");
    assert_int_equal(json_array_size(items), 1200);
    json_t *md = json_object_get(list, "metadata");
    assert_null(json_object_get(md, "continue"));
    assert_non_null(json_string_value(json_object_get(md, "resourceVersion")));
    assert_string_equal(json_string_value(json_object_get(list, "kind")), "ConfigMapList");
    /* every name once */
    json_t *seen = json_object();
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
        json_object_set(seen, str_at(it, "metadata", "name"), json_true());
    assert_int_equal(json_object_size(seen), 1200);
    json_decref(seen);

    /* The list's resourceVersion is the first page's: a write between
     * pages does not move it, and a watch from it sees that write. */
    long long rv = strtoll(json_string_value(json_object_get(md, "resourceVersion")), NULL, 10);
    json_t *g = NULL;
    assert_int_equal(kc_get(f->c, &kc_configmaps, "page", "cm-0-0", &g), 0);
    assert_true(rv >= rv_num(g));
    json_decref(g);
    json_decref(list);

    /* The caller's limit and selector. */
    kc_client_stats(f->c, &a);
    assert_int_equal(
        kc_list(f->c, &kc_configmaps, "page", "limit=100&labelSelector=half%3Dodd", &list), 0);
    kc_client_stats(f->c, &b);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 600);
    assert_int_equal(b.requests - a.requests, 6);
    json_decref(list);

    /* All namespaces (ns NULL) includes these. */
    assert_int_equal(kc_list(f->c, &kc_configmaps, NULL, NULL, &list), 0);
    assert_true(json_array_size(json_object_get(list, "items")) >= 1200);
    json_decref(list);
    /* An empty list is a list. */
    assert_int_equal(kc_list(f->c, &kc_secrets, "page", NULL, &list), 0);
    assert_true(json_is_array(json_object_get(list, "items")));
    assert_int_equal(json_array_size(json_object_get(list, "items")), 0);
    json_decref(list);
}

static void test_rate_limit(void **state)
{
    fx_t *f = *state;
    kc_config_t cfg = f->cfg;
    cfg.qps = 50;
    cfg.burst = 5;
    kc_client_t *c = NULL;
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    double t0 = now_s();
    for (int i = 0; i < 60; i++) {
        json_t *out = NULL;
        assert_int_equal(kc_get(c, &kc_namespaces, NULL, "default", &out), 0);
        json_decref(out);
    }
    double dt = now_s() - t0;
    assert_true(dt >= 1.0); /* 5 at once, 55 at 50/s: 1.1 s */
    assert_true(dt < 4.0);
    kc_client_free(c);
    /* Off by default: the same 60 go much faster. */
    t0 = now_s();
    for (int i = 0; i < 60; i++) {
        json_t *out = NULL;
        assert_int_equal(kc_get(f->c, &kc_namespaces, NULL, "default", &out), 0);
        json_decref(out);
    }
    assert_true(now_s() - t0 < 1.0);
}

/* ---- watches ---- */

static const char *list_rv(kc_client_t *c, const char *ns, char *buf, size_t n)
{
    json_t *list = NULL;
    assert_int_equal(kc_list(c, &kc_configmaps, ns, NULL, &list), 0);
    snprintf(buf, n, "%s", str_at(list, "metadata", "resourceVersion"));
    json_decref(list);
    return buf;
}

static void expect_event(kc_watch_t *w, kc_event_type_t type, const char *name, long long *rv)
{
    kc_event_type_t t = 0;
    json_t *obj = NULL;
    int rc = kc_watch_next(w, 10000, &t, &obj);
    assert_int_equal(rc, 0);
    assert_int_equal(t, type);
    assert_string_equal(str_at(obj, "metadata", "name"), name);
    assert_string_equal(json_string_value(json_object_get(obj, "kind")), "ConfigMap");
    long long r = rv_num(obj);
    assert_true(r > *rv);
    *rv = r;
    json_decref(obj);
}

static void test_watch_events(void **state)
{
    fx_t *f = *state;
    kc_client_t *c = f->c;
    make_ns(c, "watch");
    char rvb[64];
    list_rv(c, "watch", rvb, sizeof rvb);
    kc_watch_t *w = NULL;
    assert_int_equal(kc_watch_open(c, &kc_configmaps, "watch", NULL, rvb, 60, &w), 0);
    kc_event_type_t t;
    json_t *obj = NULL;
    assert_int_equal(kc_watch_next(w, 200, &t, &obj), KP_ETIMEDOUT);
    assert_null(obj);
    assert_int_equal(kc_watch_next(w, 0, &t, &obj), KP_ETIMEDOUT);

    json_t *o = cm("watch", "w1"), *out = NULL;
    assert_int_equal(kc_create(c, &kc_configmaps, "watch", o, &out, NULL), 0);
    json_object_set_new(json_object_get(out, "data"), "k", json_string("v2"));
    assert_int_equal(kc_update(c, &kc_configmaps, "watch", out, NULL, NULL, NULL), 0);
    json_decref(out);
    json_object_set_new(json_object_get(o, "metadata"), "name", json_string("w2"));
    assert_int_equal(kc_create(c, &kc_configmaps, "watch", o, NULL, NULL), 0);
    assert_int_equal(kc_delete(c, &kc_configmaps, "watch", "w1", NULL, NULL), 0);
    json_decref(o);

    long long rv = strtoll(rvb, NULL, 10);
    expect_event(w, KC_ADDED, "w1", &rv);
    expect_event(w, KC_MODIFIED, "w1", &rv);
    expect_event(w, KC_ADDED, "w2", &rv);
    expect_event(w, KC_DELETED, "w1", &rv);
    assert_int_equal(kc_watch_next(w, 100, &t, &obj), KP_ETIMEDOUT);
    kc_watch_close(w);

    /* From "": the current objects as ADDED first. */
    assert_int_equal(kc_watch_open(c, &kc_configmaps, "watch", NULL, "", 60, &w), 0);
    rv = 0;
    expect_event(w, KC_ADDED, "w2", &rv);
    kc_watch_close(w);

    /* A label selector in the query. */
    assert_int_equal(kc_watch_open(c, &kc_configmaps, "watch", "labelSelector=x%3Dy", "", 60, &w),
                     0);
    assert_int_equal(kc_watch_next(w, 300, &t, &obj), KP_ETIMEDOUT);
    kc_watch_close(w);

    /* A bad selector is refused at open. */
    w = (kc_watch_t *)1;
    assert_int_equal(
        kc_watch_open(c, &kc_configmaps, "watch", "fieldSelector=spec.nope%3Dx", "", 60, &w),
        KP_EINVAL);
    assert_null(w);
    /* Close of NULL is fine. */
    kc_watch_close(NULL);
}

/* A metadata client: get, list (paged) and watch give PartialObjectMetadata
 * (the data left out); its writes are as any client's. */
static void test_metadata_client(void **state)
{
    fx_t *f = *state;
    kc_client_t *m = NULL;
    assert_int_equal(kc_client_metadata(f->c, &m), 0);
    make_ns(f->c, "meta");
    json_t *o = cm("meta", "m1"), *out = NULL;
    assert_int_equal(kc_create(m, &kc_configmaps, "meta", o, &out, NULL), 0);
    assert_string_equal(str_at(out, "data", "k"), "v"); /* a write: the whole object */
    json_decref(out);
    json_object_set_new(json_object_get(o, "metadata"), "name", json_string("m2"));
    assert_int_equal(kc_create(m, &kc_configmaps, "meta", o, NULL, NULL), 0);
    json_decref(o);

    assert_int_equal(kc_get(m, &kc_configmaps, "meta", "m1", &out), 0);
    assert_string_equal(json_string_value(json_object_get(out, "kind")), "PartialObjectMetadata");
    assert_string_equal(json_string_value(json_object_get(out, "apiVersion")), "meta.k8s.io/v1");
    assert_string_equal(str_at(out, "metadata", "name"), "m1");
    assert_null(json_object_get(out, "data"));
    json_decref(out);

    assert_int_equal(kc_list(m, &kc_configmaps, "meta", "limit=1", &out), 0);
    json_t *items = json_object_get(out, "items");
    assert_true(json_array_size(items) >= 2); /* pages of one, joined */
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *it = json_array_get(items, i);
        assert_string_equal(json_string_value(json_object_get(it, "kind")),
                            "PartialObjectMetadata");
        assert_null(json_object_get(it, "data"));
    }
    json_decref(out);

    kc_watch_t *w = NULL;
    assert_int_equal(kc_watch_open(m, &kc_configmaps, "meta", "fieldSelector=metadata.name%3Dm1",
                                   "", 60, &w),
                     0);
    kc_event_type_t t = 0;
    assert_int_equal(kc_watch_next(w, 10000, &t, &out), 0);
    assert_int_equal(t, KC_ADDED);
    assert_string_equal(json_string_value(json_object_get(out, "kind")), "PartialObjectMetadata");
    assert_string_equal(str_at(out, "metadata", "name"), "m1");
    assert_null(json_object_get(out, "data"));
    json_decref(out);
    kc_watch_close(w);
    kc_client_free(m);
}

/* The fetches of test_token_source: the 2nd makes a token the server
 * refuses, the 4th fails; the others ask the server for tok/robot's. Each
 * says its token expires `life_s` from now. */
typedef struct {
    kc_client_t *admin;
    atomic_int calls;
    int64_t life_s;
} tok_fx_t;

static int tok_fetch(void *arg, char **token, int64_t *expires_s)
{
    tok_fx_t *t = arg;
    int n = atomic_fetch_add(&t->calls, 1) + 1;
    if (n == 4) return KP_EUNAVAILABLE;
    *expires_s = (int64_t)time(NULL) + t->life_s;
    if (n == 2) return (*token = strdup("not-a-token")) ? 0 : KP_ENOMEM;
    return kc_request_token(t->admin, "tok", "robot", 600, token);
}

/* The GET every step makes: 404 (KP_ENOTFOUND) as tok/robot, which may
 * read tok's ConfigMaps; 401 (KP_EINVAL) with a token the server refuses. */
static int tok_get(kc_client_t *c)
{
    json_t *out = NULL;
    int rc = kc_get(c, &kc_configmaps, "tok", "none", &out);
    json_decref(out);
    return rc;
}

/* kc_client_with_token_source: a token is fetched when made, again at the
 * first request after 80% of its lifetime (not before), used at once by the
 * client and the metadata clients made from it; a failed fetch keeps the
 * token in use and is tried again a second later. */
static void test_token_source(void **state)
{
    fx_t *f = *state;
    static const kc_resource_t roles = {"rbac.authorization.k8s.io", "v1", "roles", "Role", 1};
    static const kc_resource_t rolebindings = {"rbac.authorization.k8s.io", "v1", "rolebindings",
                                               "RoleBinding", 1};
    make_ns(f->c, "tok");
    json_t *sa = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                           "metadata", "name", "robot");
    assert_int_equal(kc_create(f->c, &kc_serviceaccounts, "tok", sa, NULL, NULL), 0);
    json_decref(sa);
    /* (not the view ClusterRole: its rules are aggregated by a controller,
     * which this fixture does not run) */
    json_t *role = json_pack("{s:s,s:s,s:{s:s},s:[{s:[s],s:[s],s:[s]}]}", "apiVersion",
                             "rbac.authorization.k8s.io/v1", "kind", "Role", "metadata", "name",
                             "cm-reader", "rules", "apiGroups", "", "resources", "configmaps",
                             "verbs", "get");
    assert_int_equal(kc_create(f->c, &roles, "tok", role, NULL, NULL), 0);
    json_decref(role);
    json_t *rb = json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "apiVersion",
                           "rbac.authorization.k8s.io/v1", "kind", "RoleBinding", "metadata", "name",
                           "robot-reads", "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind",
                           "Role", "name", "cm-reader", "subjects", "kind", "ServiceAccount",
                           "name", "robot", "namespace", "tok");
    assert_int_equal(kc_create(f->c, &rolebindings, "tok", rb, NULL, NULL), 0);
    json_decref(rb);
    /* The binding reaches the authorizer: a fixed token of the account. */
    char *fixed = NULL;
    assert_int_equal(kc_request_token(f->c, "tok", "robot", 600, &fixed), 0);
    kc_client_t *plain = NULL;
    assert_int_equal(kc_client_with_token(f->c, fixed, &plain), 0);
    free(fixed);
    double t0 = now_s();
    while (tok_get(plain) != KP_ENOTFOUND && now_s() - t0 < 10)
        tu_sleep_ms(20);
    assert_int_equal(tok_get(plain), KP_ENOTFOUND);
    kc_client_free(plain);

    tok_fx_t t = {.admin = f->c, .life_s = 2};
    atomic_init(&t.calls, 0);
    kc_client_t *c = NULL, *m = NULL;
    assert_int_equal(kc_client_with_token_source(f->c, tok_fetch, &t, &c), 0);
    double made = now_s();
    assert_int_equal(atomic_load(&t.calls), 1);
    assert_int_equal(tok_get(c), KP_ENOTFOUND);
    assert_int_equal(atomic_load(&t.calls), 1); /* not due for 1.6 s */
    assert_true(now_s() - made < 1.5);          /* (else the step above proved nothing) */

    tu_sleep_ms(1700); /* due: the 2nd fetch, a refused token, used at once */
    assert_int_equal(tok_get(c), KP_EINVAL);
    assert_int_equal(atomic_load(&t.calls), 2);
    double second = now_s();
    assert_int_equal(kc_client_metadata(c, &m), 0); /* shares it */
    assert_int_equal(tok_get(m), KP_EINVAL);
    assert_int_equal(tok_get(c), KP_EINVAL);
    assert_int_equal(atomic_load(&t.calls), 2);
    assert_true(now_s() - second < 1.5);

    tu_sleep_ms(1700); /* due: the metadata client's request fetches for both */
    assert_int_equal(tok_get(m), KP_ENOTFOUND);
    assert_int_equal(atomic_load(&t.calls), 3);
    assert_int_equal(tok_get(c), KP_ENOTFOUND);
    assert_int_equal(atomic_load(&t.calls), 3);

    tu_sleep_ms(1700); /* due: the 4th fetch fails; the 3rd's token goes on */
    assert_int_equal(tok_get(c), KP_ENOTFOUND);
    assert_int_equal(atomic_load(&t.calls), 4);
    assert_int_equal(tok_get(c), KP_ENOTFOUND);
    assert_int_equal(atomic_load(&t.calls), 4); /* again only a second later */
    tu_sleep_ms(1100);
    assert_int_equal(tok_get(c), KP_ENOTFOUND);
    assert_int_equal(atomic_load(&t.calls), 5);
    kc_client_free(m); /* the token stays the client's */
    assert_int_equal(tok_get(c), KP_ENOTFOUND);
    kc_client_free(c);

    /* A first fetch that fails: no client. */
    tok_fx_t bad = {.admin = f->c, .life_s = 2};
    atomic_init(&bad.calls, 3);
    c = (kc_client_t *)&bad;
    assert_int_equal(kc_client_with_token_source(f->c, tok_fetch, &bad, &c), KP_EUNAVAILABLE);
    assert_null(c);
}

static void test_watch_big_event(void **state)
{
    fx_t *f = *state;
    kc_client_t *c = f->c;
    make_ns(c, "wbig");
    char rvb[64];
    list_rv(c, "wbig", rvb, sizeof rvb);
    kc_watch_t *w = NULL;
    /* A ControllerRevision: its data has no size rule of its own (a
     * ConfigMap's is 1 MiB at most, as in Kubernetes). */
    assert_int_equal(kc_watch_open(c, &kc_controllerrevisions, "wbig", NULL, rvb, 60, &w), 0);
    size_t big = 2u << 20;
    char *blob = malloc(big + 1);
    assert_non_null(blob);
    for (size_t i = 0; i < big; i++)
        blob[i] = (char)('a' + i % 26);
    blob[big] = '\0';
    json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s},s:i}", "apiVersion", "apps/v1", "kind",
                          "ControllerRevision", "metadata", "name", "big", "namespace", "wbig",
                          "data", "k", blob, "revision", 1);
    assert_int_equal(kc_create(c, &kc_controllerrevisions, "wbig", o, NULL, NULL), 0);
    json_object_set_new(json_object_get(o, "metadata"), "name", json_string("small"));
    json_object_set_new(json_object_get(o, "data"), "k", json_string("s"));
    assert_int_equal(kc_create(c, &kc_controllerrevisions, "wbig", o, NULL, NULL), 0);
    json_decref(o);
    kc_event_type_t t;
    json_t *obj = NULL;
    assert_int_equal(kc_watch_next(w, 10000, &t, &obj), 0);
    assert_string_equal(str_at(obj, "data", "k"), blob);
    json_decref(obj);
    obj = NULL;
    assert_int_equal(kc_watch_next(w, 10000, &t, &obj), 0);
    assert_int_equal(t, KC_ADDED);
    assert_string_equal(str_at(obj, "metadata", "name"), "small");
    json_decref(obj);
    free(blob);
    kc_watch_close(w);
}

static void test_watch_bookmark(void **state)
{
    fx_t *f = *state;
    kc_watch_t *w = NULL;
    char rvb[64];
    list_rv(f->c, "default", rvb, sizeof rvb);
    assert_int_equal(kc_watch_open(f->c, &kc_configmaps, "default", NULL, rvb, 60, &w), 0);
    kc_event_type_t t;
    json_t *obj = NULL;
    /* kplane sends a bookmark after 10 s without events. */
    assert_int_equal(kc_watch_next(w, 15000, &t, &obj), 0);
    assert_int_equal(t, KC_BOOKMARK);
    assert_true(rv_num(obj) >= strtoll(rvb, NULL, 10));
    json_decref(obj);
    kc_watch_close(w);
}

static void test_watch_410_and_end(void **state)
{
    fx_t *f = *state;
    json_t *o = cm("default", "w410");
    assert_int_equal(kc_create(f->c, &kc_configmaps, "default", o, NULL, NULL), 0);
    json_decref(o);
    kc_watch_t *w = NULL;
    assert_int_equal(kc_watch_open(f->c, &kc_configmaps, "default", NULL, "1", 60, &w), 0);
    kc_event_type_t t;
    json_t *obj = NULL;
    assert_int_equal(kc_watch_next(w, 5000, &t, &obj), KP_ECOMPACTED);
    assert_int_equal(kc_watch_next(w, 5000, &t, &obj), KP_ECOMPACTED); /* sticky */
    assert_null(obj);
    kc_watch_close(w);

    /* timeoutSeconds=1: the server ends the stream. */
    char rvb[64];
    list_rv(f->c, "default", rvb, sizeof rvb);
    assert_int_equal(kc_watch_open(f->c, &kc_configmaps, "default", NULL, rvb, 1, &w), 0);
    double t0 = now_s();
    assert_int_equal(kc_watch_next(w, 10000, &t, &obj), KP_ECLOSED);
    assert_true(now_s() - t0 < 5);
    assert_int_equal(kc_watch_next(w, 10000, &t, &obj), KP_ECLOSED);
    kc_watch_close(w);
}

typedef struct waiter {
    kc_watch_t *w;
    int rc;
    atomic_int done;
} waiter_t;

static void *wait_next(void *arg)
{
    waiter_t *x = arg;
    kc_event_type_t t;
    json_t *obj = NULL;
    do {
        x->rc = kc_watch_next(x->w, -1, &t, &obj);
        json_decref(obj);
    } while (x->rc == 0 && t == KC_BOOKMARK);
    atomic_store(&x->done, 1);
    return NULL;
}

static void test_watch_cancel(void **state)
{
    fx_t *f = *state;
    char rvb[64];
    list_rv(f->c, "default", rvb, sizeof rvb);
    waiter_t x = {.rc = 1};
    assert_int_equal(kc_watch_open(f->c, &kc_configmaps, "default", NULL, rvb, 60, &x.w), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_next, &x), 0);
    struct timespec ts = {0, 300 * 1000000};
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&x.done), 0);
    double t0 = now_s();
    kc_watch_cancel(x.w);
    pthread_join(t, NULL);
    assert_true(now_s() - t0 < 1.0);
    assert_int_equal(x.rc, KP_ECLOSED);
    kc_event_type_t ty;
    json_t *obj = NULL;
    assert_int_equal(kc_watch_next(x.w, 0, &ty, &obj), KP_ECLOSED);
    kc_watch_close(x.w);
}

/* ---- the Unix socket of kplane server's own components ---- */

/* A server that runs components (a simulated node here) serves plain HTTP
 * on DATA/kplane.sock, mode 0600, with the same API and the same tokens:
 * requests and watches work through it, a request without the token is
 * refused, and the file goes when the server stops. */
static void test_unix_socket(void **state)
{
    (void)state;
    static const char *const one_node[] = {"--no-controllers", "--no-scheduler", "--nodes", "1",
                                           NULL};
    kpserver_t s;
    kpserver_start(&s, one_node);
    char path[700];
    snprintf(path, sizeof path, "%s/data/kplane.sock", s.dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);

    kc_config_t cfg;
    json_t *storage;
    kc_client_t *tls;
    assert_int_equal(kpserver_client(&s, &cfg, &storage, &tls), 0);
    char *admin_token = data_file(&s, "admin-token");
    kc_config_t ucfg = {.server = "http://localhost", .token = admin_token, .unix_socket = path};
    kc_client_t *c;
    assert_int_equal(kc_client_new(&ucfg, &c), 0);
    make_ns(c, "unix");
    char rvb[64];
    list_rv(c, "unix", rvb, sizeof rvb);
    kc_watch_t *w;
    assert_int_equal(kc_watch_open(c, &kc_configmaps, "unix", NULL, rvb, 60, &w), 0);
    json_t *o = cm("unix", "u1"), *got = NULL;
    assert_int_equal(kc_create(tls, &kc_configmaps, "unix", o, NULL, NULL), 0); /* over HTTPS */
    json_decref(o);
    long long rv = strtoll(rvb, NULL, 10);
    expect_event(w, KC_ADDED, "u1", &rv);
    kc_watch_close(w);
    assert_int_equal(kc_get(c, &kc_configmaps, "unix", "u1", &got), 0);
    assert_string_equal(str_at(got, "data", "k"), "v");
    json_decref(got);
    kc_client_free(c);

    /* A second server on this data dir does not take the socket over. */
    char cmd[1600];
    snprintf(cmd, sizeof cmd,
             "timeout 30 '%s' server --data-dir '%s/data' --listen 127.0.0.1:0 --nodes 1 "
             ">/dev/null 2>&1",
             KPLANE_BIN, s.dir);
    int st2 = system(cmd);
    assert_true(WIFEXITED(st2) && WEXITSTATUS(st2) != 0);
    assert_int_equal(kc_client_new(&ucfg, &c), 0);
    assert_int_equal(kc_get(c, &kc_configmaps, "unix", "u1", &got), 0);
    json_decref(got);
    kc_client_free(c);

    ucfg.token = NULL; /* the socket asks for the token like the port */
    assert_int_equal(kc_client_new(&ucfg, &c), 0);
    assert_int_equal(kc_get(c, &kc_configmaps, "unix", "u1", &got), KP_EINVAL);
    assert_null(got);
    kc_client_free(c);
    kc_client_free(tls);
    json_decref(storage);
    free(admin_token);

    assert_int_equal(kill(s.pid, SIGTERM), 0);
    assert_int_equal(waitpid(s.pid, NULL, 0), s.pid);
    s.pid = 0;
    assert_int_equal(stat(path, &st), -1);
    kpserver_stop(&s); /* removes the data dir */
}

static void test_server_kill(void **state)
{
    fx_t *f = *state;
    char rvb[64];
    list_rv(f->c, "default", rvb, sizeof rvb);
    waiter_t x = {.rc = 1};
    assert_int_equal(kc_watch_open(f->c, &kc_configmaps, "default", NULL, rvb, 60, &x.w), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_next, &x), 0);
    struct timespec ts = {0, 200 * 1000000};
    nanosleep(&ts, NULL);
    kpserver_kill(&f->s);
    for (int i = 0; i < 100 && !atomic_load(&x.done); i++)
        nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&x.done), 1); /* an answer, not a hang */
    pthread_join(t, NULL);
    assert_true(x.rc == KP_EUNAVAILABLE || x.rc == KP_ECLOSED);
    kc_watch_close(x.w);
    json_t *out = NULL;
    assert_int_equal(kc_get(f->c, &kc_namespaces, NULL, "default", &out), KP_EUNAVAILABLE);
    kc_watch_t *w = NULL;
    assert_int_equal(kc_watch_open(f->c, &kc_configmaps, "default", NULL, rvb, 60, &w),
                     KP_EUNAVAILABLE);
}

/* ---- a fake server: canned answers, byte-exact ---- */

typedef struct fake {
    int fd, port;
    pthread_t t;
    atomic_int stop;
    const char *resp; /* the whole answer, sent on every connection */
    size_t chunk;     /* bytes per write (1: one byte at a time) */
    size_t flood;     /* after resp: this many 'x' bytes */
    atomic_int conns;
} fake_t;

static void *fake_run(void *arg)
{
    fake_t *f = arg;
    while (!atomic_load(&f->stop)) {
        struct timeval tv = {0, 50000};
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(f->fd, &rd);
        if (select(f->fd + 1, &rd, NULL, NULL, &tv) <= 0) continue;
        int c = accept(f->fd, NULL, NULL);
        if (c < 0) continue;
        atomic_fetch_add(&f->conns, 1);
        char req[8192];
        size_t got = 0;
        while (got < sizeof req - 1) { /* the request head; bodies are small */
            ssize_t n = recv(c, req + got, sizeof req - 1 - got, 0);
            if (n <= 0) break;
            got += (size_t)n;
            req[got] = '\0';
            if (strstr(req, "\r\n\r\n")) break;
        }
        size_t len = strlen(f->resp);
        for (size_t off = 0; off < len;) {
            size_t n = len - off < f->chunk ? len - off : f->chunk;
            if (send(c, f->resp + off, n, MSG_NOSIGNAL) <= 0) break;
            off += n;
        }
        static const char xs[65536] = {[0 ... 65535] = 'x'};
        for (size_t sent = 0; sent < f->flood;) {
            ssize_t n = send(c, xs, sizeof xs, MSG_NOSIGNAL);
            if (n <= 0) break;
            sent += (size_t)n;
        }
        close(c);
    }
    return NULL;
}

static void fake_start(fake_t *f, const char *resp, size_t chunk)
{
    memset(f, 0, sizeof *f);
    f->resp = resp;
    f->chunk = chunk ? chunk : 1u << 20;
    f->fd = tu_loopback_socket(&f->port);
    assert_int_equal(listen(f->fd, 16), 0);
    assert_int_equal(pthread_create(&f->t, NULL, fake_run, f), 0);
}

static void fake_stop(fake_t *f)
{
    atomic_store(&f->stop, 1);
    pthread_join(f->t, NULL);
    close(f->fd);
}

static kc_client_t *fake_client(const fake_t *f)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
    kc_config_t cfg = {.server = url, .timeout_ms = 5000};
    kc_client_t *c = NULL;
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    return c;
}

#define STREAM_HEAD "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"

static void next_is(kc_watch_t *w, int want_rc, kc_event_type_t want_type, const char *name)
{
    kc_event_type_t t = 0;
    json_t *obj = NULL;
    int rc = kc_watch_next(w, 5000, &t, &obj);
    assert_int_equal(rc, want_rc);
    if (!rc) {
        assert_int_equal(t, want_type);
        if (name) assert_string_equal(str_at(obj, "metadata", "name"), name);
    } else {
        assert_null(obj);
    }
    json_decref(obj);
}

static void test_wire_watch_framing(void **state)
{
    (void)state;
    /* One byte per write; CRLF, blank lines, an unknown type, and a last
     * line without its newline. */
    fake_t f;
    fake_start(&f,
               STREAM_HEAD "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\r\n"
                           "\n\n"
                           "{\"type\":\"FUTURE\",\"object\":{}}\n"
                           "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}\n"
                           "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":"
                           "{\"resourceVersion\":\"9\"}}}\n"
                           "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\"}}}",
               1);
    kc_client_t *c = fake_client(&f);
    kc_watch_t *w = NULL;
    assert_int_equal(kc_watch_open(c, &kc_pods, "ns", NULL, "5", 30, &w), 0);
    next_is(w, 0, KC_ADDED, "a");
    next_is(w, 0, KC_MODIFIED, "b");
    next_is(w, 0, KC_BOOKMARK, NULL);
    next_is(w, 0, KC_DELETED, "c");
    next_is(w, KP_ECLOSED, 0, NULL);
    kc_watch_close(w);
    kc_client_free(c);
    fake_stop(&f);
}

static void test_wire_watch_errors(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int rc;
    } cases[] = {
        {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}"
         "\n",
         KP_ECOMPACTED},
        {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500}}\n", KP_EUNAVAILABLE},
        {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}\n", KP_ECORRUPT},
        {"{\"object\":{}}\n", KP_ECORRUPT},
        {"[1,2]\n", KP_ECORRUPT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char resp[1024];
        /* A good event first: it comes out before the error. */
        snprintf(resp, sizeof resp,
                 STREAM_HEAD "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"ok\"}}}\n"
                             "%s{\"type\":\"ADDED\",\"object\":{}}\n",
                 cases[i].body);
        fake_t f;
        fake_start(&f, resp, 7);
        kc_client_t *c = fake_client(&f);
        kc_watch_t *w = NULL;
        assert_int_equal(kc_watch_open(c, &kc_pods, NULL, NULL, "", 30, &w), 0);
        next_is(w, 0, KC_ADDED, "ok");
        next_is(w, cases[i].rc, 0, NULL);
        next_is(w, cases[i].rc, 0, NULL); /* sticky: nothing after the error */
        kc_watch_close(w);
        kc_client_free(c);
        fake_stop(&f);
    }
}

static void test_wire_watch_line_cap(void **state)
{
    (void)state;
    fake_t f;
    fake_start(&f,
               STREAM_HEAD "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"ok\"}}}\n"
                           "{\"type\":\"ADDED\",\"object\":{\"data\":\"",
               0);
    f.flood = (64u << 20) + (1u << 20); /* past the 64 MiB line cap */
    kc_client_t *c = fake_client(&f);
    kc_watch_t *w = NULL;
    assert_int_equal(kc_watch_open(c, &kc_pods, NULL, NULL, "", 30, &w), 0);
    next_is(w, 0, KC_ADDED, "ok");
    kc_event_type_t t;
    json_t *obj = NULL;
    assert_int_equal(kc_watch_next(w, 20000, &t, &obj), KP_ETOOLARGE);
    kc_watch_close(w);
    kc_client_free(c);
    fake_stop(&f);
}

static void test_wire_answers(void **state)
{
    (void)state;
    static const struct {
        const char *resp;
        int rc, code;
    } cases[] = {
        {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
         "{\"kind\":\"Status\",\"code\":429,\"reason\":\"TooManyRequests\"}",
         KP_EBUSY, 429},
        {"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n<html>down</html>",
         KP_EUNAVAILABLE, 503},
        {"HTTP/1.1 409 Conflict\r\nConnection: close\r\n\r\n", KP_ECONFLICT, 409},
        {"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n"
         "{\"kind\":\"Status\",\"code\":403,\"message\":\"no\"}",
         KP_EINVAL, 403},
        {"HTTP/1.1 410 Gone\r\nConnection: close\r\n\r\n{\"kind\":\"Status\",\"code\":410}",
         KP_ECOMPACTED, 410},
        {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nnot json", KP_ECORRUPT, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fake_t f;
        fake_start(&f, cases[i].resp, 0);
        kc_client_t *c = fake_client(&f);
        json_t *obj = json_pack("{s:{s:s}}", "metadata", "name", "x"), *out = NULL, *st = NULL;
        int rc = kc_create(c, &kc_pods, "ns", obj, &out, &st);
        assert_int_equal(rc, cases[i].rc);
        assert_null(out);
        if (cases[i].code) {
            assert_non_null(st); /* a Status even when the body was none */
            assert_int_equal(json_integer_value(json_object_get(st, "code")), cases[i].code);
        } else {
            assert_null(st);
        }
        json_decref(st);
        json_decref(obj);
        /* The same answer to a watch is refused at open; a 200 opens, and
         * its body is then no event. */
        kc_watch_t *w = NULL;
        rc = kc_watch_open(c, &kc_pods, "ns", NULL, "", 30, &w);
        if (cases[i].code) {
            assert_int_equal(rc, cases[i].rc);
            assert_null(w);
        } else {
            assert_int_equal(rc, 0);
            next_is(w, KP_ECORRUPT, 0, NULL);
            kc_watch_close(w);
        }
        kc_client_free(c);
        fake_stop(&f);
    }
}

static void test_wire_list_loop(void **state)
{
    (void)state;
    /* A server that answers every page with the same continue token. */
    fake_t f;
    fake_start(&f,
               "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
               "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"7\",\"continue\":\"c1\"},"
               "\"items\":[{\"metadata\":{\"name\":\"a\"}}]}",
               0);
    kc_client_t *c = fake_client(&f);
    json_t *out = NULL;
    assert_int_equal(kc_list(c, &kc_pods, NULL, NULL, &out), KP_ECORRUPT);
    assert_null(out);
    assert_int_equal(atomic_load(&f.conns), 2);
    kc_client_free(c);
    fake_stop(&f);
}

/* argv[1], if given, runs only the tests whose names match it (a glob). */
int main(int argc, char **argv)
{
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest offline[] = {
        cmocka_unit_test(test_client_new_errors), cmocka_unit_test(test_wire_watch_framing),
        cmocka_unit_test(test_wire_watch_errors), cmocka_unit_test(test_wire_watch_line_cap),
        cmocka_unit_test(test_wire_answers),      cmocka_unit_test(test_wire_list_loop),
    };
    const struct CMUnitTest live[] = {
        cmocka_unit_test(test_config_good),       cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_crud_configmap),    cmocka_unit_test(test_other_errors),
        cmocka_unit_test(test_pods_bind_status),  cmocka_unit_test(test_patches),
        cmocka_unit_test(test_concurrency),       cmocka_unit_test(test_list_pages),
        cmocka_unit_test(test_rate_limit),        cmocka_unit_test(test_watch_events),
        cmocka_unit_test(test_watch_big_event),   cmocka_unit_test(test_watch_bookmark),
        cmocka_unit_test(test_watch_410_and_end), cmocka_unit_test(test_watch_cancel),
        cmocka_unit_test(test_metadata_client),   cmocka_unit_test(test_token_source),
    };
    const struct CMUnitTest kill[] = {
        cmocka_unit_test(test_unix_socket),
        cmocka_unit_test(test_server_kill),
    };
    int fails = cmocka_run_group_tests_name("offline", offline, NULL, NULL);
    fails += cmocka_run_group_tests_name("live", live, fx_setup, fx_teardown);
    fails += cmocka_run_group_tests_name("kill", kill, fx_setup, fx_teardown);
    return fails;
}
