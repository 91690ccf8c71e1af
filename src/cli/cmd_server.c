/*
 * cmd_server.c -- `kplane server` (everything in one process) and
 * `kplane apiserver` (the API server alone).
 *
 *   kplane server    [--data-dir DIR] [--listen ADDR:PORT] [--store URL]
 *                    [--nodes N | --runtime process] [--no-controllers] [--no-scheduler]
 *                    [--kube-api-qps Q] [--kube-api-burst B]
 *                    [--node-monitor-grace-period D] [--node-monitor-period D]
 *                    [--node-lease-duration-seconds N]
 *   kplane apiserver  --store URL [--data-dir DIR] [--listen ADDR:PORT]
 *   both:            [--default-not-ready-toleration-seconds N]
 *                    [--default-unreachable-toleration-seconds N]
 *                    [--token-auth-file FILE] [--authorization-mode MODES]
 *                    [--anonymous-auth BOOL]
 *                    [--service-account-signing-key-file FILE]
 *                    [--service-account-key-file FILE] [--service-account-issuer URL]
 *                    [--max-requests-inflight N] [--max-mutating-requests-inflight N]
 *                    [--max-connections N] [--max-unauthenticated-connections N]
 *                    [--read-header-timeout D] [--idle-timeout D] [--request-body-timeout D]
 *                    [--watch-cache-bytes N] [--watch-queue-bytes N]
 *                    [--service-cluster-ip-range CIDR] [--service-node-port-range A-B]
 *                    [--encryption-provider-config FILE]
 *                    [--audit-policy-file FILE] [--audit-log-path PATH|-]
 *                    [--audit-log-maxsize MB] [--audit-log-maxbackup N] [--audit-log-maxage DAYS]
 *                    [--enable-labs[=BOOL]]
 *
 * Both open the store, start the API server, write DIR/kubeconfig for the
 * admin (kubernetes-admin in system:masters: the client certificate
 * DIR/admin.crt and admin.key, signed by the cluster CA; the admin token of
 * DIR/admin-token when the CA's key is not in DIR; both created on first
 * start), print how to point kubectl at it, and run until SIGINT or
 * SIGTERM. `server` also runs the controller manager, the scheduler and N
 * simulated nodes (3 by default) in the same process, each a client of the
 * API over HTTPS like any other (no shortcut around the API: the boundaries
 * stay the same as when they run apart); their metrics join the API
 * server's /metrics.
 *
 * Secrets at rest: --encryption-provider-config names Kubernetes'
 * EncryptionConfiguration (store/encrypt.h), and the store the API server
 * gets seals and opens the values it covers. Without the flag `server`
 * uses DIR/encryption-config.yaml, made (mode 0600) at its first start with
 * one random aescbc key for Secrets; `apiserver` encrypts nothing, as
 * kube-apiserver does not (its peers would need the same key).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apiserver/apiserver.h"
#include "cli/cli.h"
#include "cli/components.h"
#include "client/client.h"
#include "lab/lab.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/encrypt.h"
#include "store/store.h"

static void usage(FILE *out, const char *cmd)
{
    fprintf(out,
            "Usage: kplane %s [--data-dir DIR] [--listen ADDR:PORT] [--store URL]\n"
            "\n"
            "  --data-dir DIR     state, admin token and kubeconfig (default: $KPLANE_DATA_DIR,\n"
            "                     else /var/lib/kplane as root, else ~/.local/share/kplane)\n"
            "  --listen ADDR:PORT where to serve (default 127.0.0.1:6443; port 0: any free)\n"
            "  --store URL        lmdb:DIR (default lmdb:<data-dir>/store), or\n"
            "                     etcd://HOST:PORT[,HOST:PORT...] (an etcd 3.4+ cluster)\n",
            cmd);
    if (!strcmp(cmd, "server"))
        fputs("  --nodes N          simulated nodes to run (default 3; 0: none)\n"
              "  --runtime process  run one real node instead (named after the host, else\n"
              "                     kplane-node-0): pods run as local processes, logs under\n"
              "                     DIR/node, `kubectl logs` works\n"
              "  --no-controllers   do not run the controller manager\n"
              "  --no-scheduler     do not run the scheduler\n"
              "  --kube-api-qps Q, --kube-api-burst B\n"
              "                     rate limit of the components' API client (default off)\n",
              out);
    if (!strcmp(cmd, "server"))
        fputs("  --node-monitor-grace-period D  a node silent this long goes Ready Unknown and\n"
              "                     is tainted unreachable (Go duration; default 40s)\n"
              "  --node-monitor-period D  how often node health is checked (default 5s)\n"
              "  --node-lease-duration-seconds N  the simulated nodes' Lease duration; they\n"
              "                     renew it every N/4 s (default 40)\n",
              out);
    fputs("  --token-auth-file FILE  more bearer tokens, Kubernetes' static token file (CSV:\n"
          "                     token,user,uid[,\"group1,group2\"]); the admin token stays valid\n"
          "  --authorization-mode MODES  who may do what, asked in this order: RBAC, Node,\n"
          "                     AlwaysAllow, comma-separated (default Node,RBAC); the group\n"
          "                     system:masters may always do everything\n"
          "  --anonymous-auth BOOL  a request with no credentials is system:anonymous, in group\n"
          "                     system:unauthenticated (true, the default), or gets 401 (false)\n"
          "  --service-account-signing-key-file FILE  the PEM private key (ECDSA P-256 or RSA)\n"
          "                     that signs ServiceAccount tokens (default: DIR/sa.key, made at\n"
          "                     first start)\n"
          "  --service-account-key-file FILE  more PEM keys that verify ServiceAccount tokens\n"
          "                     (public keys, certificates or private keys; repeatable)\n"
          "  --service-account-issuer URL  the tokens' issuer (default\n"
          "                     https://kubernetes.default.svc.cluster.local)\n",
          out);
    fputs("  --default-not-ready-toleration-seconds N, --default-unreachable-toleration-seconds N\n"
          "                     tolerationSeconds of the not-ready and unreachable NoExecute\n"
          "                     tolerations given to every pod (default 300)\n",
          out);
    fputs("  --max-requests-inflight N, --max-mutating-requests-inflight N\n"
          "                     read-only and mutating requests served at once; more get 429\n"
          "                     with Retry-After (default 400 and 200; watches not counted)\n"
          "  --max-connections N  open TCP connections; more are closed at accept (16384)\n"
          "  --max-unauthenticated-connections N  connections that have not yet sent an\n"
          "                     authenticated request; the oldest is closed for a new one\n"
          "                     beyond (default 256)\n"
          "  --read-header-timeout D  a connection with no authenticated request is closed\n"
          "                     after D (Go duration; default 32s)\n"
          "  --idle-timeout D   a connection quiet for D is closed (default 90s)\n"
          "  --request-body-timeout D  a request body must arrive within D (default 60s)\n",
          out);
    fputs("  --watch-cache-bytes N  watch history kept per resource, in bytes of memory\n"
          "                     (suffix Ki, Mi or Gi; default 64Mi); a watch from an older\n"
          "                     resourceVersion gets 410 Gone\n"
          "  --watch-queue-bytes N  events queued for one watcher, in bytes of JSON (default\n"
          "                     1Mi); a watcher further behind is closed and must re-watch\n",
          out);
    fputs("  --audit-policy-file FILE  which requests the audit log records, and how much of\n"
          "                     them: an audit.k8s.io/v1 Policy (YAML)\n"
          "  --audit-log-path PATH  the audit log: one JSON Event a line (\"-\": standard\n"
          "                     output); nothing is logged without both flags\n"
          "  --audit-log-maxsize MB  rotate the log before it passes MB megabytes (default\n"
          "                     0: 100); the old file becomes NAME-<UTC time>.EXT\n"
          "  --audit-log-maxbackup N  rotated files kept, the newest (default 0: all)\n"
          "  --audit-log-maxage DAYS  rotated files older than this are removed (default\n"
          "                     0: never)\n",
          out);
    fputs("  --service-cluster-ip-range CIDR  the IPv4 range Services' ClusterIPs come from\n"
          "                     (default 10.96.0.0/12; prefix 12 to 30; the first address is\n"
          "                     the kubernetes Service's; no IPv6 or dual-stack)\n"
          "  --service-node-port-range A-B  the NodePorts of NodePort and LoadBalancer\n"
          "                     Services (default 30000-32767)\n",
          out);
    fputs("  --enable-labs[=BOOL]  let the dashboard (/ui/) run `kplane lab run NAME` as a\n"
          "                     child of this server for a user allowed POST on /ui/api/labs/*\n"
          "                     (default: true for kplane server listening on 127.x, else false)\n",
          out);
    fputs("  --encryption-provider-config FILE  Kubernetes' EncryptionConfiguration: which\n"
          "                     resources are encrypted at rest, with which keys (aescbc,\n"
          "                     aesgcm, secretbox, identity)",
          out);
    fputs(!strcmp(cmd, "server") ? "; default DIR/encryption-config.yaml,\n"
                                   "                     made at the first start: Secrets with "
                                   "one aescbc key\n"
                                 : " (default: none)\n",
          out);
}

/* The encryption config of the API server's store: `flag`'s file, else for
 * `server` DIR/encryption-config.yaml, made (mode 0600, one random aescbc
 * key for Secrets, identity second) when missing. *out NULL: none. A bad
 * file stops the start, naming the field. */
static int encryption_setup(const char *cmd, const char *flag, const char *dir, int all,
                            store_enc_t **out)
{
    *out = NULL;
    char path[CLI_PATH_MAX + 32];
    if (!flag && !all) return 0;
    if (flag)
        snprintf(path, sizeof path, "%s", flag);
    else
        snprintf(path, sizeof path, "%s/encryption-config.yaml", dir);
    int fd = flag ? -1 : open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        char *text = NULL;
        int rc = store_enc_default_config(&text);
        size_t n = text ? strlen(text) : 0;
        int ok = !rc && write(fd, text, n) == (ssize_t)n && !fsync(fd);
        free(text);
        close(fd);
        if (!ok) {
            unlink(path);
            return cli_fail(rc ? rc : KP_EIO, "writing %s", path);
        }
        log_info("server", "%s: a new key encrypts Secrets at rest; keep this file", path);
    } else if (!flag && errno != EEXIST) {
        return cli_fail(KP_EIO, "creating %s (%s)", path, strerror(errno));
    }
    struct stat st;
    if (!stat(path, &st) && (st.st_mode & 077))
        log_warn("server", "%s has mode %03o: others may read the keys (chmod 600 %s)", path,
                 (unsigned)(st.st_mode & 0777), path);
    char err[1024], desc[512];
    int rc = store_enc_load(path, out, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kplane: %s: --encryption-provider-config: %s\n", cmd, err);
        return CLI_EXIT_FAIL;
    }
    store_enc_describe(*out, desc, sizeof desc);
    log_info("server", "encryption at rest from %s: %s", path, desc);
    return 0;
}

/* "N", "NKi", "NMi" or "NGi": at least 64 KiB, at most 64 GiB. */
static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    unsigned long long n = strtoull(s, &end, 10);
    if (end == s || *s == '-') return KP_EINVAL;
    unsigned shift = !strcmp(end, "Ki") ? 10 : !strcmp(end, "Mi") ? 20 : !strcmp(end, "Gi") ? 30
                     : *end ? 99 : 0;
    if (shift == 99 || n > (64ull << 30) >> shift) return KP_EINVAL;
    n <<= shift;
    if (n < (64u << 10)) return KP_EINVAL;
    *out = (size_t)n;
    return 0;
}

static int components_metrics(void *arg, char **text)
{
    return cli_components_metrics(arg, text);
}

static int components_running(void *arg, const char *name)
{
    return cli_components_running(arg, name);
}

/* Long options without a short letter (node lifecycle and admission). */
enum {
    OPT_NODE_GRACE = 0x100,
    OPT_NODE_PERIOD,
    OPT_NODE_LEASE,
    OPT_TOL_NOT_READY,
    OPT_TOL_UNREACHABLE,
    OPT_TOKEN_FILE,
    OPT_MAX_INFLIGHT,
    OPT_MAX_MUTATING,
    OPT_MAX_CONNS,
    OPT_MAX_UNAUTH,
    OPT_HEADER_TIMEOUT,
    OPT_IDLE_TIMEOUT,
    OPT_BODY_TIMEOUT,
    OPT_WATCH_CACHE_BYTES,
    OPT_WATCH_QUEUE_BYTES,
    OPT_SVC_CIDR,
    OPT_SVC_PORTS,
    OPT_AUTHZ_MODE,
    OPT_ANONYMOUS,
    OPT_ENC_CONFIG,
    OPT_AUDIT_POLICY,
    OPT_AUDIT_PATH,
    OPT_AUDIT_MAXSIZE,
    OPT_AUDIT_MAXBACKUP,
    OPT_AUDIT_MAXAGE,
    OPT_ENABLE_LABS
};

/* The kubeconfigs kplane server writes in DIR, and their users: [0] the
 * admin's (a client certificate kept in DIR, as kubeadm's admin.conf), then
 * the components' own, for a controller manager or scheduler run apart
 * (`kplane scheduler --kubeconfig DIR/scheduler.kubeconfig`), a certificate
 * each made at every start. */
static const struct {
    const char *file, *user;
} kubeconfigs[] = {{"kubeconfig", NULL},
                   {"controller-manager.kubeconfig", "system:kube-controller-manager"},
                   {"scheduler.kubeconfig", "system:kube-scheduler"}};
#define NKUBECONFIGS (sizeof kubeconfigs / sizeof kubeconfigs[0])

/* What a start begins on threads of its own while it reads and makes its
 * other files and opens the store: the TLS files (loaded, or on a first
 * start made: keys generated, signed and fsynced) and then the kubeconfigs'
 * client certificates (when the CA's key is here), the API's type facts
 * (apiserver_facts_begin()), and, when components run here, the clients'
 * library (kc_library_hold(): made after the "serving" line, its 0.5-1 ms
 * of CPU met the first requests). */
typedef struct prestart {
    const char *dir, *host;
    apiserver_tls_t tls;
    int rc;
    char *crt[NKUBECONFIGS], *key[NKUBECONFIGS]; /* PEM, NULL: none */
    int cert_rc[NKUBECONFIGS];
    pthread_t thread;
    int started, joined;
    apiserver_facts_t *facts; /* NULL: apiserver_start() parses them */
    /* The admin token, and DIR/sa.key unless want_sa_key is 0 (a signing
     * key given): read, or made on a first start. */
    int want_sa_key;
    char *token, *sa_key;
    int token_rc, sa_rc;
    pthread_t keys_thread;
    int keys_started, keys_joined;
    int want_client_lib, lib_rc;
    pthread_t lib_thread;
    int lib_started, lib_held; /* lib_held: joined, a reference to drop */
} prestart_t;

static void *keys_main(void *arg)
{
    prestart_t *p = arg;
    p->token_rc = apiserver_admin_token(p->dir, &p->token);
    if (p->want_sa_key) p->sa_rc = apiserver_sa_key(p->dir, &p->sa_key);
    return NULL;
}

/* The admin token and the ServiceAccount key (the caller's, on success). */
static void prestart_keys(prestart_t *p, char **token, int *token_rc, char **sa_key, int *sa_rc)
{
    if (!p->keys_joined && p->keys_started)
        pthread_join(p->keys_thread, NULL);
    else if (!p->keys_joined)
        keys_main(p); /* no thread to be had: here */
    p->keys_joined = 1;
    *token = p->token, *token_rc = p->token_rc, *sa_key = p->sa_key, *sa_rc = p->sa_rc;
    p->token = p->sa_key = NULL;
}

static void *tls_main(void *arg)
{
    prestart_t *p = arg;
    if ((p->rc = apiserver_tls_load(p->dir, p->host, &p->tls)) || !p->tls.ca_key_pem) return NULL;
    for (size_t i = 0; i < NKUBECONFIGS; i++)
        p->cert_rc[i] =
            i ? apiserver_client_cert(&p->tls, kubeconfigs[i].user, NULL, &p->crt[i], &p->key[i])
              : apiserver_admin_cert(p->dir, &p->tls, &p->crt[0], &p->key[0]);
    return NULL;
}

static void *client_lib_main(void *arg)
{
    prestart_t *p = arg;
    p->lib_rc = kc_library_hold();
    return NULL;
}

static void prestart_begin(prestart_t *p)
{
    p->started = !pthread_create(&p->thread, NULL, tls_main, p);
    p->keys_started = !pthread_create(&p->keys_thread, NULL, keys_main, p);
    if (p->want_client_lib) /* no thread: the first client makes it */
        p->lib_started = !pthread_create(&p->lib_thread, NULL, client_lib_main, p);
    if (apiserver_facts_begin(&p->facts)) p->facts = NULL;
}

/* The TLS files, into *out (the caller's to free, on success). Joins the
 * clients' library too (prestart_release_lib() drops it). */
static int prestart_tls(prestart_t *p, apiserver_tls_t *out)
{
    if (!p->joined && p->started)
        pthread_join(p->thread, NULL);
    else if (!p->joined)
        tls_main(p); /* no thread to be had: here */
    p->joined = 1;
    if (p->lib_started) {
        pthread_join(p->lib_thread, NULL);
        p->lib_started = 0;
        p->lib_held = !p->lib_rc;
    }
    *out = p->tls;
    return p->rc;
}

/* Drop the start's reference to the clients' library (after the clients
 * are made, or when none will be). */
static void prestart_release_lib(prestart_t *p)
{
    if (p->lib_held) kc_library_release();
    p->lib_held = 0;
}

static void prestart_free_certs(prestart_t *p)
{
    for (size_t i = 0; i < NKUBECONFIGS; i++) {
        free(p->crt[i]);
        free(p->key[i]);
        p->crt[i] = p->key[i] = NULL;
    }
}

/* Wait for all and drop them (a start given up). */
static void prestart_drop(prestart_t *p)
{
    apiserver_tls_t t;
    if (!prestart_tls(p, &t)) apiserver_tls_free(&t);
    prestart_free_certs(p);
    char *token, *sa_key;
    int token_rc, sa_rc;
    prestart_keys(p, &token, &token_rc, &sa_key, &sa_rc);
    free(token);
    free(sa_key);
    apiserver_facts_free(p->facts);
    p->facts = NULL;
    prestart_release_lib(p);
}

/* The kubeconfigs, with p's certificates (then freed); the admin's has the
 * admin token when the CA's key is not here (another API server of the
 * cluster, given ca.crt but not ca.key), and the components' are not
 * written then. A failure is logged: the server runs without them. */
static void write_kubeconfigs(prestart_t *p, const char *host, int port, const apiserver_tls_t *tls,
                              const char *token)
{
    for (size_t i = 0; i < NKUBECONFIGS && (!i || tls->ca_key_pem); i++) {
        int rc = p->cert_rc[i];
        if (rc && !i)
            log_warn("server",
                     "the admin's client certificate in %s: %s; the kubeconfig has the token",
                     p->dir, err_str(rc));
        if (!i)
            rc = apiserver_write_kubeconfig(p->dir, host, port, tls->ca_pem, token, p->crt[0],
                                            p->key[0]);
        else if (!rc)
            rc = apiserver_write_kubeconfig_as(p->dir, kubeconfigs[i].file, kubeconfigs[i].user,
                                               host, port, tls->ca_pem, NULL, p->crt[i], p->key[i]);
        if (rc) log_warn("server", "writing %s/%s: %s", p->dir, kubeconfigs[i].file, err_str(rc));
    }
    prestart_free_certs(p);
}

static int serve(const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"data-dir", required_argument, NULL, 'd'},
        {"listen", required_argument, NULL, 'l'},
        {"store", required_argument, NULL, 's'},
        {"nodes", required_argument, NULL, 'n'},
        {"no-controllers", no_argument, NULL, 'C'},
        {"no-scheduler", no_argument, NULL, 'S'},
        {"runtime", required_argument, NULL, 'r'},
        {"kube-api-qps", required_argument, NULL, 'q'},
        {"kube-api-burst", required_argument, NULL, 'b'},
        {"node-monitor-grace-period", required_argument, NULL, OPT_NODE_GRACE},
        {"node-monitor-period", required_argument, NULL, OPT_NODE_PERIOD},
        {"node-lease-duration-seconds", required_argument, NULL, OPT_NODE_LEASE},
        {"default-not-ready-toleration-seconds", required_argument, NULL, OPT_TOL_NOT_READY},
        {"default-unreachable-toleration-seconds", required_argument, NULL, OPT_TOL_UNREACHABLE},
        {"token-auth-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"authorization-mode", required_argument, NULL, OPT_AUTHZ_MODE},
        {"anonymous-auth", required_argument, NULL, OPT_ANONYMOUS},
        {"max-requests-inflight", required_argument, NULL, OPT_MAX_INFLIGHT},
        {"max-mutating-requests-inflight", required_argument, NULL, OPT_MAX_MUTATING},
        {"max-connections", required_argument, NULL, OPT_MAX_CONNS},
        {"max-unauthenticated-connections", required_argument, NULL, OPT_MAX_UNAUTH},
        {"read-header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
        {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
        {"request-body-timeout", required_argument, NULL, OPT_BODY_TIMEOUT},
        {"watch-cache-bytes", required_argument, NULL, OPT_WATCH_CACHE_BYTES},
        {"watch-queue-bytes", required_argument, NULL, OPT_WATCH_QUEUE_BYTES},
        {"service-cluster-ip-range", required_argument, NULL, OPT_SVC_CIDR},
        {"service-node-port-range", required_argument, NULL, OPT_SVC_PORTS},
        {"encryption-provider-config", required_argument, NULL, OPT_ENC_CONFIG},
        {"audit-policy-file", required_argument, NULL, OPT_AUDIT_POLICY},
        {"audit-log-path", required_argument, NULL, OPT_AUDIT_PATH},
        {"audit-log-maxsize", required_argument, NULL, OPT_AUDIT_MAXSIZE},
        {"audit-log-maxbackup", required_argument, NULL, OPT_AUDIT_MAXBACKUP},
        {"audit-log-maxage", required_argument, NULL, OPT_AUDIT_MAXAGE},
        {"enable-labs", optional_argument, NULL, OPT_ENABLE_LABS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *data_flag = NULL, *listen = "127.0.0.1:6443", *url_flag = NULL;
    const char *token_file = NULL, *svc_cidr = NULL, *svc_ports = NULL, *authz_mode = NULL;
    const char *enc_flag = NULL;
    int no_anonymous = 0;
    int enable_labs = -1; /* -1: kplane server on loopback */
    const char *sa_signing_file = NULL, *sa_issuer = NULL;
    const char *sa_key_files[8];
    size_t n_sa_key_files = 0;
    const char *audit_policy_file = NULL, *audit_path = NULL;
    int audit_num[3] = {0, 0, 0}; /* maxsize (MB), maxbackup, maxage (days) */
    size_t watch_cache_bytes = 0, watch_queue_bytes = 0; /* 0: the API server's defaults */
    int all = !strcmp(cmd, "server");
    cli_components_opts_t co = {.controllers = all, .scheduler = all, .nodes = all ? 3 : 0};
    double qps = 0;
    long burst = 0;
    long tol_not_ready = 300, tol_unreachable = 300, ms;
    apiserver_config_t lim = {0}; /* the listener's limits; 0: the server's defaults */
    char *end;
    int c;
    opterr = 0;
    optind = 0; /* 0: full reinitialisation in glibc */
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': data_flag = optarg; break;
        case 'l': listen = optarg; break;
        case 's': url_flag = optarg; break;
        case 'n':
            co.nodes = (int)strtol(optarg, &end, 10);
            if (!all || *end || co.nodes < 0) return cli_usage_error(cmd, "bad --nodes");
            break;
        case 'C': co.controllers = 0; break;
        case 'S': co.scheduler = 0; break;
        case 'r':
            if (!all || (strcmp(optarg, "process") && strcmp(optarg, "sim")))
                return cli_usage_error(cmd, "bad --runtime (process or sim)");
            co.node_runtime = optarg;
            break;
        case 'q':
            qps = strtod(optarg, &end);
            if (*end || qps < 0) return cli_usage_error(cmd, "bad --kube-api-qps");
            break;
        case 'b':
            burst = strtol(optarg, &end, 10);
            if (*end || burst < 0) return cli_usage_error(cmd, "bad --kube-api-burst");
            break;
        case OPT_NODE_GRACE:
        case OPT_NODE_PERIOD:
            if (!all || (ms = cli_duration_ms(optarg)) <= 0 || ms > 0x7fffffff)
                return cli_usage_error(cmd, "bad duration '%s'", optarg);
            if (c == OPT_NODE_GRACE) co.node_monitor_grace_ms = (int)ms;
            else co.node_monitor_period_ms = (int)ms;
            break;
        case OPT_NODE_LEASE:
            co.node_lease_s = (int)strtol(optarg, &end, 10);
            if (!all || *end || co.node_lease_s <= 0 || co.node_lease_s > 3600)
                return cli_usage_error(cmd, "bad --node-lease-duration-seconds");
            break;
        case OPT_TOL_NOT_READY:
        case OPT_TOL_UNREACHABLE:
            ms = strtol(optarg, &end, 10);
            if (*end || !*optarg || ms < 0 || ms > 0x7fffffff)
                return cli_usage_error(cmd, "bad toleration seconds '%s'", optarg);
            if (c == OPT_TOL_NOT_READY) tol_not_ready = ms;
            else tol_unreachable = ms;
            break;
        case OPT_TOKEN_FILE: token_file = optarg; break;
        case OPT_AUTHZ_MODE:
            authz_mode = optarg;
            break;
        case OPT_ANONYMOUS:
            if (!strcmp(optarg, "true") || !strcmp(optarg, "1"))
                no_anonymous = 0;
            else if (!strcmp(optarg, "false") || !strcmp(optarg, "0"))
                no_anonymous = 1;
            else
                return cli_usage_error(cmd, "bad --anonymous-auth '%s' (true or false)", optarg);
            break;
        case OPT_MAX_INFLIGHT:
        case OPT_MAX_MUTATING:
        case OPT_MAX_CONNS:
        case OPT_MAX_UNAUTH:
            ms = strtol(optarg, &end, 10);
            if (*end || !*optarg || ms <= 0 || ms > 1000000)
                return cli_usage_error(cmd, "bad count '%s' (1 to 1000000)", optarg);
            if (c == OPT_MAX_INFLIGHT) lim.max_inflight = (size_t)ms;
            else if (c == OPT_MAX_MUTATING) lim.max_mutating_inflight = (size_t)ms;
            else if (c == OPT_MAX_CONNS) lim.max_connections = (size_t)ms;
            else lim.max_unauth_connections = (size_t)ms;
            break;
        case OPT_HEADER_TIMEOUT:
        case OPT_IDLE_TIMEOUT:
        case OPT_BODY_TIMEOUT:
            /* Whole seconds (apiserver_config_t counts them so). */
            if ((ms = cli_duration_ms(optarg)) < 1000 || ms > 86400000L)
                return cli_usage_error(cmd, "bad duration '%s' (1s to 24h)", optarg);
            if (c == OPT_HEADER_TIMEOUT) lim.header_timeout_s = (int)(ms / 1000);
            else if (c == OPT_IDLE_TIMEOUT) lim.idle_timeout_s = (int)(ms / 1000);
            else lim.body_timeout_s = (int)(ms / 1000);
            break;
        case OPT_WATCH_CACHE_BYTES:
        case OPT_WATCH_QUEUE_BYTES:
            if (parse_bytes(optarg, c == OPT_WATCH_CACHE_BYTES ? &watch_cache_bytes
                                                               : &watch_queue_bytes))
                return cli_usage_error(cmd, "bad --%s '%s' (bytes, 64Ki to 64Gi)",
                                       c == OPT_WATCH_CACHE_BYTES ? "watch-cache-bytes"
                                                                  : "watch-queue-bytes",
                                       optarg);
            break;
        case OPT_AUDIT_POLICY:
            audit_policy_file = optarg;
            break;
        case OPT_AUDIT_PATH:
            audit_path = optarg;
            break;
        case OPT_AUDIT_MAXSIZE:
        case OPT_AUDIT_MAXBACKUP:
        case OPT_AUDIT_MAXAGE: {
            static const char *const names[] = {"audit-log-maxsize", "audit-log-maxbackup",
                                                "audit-log-maxage"};
            int k = c - OPT_AUDIT_MAXSIZE;
            ms = strtol(optarg, &end, 10);
            if (*end || !*optarg) return cli_usage_error(cmd, "bad --%s '%s'", names[k], optarg);
            /* kube-apiserver's words */
            if (ms < 0)
                return cli_usage_error(cmd, "--%s %ld can't be a negative number", names[k], ms);
            if (ms > (k ? 1000000 : 1 << 20))
                return cli_usage_error(cmd, "--%s %ld is too large", names[k], ms);
            audit_num[k] = (int)ms;
            break;
        }
        case OPT_SVC_CIDR: svc_cidr = optarg; break;
        case OPT_SVC_PORTS: svc_ports = optarg; break;
        case OPT_ENC_CONFIG:
            enc_flag = optarg;
            break;
        case OPT_ENABLE_LABS:
            if (!optarg || !strcmp(optarg, "true") || !strcmp(optarg, "1"))
                enable_labs = 1;
            else if (!strcmp(optarg, "false") || !strcmp(optarg, "0"))
                enable_labs = 0;
            else
                return cli_usage_error(cmd, "bad --enable-labs '%s' (true or false)", optarg);
            break;
        case 'h': usage(stdout, cmd); return CLI_EXIT_OK;
        default: return cli_option_error(cmd, c, argv);
        }
    }
    if (optind != argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!all && !url_flag) return cli_usage_error(cmd, "--store URL is required");
    char why[256];
    if (apiserver_check_service_ranges(svc_cidr, svc_ports, why, sizeof why) ||
        apiserver_check_authorization_mode(authz_mode, why, sizeof why))
        return cli_usage_error(cmd, "%s", why);
    int rc = cli_listen_check(cmd, "--listen", listen);
    if (rc) return rc;

    char dir[CLI_PATH_MAX], url[CLI_PATH_MAX + 16];
    if ((rc = cli_data_dir(data_flag, dir, sizeof dir))) return cli_fail(rc, "data dir");
    if ((rc = cli_data_dir_prepare(dir))) return rc;
    if (url_flag) snprintf(url, sizeof url, "%s", url_flag);
    else snprintf(url, sizeof url, "lmdb:%s/store", dir);

    /* Signals are taken by sigwait() below, never by a handler: block them
     * before any thread starts so that every thread inherits the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Begun here, joined below (prestart_t). */
    const char *colon = strrchr(listen, ':');
    char host[64];
    snprintf(host, sizeof host, "%.*s", colon ? (int)(colon - listen) : 0, listen);
    if (!*host || !strcmp(host, "0.0.0.0")) snprintf(host, sizeof host, "127.0.0.1");
    int in_process = co.controllers || co.scheduler || co.nodes || co.node_runtime;
    prestart_t pre = {
        .dir = dir, .host = host, .want_sa_key = !sa_signing_file, .want_client_lib = in_process};
    prestart_begin(&pre);

    char *token = NULL, *sa_sign_pem = NULL, *sa_keys_pem = NULL;
    int sa_rc = 0;
    prestart_keys(&pre, &token, &rc, &sa_sign_pem, &sa_rc);
    if (rc) {
        free(sa_sign_pem);
        prestart_drop(&pre);
        return cli_fail(rc, "admin token in %s", dir);
    }
    /* ServiceAccount tokens: the signing key given, else DIR/sa.key (made
     * now on first start); the verifying keys' files concatenated. */
    {
        buf_t kb;
        buf_init(&kb, 4u << 20);
        const char *bad = NULL;
        if (sa_signing_file) {
            if (buf_append_file(&kb, sa_signing_file) || !kb.len) bad = sa_signing_file;
            size_t len;
            if (!bad) sa_sign_pem = buf_detach(&kb, &len);
        } else if ((rc = sa_rc)) {
            bad = "sa.key";
        }
        buf_free(&kb);
        buf_init(&kb, 4u << 20);
        for (size_t i = 0; !bad && i < n_sa_key_files; i++)
            if (buf_append_file(&kb, sa_key_files[i]) || buf_append(&kb, "\n", 1))
                bad = sa_key_files[i];
        size_t len;
        if (!bad && kb.len) sa_keys_pem = buf_detach(&kb, &len);
        buf_free(&kb);
        if (bad) {
            fprintf(stderr, "kplane: %s: reading the ServiceAccount key %s failed\n", cmd, bad);
            free(token);
            free(sa_sign_pem);
            free(sa_keys_pem);
            prestart_drop(&pre);
            return CLI_EXIT_FAIL;
        }
    }
    /* A bad token file stops the start, as it stops kube-apiserver's. */
    apiserver_tokens_t *tokens = NULL;
    if (token_file) {
        char terr[1024];
        int trc = apiserver_tokens_load(token_file, &tokens, terr, sizeof terr);
        if (trc) {
            fprintf(stderr, "kplane: %s: --token-auth-file: %s\n", cmd, terr);
            free(token);
            free(sa_sign_pem);
            free(sa_keys_pem);
            prestart_drop(&pre);
            return CLI_EXIT_FAIL;
        }
        log_info("server", "%zu tokens from %s", apiserver_tokens_count(tokens), token_file);
    }
    store_enc_t *enc = NULL;
    if ((rc = encryption_setup(cmd, enc_flag, dir, all, &enc))) {
        free(token);
        apiserver_tokens_free(tokens);
        prestart_drop(&pre);
        return rc;
    }

    /* The components in this process act as themselves, each with its own
     * identity and the bootstrap roles (least privilege): tokens made for
     * this run only, never written down. The controller manager's (whose
     * client also runs the shared informers), the scheduler's, and the
     * nodes': a process node is system:node:NAME under the Node authorizer
     * and NodeRestriction; simulated nodes, many kubelets in one process,
     * share kplane:node-simulator, bound to system:node's role. */
    /* --runtime process: one real node in place of the simulated ones. */
    char node_name[64] = "kplane-node-0", node_dir[CLI_PATH_MAX + 8];
    if (co.node_runtime && !strcmp(co.node_runtime, "process")) {
        char h[64] = "";
        int ok = !gethostname(h, sizeof h - 1) && h[0];
        for (char *q = h; ok && *q; q++) {
            if (*q >= 'A' && *q <= 'Z') *q = (char)(*q - 'A' + 'a');
            if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '-' || *q == '.'))
                ok = 0;
        }
        if (ok && h[0] != '-' && h[0] != '.') snprintf(node_name, sizeof node_name, "%s", h);
        snprintf(node_dir, sizeof node_dir, "%s/node", dir);
        co.nodes = 0;
        co.node_name = node_name;
        co.node_dir = node_dir;
        co.node_token = token;
    }
    char kcm_tok[65] = "", sched_tok[65] = "", node_tok[65] = "", node_user[128];
    if (co.node_name)
        snprintf(node_user, sizeof node_user, "system:node:%s", co.node_name);
    else
        snprintf(node_user, sizeof node_user, "%s", APISERVER_NODE_SIMULATOR_USER);
    if (in_process &&
        (apiserver_random_token(kcm_tok) || apiserver_random_token(sched_tok) ||
         apiserver_random_token(node_tok) ||
         apiserver_tokens_add(&tokens, kcm_tok, "system:kube-controller-manager", "", NULL) ||
         apiserver_tokens_add(&tokens, sched_tok, "system:kube-scheduler", "", NULL) ||
         apiserver_tokens_add(&tokens, node_tok, node_user, "",
                              co.node_name ? "system:nodes" : NULL))) {
        free(token);
        free(sa_sign_pem);
        free(sa_keys_pem);
        apiserver_tokens_free(tokens);
        prestart_drop(&pre);
        return cli_fail(KP_ENOMEM, "the components' identities");
    }
    /* A bad audit policy stops the start, as it stops kube-apiserver's. */
    apiserver_audit_policy_t *audit_policy = NULL;
    if (audit_policy_file) {
        char aerr[1024], awarn[256];
        int arc = apiserver_audit_policy_load(audit_policy_file, &audit_policy, aerr, sizeof aerr,
                                              awarn, sizeof awarn);
        if (arc) {
            fprintf(stderr, "kplane: %s: --audit-policy-file: %s\n", cmd, aerr);
            free(token);
            apiserver_tokens_free(tokens);
            prestart_drop(&pre);
            return CLI_EXIT_FAIL;
        }
        if (*awarn) log_warn("server", "--audit-policy-file %s: %s", audit_policy_file, awarn);
    }
    if (audit_path && !audit_policy)
        log_info("server", "--audit-log-path without --audit-policy-file: no events are logged");

    /* Keep five minutes of history, as kube-apiserver compacts etcd. */
    store_options_t sopt = {.keep_seconds = 300, .compact_interval_ms = 60000};
    store_t *store = NULL;
    if ((rc = store_open(url, &sopt, &store))) {
        store_enc_free(enc);
        free(token);
        apiserver_tokens_free(tokens);
        apiserver_audit_policy_free(audit_policy);
        prestart_drop(&pre);
        return cli_fail(rc, "opening store %s", url);
    }
    /* The wrapper owns both from here; store_close() frees them. */
    if (enc && (rc = store_enc_wrap(store, enc, &store))) {
        free(token);
        free(sa_sign_pem);
        free(sa_keys_pem);
        apiserver_tokens_free(tokens);
        prestart_drop(&pre);
        return cli_fail(rc, "opening store %s", url);
    }
    /* The dashboard's lab page runs labs as children of this server: by
     * default only for kplane server on loopback, a developer's machine. */
    if (enable_labs < 0) {
        struct sockaddr_in la;
        enable_labs =
            all && !apiserver_listen_addr(listen, &la) && (ntohl(la.sin_addr.s_addr) >> 24) == 127;
    }
    apiserver_tls_t tls;
    if ((rc = prestart_tls(&pre, &tls))) {
        prestart_drop(&pre);
        store_close(store);
        free(token);
        free(sa_sign_pem);
        free(sa_keys_pem);
        apiserver_tokens_free(tokens);
        apiserver_audit_policy_free(audit_policy);
        return cli_fail(rc, "TLS certificates in %s", dir);
    }
    /* The components in this process reach the API over a Unix socket in
     * the data dir: plain HTTP, the admin token still required. A TLS
     * session and TCP over loopback cost a fifth of the CPU of a burst of
     * pods. A path too long for a socket keeps them on HTTPS. */
    char sock[CLI_PATH_MAX + 16];
    int sn = snprintf(sock, sizeof sock, "%s/kplane.sock", dir);
    int use_sock = in_process && sn > 0 && sn <= 107;
    if (in_process && !use_sock)
        log_info("server", "%s: too long for a Unix socket; the components use HTTPS", sock);
    apiserver_config_t cfg = {.listen = listen,
                              .store = store,
                              .admin_token = token,
                              .tokens = tokens,
                              .authorization_mode = authz_mode,
                              .no_anonymous = no_anonymous,
                              .sa_signing_key_pem = sa_sign_pem,
                              .sa_key_pem = sa_keys_pem,
                              .sa_issuer = sa_issuer,
                              .tls_cert_pem = tls.cert_pem,
                              .tls_key_pem = tls.key_pem,
                              .client_ca_pem = tls.ca_pem,
                              .unix_socket = use_sock ? sock : NULL,
                              .watch_cache_bytes = watch_cache_bytes,
                              .watch_queue_bytes = watch_queue_bytes,
                              .toleration_seconds_set = 1,
                              .not_ready_toleration_s = tol_not_ready,
                              .unreachable_toleration_s = tol_unreachable,
                              .max_inflight = lim.max_inflight,
                              .max_mutating_inflight = lim.max_mutating_inflight,
                              .max_connections = lim.max_connections,
                              .max_unauth_connections = lim.max_unauth_connections,
                              .header_timeout_s = lim.header_timeout_s,
                              .idle_timeout_s = lim.idle_timeout_s,
                              .body_timeout_s = lim.body_timeout_s,
                              .service_cluster_ip_range = svc_cidr,
                              .service_node_port_range = svc_ports,
                              .audit_policy = audit_policy,
                              .audit_log_path = audit_path,
                              .audit_log_maxsize_mb = audit_num[0],
                              .audit_log_maxbackup = audit_num[1],
                              .audit_log_maxage_days = audit_num[2],
                              .enable_labs = enable_labs,
                              .facts = pre.facts};
    pre.facts = NULL; /* apiserver_start()'s, also when it fails */
    /* The dashboard's lab page lists and runs what `kplane lab list` lists. */
    apiserver_lab_t labs[64];
    size_t nlabs = 0;
    for (const lab_def_t *const *l = lab_all; *l && nlabs < sizeof labs / sizeof labs[0]; l++)
        labs[nlabs++] = (apiserver_lab_t){.name = (*l)->name,
                                          .seed = (*l)->seed,
                                          .title = (*l)->title,
                                          .needs = (*l)->needs};
    cfg.labs = labs;
    cfg.nlabs = nlabs;
    /* The kubeconfigs are written while the bootstrap policy is; then,
     * ready, the API serves from the line on, as kube-apiserver is ready
     * whether or not a controller manager runs; the components start after
     * the line and catch up through their informers' lists. */
    apiserver_t *api = NULL;
    int port = 0;
    if (!(rc = apiserver_start(&cfg, &api))) {
        port = apiserver_port(api);
        write_kubeconfigs(&pre, host, port, &tls, token);
        if ((rc = apiserver_serve(api))) {
            apiserver_stop(api);
            api = NULL;
        }
    }
    if (rc) {
        prestart_free_certs(&pre);
        prestart_release_lib(&pre);
        apiserver_tls_free(&tls);
        store_close(store);
        free(token);
        free(sa_sign_pem);
        free(sa_keys_pem);
        apiserver_tokens_free(tokens);
        apiserver_audit_policy_free(audit_policy);
        /* Taken since the check above? Then say so as the check does. */
        int code = rc == KP_EBUSY ? cli_listen_check(cmd, "--listen", listen) : 0;
        if (code) return code;
        return cli_fail(rc, "starting the API server on %s", listen);
    }
    printf("kplane %s is serving on https://%s:%d; point kubectl at it with: "
           "export KUBECONFIG=%s/kubeconfig\n",
           cmd, host, port, dir);
    /* The dashboard with the admin's token in the fragment, which the
     * browser never sends: the page keeps it for the tab and clears it. */
    if (all) printf("kplane %s dashboard: https://%s:%d/ui/#token=%s\n", cmd, host, port, token);
    fflush(stdout);
    /* The components: clients of this API server like any other. */
    kc_client_t *client = NULL, *sched_client = NULL, *node_client = NULL;
    cli_components_t *comps = NULL;
    if (in_process) {
        /* The CA signs approved CSRs in process (csrsigning), as
         * kube-controller-manager's --cluster-signing-* files would. */
        co.signing_cert_pem = tls.ca_pem;
        co.signing_key_pem = tls.ca_key_pem;
        co.root_ca_pem = tls.ca_pem; /* every namespace's kube-root-ca.crt */
        char server[128];
        snprintf(server, sizeof server, "https://%s:%d", host, port);
        kc_config_t kc = {.server = use_sock ? "http://localhost" : server,
                          .token = kcm_tok,
                          .ca_pem = use_sock ? NULL : tls.ca_pem,
                          .unix_socket = use_sock ? sock : NULL,
                          /* Each component writes as its own field manager, as
                           * when run apart (kplane controller-manager, ...). */
                          .user_agent = "kplane-controller-manager",
                          .qps = qps,
                          .burst = (int)burst};
        co.sa_credentials = 1; /* kubeadm's --use-service-account-credentials */
        if ((rc = kc_client_new(&kc, &client)) ||
            (rc = kc_client_as(client, sched_tok, "kplane-scheduler", &sched_client)) ||
            (rc = kc_client_as(client, node_tok, "kplane-node", &node_client)) ||
            ((co.sched_client = sched_client), (co.node_client = node_client),
             (rc = cli_components_start(client, &co, &comps)))) {
            prestart_release_lib(&pre);
            log_error("server", "starting the controllers, scheduler and nodes: %s",
                      err_str(rc));
            kc_client_free(client);
            kc_client_free(sched_client);
            kc_client_free(node_client);
            apiserver_stop(api);
            apiserver_tls_free(&tls);
            store_close(store);
            free(token);
            free(sa_sign_pem);
            free(sa_keys_pem);
            apiserver_tokens_free(tokens);
            apiserver_audit_policy_free(audit_policy);
            return cli_fail(rc, "starting components");
        }
        prestart_release_lib(&pre); /* the clients hold it now */
        apiserver_set_metrics_source(api, components_metrics, comps);
        apiserver_set_component_probe(api, components_running, comps);
    }

    int sig = 0;
    sigwait(&stop, &sig);
    log_info("server", "%s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
    apiserver_set_metrics_source(api, NULL, NULL);
    apiserver_set_component_probe(api, NULL, NULL);
    cli_components_stop(comps);
    kc_client_free(client);
    kc_client_free(sched_client);
    kc_client_free(node_client);
    apiserver_stop(api);
    apiserver_tls_free(&tls);
    store_close(store);
    free(token);
    free(sa_sign_pem);
    free(sa_keys_pem);
    apiserver_tokens_free(tokens);
    apiserver_audit_policy_free(audit_policy);
    return CLI_EXIT_OK;
}

int cmd_server(int argc, char **argv) { return serve("server", argc, argv); }

int cmd_apiserver(int argc, char **argv) { return serve("apiserver", argc, argv); }
