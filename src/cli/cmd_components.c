/*
 * cmd_components.c -- the workers as processes of their own:
 *
 *   kplane controller-manager --kubeconfig F [--controllers a,b] [--workers N]
 *   kplane scheduler          --kubeconfig F
 *   kplane node               --kubeconfig F --simulate N [--name-prefix P]
 *                             [--node-lease-duration-seconds N]
 *   controller-manager also: [--node-monitor-grace-period 40s] [--node-monitor-period 5s]
 *   kplane node               --kubeconfig F --runtime process --name N [--data-dir D]
 *
 * common: [--leader-elect] [--leader-elect-lease-duration 15s]
 *         [--leader-elect-renew-deadline 10s] [--leader-elect-retry-period 2s]
 *         [--kube-api-qps Q] [--kube-api-burst B] [--metrics-listen ADDR:PORT]
 *         [--server URL[,URL...]]  (API servers to fail over between; replaces
 *                                   the kubeconfig's server, keeps its CA and token)
 *
 * Each serves /healthz and /metrics over plain HTTP on --metrics-listen
 * (default: none) and runs until SIGINT or SIGTERM.
 */
#include <getopt.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "apiserver/apiserver.h"
#include "cli/cli.h"
#include "cli/components.h"
#include "client/client.h"
#include "controllers/controller.h"
#include "httpd/httpd.h"
#include "lib/err.h"
#include "lib/log.h"

enum { COMP_CM, COMP_SCHED, COMP_NODE };

static const char *const names[] = {"controller-manager", "scheduler", "node"};

static void usage(FILE *out, int which)
{
    fprintf(out, "Usage: kplane %s --kubeconfig FILE [options]\n\n", names[which]);
    if (which == COMP_CM) {
        /* The names come from the table the manager starts them from. */
        fputs("  --controllers a,b     the controllers to run (default: all):", out);
        int col = 78; /* full: the first name starts a line */
        for (size_t i = 0; ctrl_manager_controller_name(i); i++) {
            const char *n = ctrl_manager_controller_name(i);
            int last = !ctrl_manager_controller_name(i + 1);
            if (col + 1 + (int)strlen(n) + !last > 78) {
                fprintf(out, "\n%24s", "");
                col = 24;
            } else {
                col += fprintf(out, " ");
            }
            col += fprintf(out, "%s%s", n, last ? "" : ",");
        }
        fputc('\n', out);
        /* Kubernetes' csrsigning needs --cluster-signing-cert-file/-key-file. */
        fputs("                        (csrsigning runs only in `kplane server`, which gives it\n"
              "                        its CA, DATA_DIR/ca.crt and ca.key; without a CA it is\n"
              "                        skipped)\n",
              out);
    }
    if (which == COMP_CM)
        fputs(
            "  --workers N           workers per controller (default 5)\n"
            "  --node-monitor-grace-period D  a node silent this long goes Ready Unknown\n"
            "                        and is tainted unreachable (default 40s)\n"
            "  --node-monitor-period D         how often node health is checked (default 5s)\n"
            "  --root-ca-file FILE   the CA bundle root-ca-cert-publisher puts in every\n"
            "                        namespace's kube-root-ca.crt (default: the kubeconfig's CA)\n"
            "  --use-service-account-credentials BOOL  each controller acts as its own\n"
            "                        ServiceAccount in kube-system, with a token asked for at\n"
            "                        start (default false, as kube-controller-manager; every\n"
            "                        API server must then verify this one's tokens)\n"
            "  --poll-interval D     observe by listing every D instead of watching (kplane's\n"
            "                        own; Kubernetes always watches: this measures what\n"
            "                        watching saves, see `kplane lab run polling-vs-watching`)\n",
            out);
    if (which == COMP_NODE)
        fputs("  --simulate N          run N simulated nodes\n"
              "  --name-prefix P       node names P0..PN-1 (default kplane-node-)\n"
              "  --runtime process     run one real node instead: pods run as local\n"
              "                        processes, logs served for `kubectl logs`\n"
              "  --name N              its node name (required with --runtime process)\n"
              "  --data-dir D          its pods' directories and logs (default kplane-node-N)\n"
              "  --log-token-file F    the bearer token the API server calls its log server\n"
              "                        with (the API server's DIR/admin-token; default: the\n"
              "                        kubeconfig's token; with neither, it serves no one)\n",
              out);
    if (which == COMP_NODE)
        fputs("  --node-lease-duration-seconds N  Lease duration; renewed every N/4 s (default 40)\n",
              out);
    if (which != COMP_NODE)
        fputs("  --leader-elect        run only while holding the Lease in kube-system\n"
              "  --leader-elect-lease-duration D, --leader-elect-renew-deadline D,\n"
              "  --leader-elect-retry-period D   (Go durations; 15s, 10s, 2s)\n",
              out);
    fputs("  --server URL[,URL...]  the API server(s), instead of the kubeconfig's; with\n"
          "                        several (one cluster: same CA and credentials) the client\n"
          "                        fails over to the next when one is unreachable\n",
          out);
    fputs("  --kube-api-qps Q, --kube-api-burst B   client-side rate limit (default off)\n"
          "  --metrics-listen ADDR:PORT             serve /healthz and /metrics there\n",
          out);
}

typedef struct health {
    cli_components_t *cc;
} health_t;

static httpd_next_t on_health_headers(void *arg, httpd_req_t *r, size_t *body_max)
{
    (void)arg, (void)r;
    *body_max = 0;
    return HTTPD_READ_BODY;
}

static void on_health(void *arg, httpd_req_t *r)
{
    static const char *const plain[] = {"Content-Type", "text/plain; charset=utf-8", NULL};
    health_t *h = arg;
    const char *url = httpd_path(r);
    char *text = NULL;
    int code = 200;
    if (!strcmp(url, "/healthz") || !strcmp(url, "/livez") || !strcmp(url, "/readyz")) {
        int ok = cli_components_healthy(h->cc);
        code = ok ? 200 : 503;
        text = strdup(ok ? "ok" : "not running");
    } else if (!strcmp(url, "/metrics")) {
        if (cli_components_metrics(h->cc, &text)) code = 500;
    } else {
        code = 404;
        text = strdup("404 page not found\n");
    }
    httpd_reply(r, code, plain, text, text ? strlen(text) : 0);
}

/* /healthz, /livez, /readyz and /metrics on `addr` (plain HTTP); *port
 * gets the port listened on (port 0 in addr: one the kernel chose). */
static httpd_t *health_start(const char *addr, health_t *h, int *port)
{
    struct sockaddr_in sa;
    if (apiserver_listen_addr(addr, &sa)) return NULL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t sl = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 64) ||
        getsockname(fd, (struct sockaddr *)&sa, &sl)) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    *port = ntohs(sa.sin_port);
    httpd_config_t hc = {.tcp_fd = fd, .unix_fd = -1, .workers = 1, .max_workers = 4,
                         .limits = {.max_connections = 64},
                         .on_headers = on_health_headers, .on_request = on_health, .arg = h};
    httpd_t *d = NULL;
    return httpd_start(&hc, &d) ? NULL : d;
}

/* "a,b,c" -> a NULL-terminated array in `store` (at most n-1 names). */
static const char *const *split_list(char *s, const char **store, size_t n)
{
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t && k + 1 < n;
         t = strtok_r(NULL, ",", &save))
        store[k++] = t;
    store[k] = NULL;
    return store;
}

/* Is `n` a controller the manager has (its table)? */
static int known_controller(const char *n)
{
    for (size_t i = 0; ctrl_manager_controller_name(i); i++)
        if (!strcmp(n, ctrl_manager_controller_name(i))) return 1;
    return 0;
}

/* Long options without a short letter. */
enum {
    OPT_NODE_GRACE = 0x100,
    OPT_NODE_PERIOD,
    OPT_NODE_LEASE,
    OPT_ROOT_CA,
    OPT_SA_CREDS,
    OPT_LOG_TOKEN,
    OPT_POLL
};

/* The file at path (a PEM bundle, at most 1 MiB) into *out (malloc'd,
 * NUL-terminated). Errors: KP_ENOTFOUND (cannot be read), KP_ETOOLARGE,
 * KP_EINVAL (empty), KP_ENOMEM. */
static int read_pem(const char *path, char **out)
{
    enum { PEM_MAX = 1 << 20 };
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return KP_ENOTFOUND;
    char *b = malloc(PEM_MAX + 1);
    size_t n = b ? fread(b, 1, PEM_MAX + 1, f) : 0;
    int rc = !b            ? KP_ENOMEM
             : ferror(f)   ? KP_ENOTFOUND
             : n > PEM_MAX ? KP_ETOOLARGE
             : !n          ? KP_EINVAL
                           : 0;
    fclose(f);
    if (rc) {
        free(b);
        return rc;
    }
    b[n] = '\0';
    *out = b;
    return 0;
}

static int run(int which, int argc, char **argv)
{
    static const struct option opts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"controllers", required_argument, NULL, 'c'},
        {"workers", required_argument, NULL, 'w'},
        {"simulate", required_argument, NULL, 'n'},
        {"name-prefix", required_argument, NULL, 'p'},
        {"runtime", required_argument, NULL, 'r'},
        {"name", required_argument, NULL, 'N'},
        {"data-dir", required_argument, NULL, 'D'},
        {"leader-elect", optional_argument, NULL, 'e'},
        {"leader-elect-lease-duration", required_argument, NULL, 'L'},
        {"leader-elect-renew-deadline", required_argument, NULL, 'R'},
        {"leader-elect-retry-period", required_argument, NULL, 'T'},
        {"kube-api-qps", required_argument, NULL, 'q'},
        {"kube-api-burst", required_argument, NULL, 'b'},
        {"metrics-listen", required_argument, NULL, 'm'},
        {"server", required_argument, NULL, 's'},
        {"node-monitor-grace-period", required_argument, NULL, OPT_NODE_GRACE},
        {"node-monitor-period", required_argument, NULL, OPT_NODE_PERIOD},
        {"node-lease-duration-seconds", required_argument, NULL, OPT_NODE_LEASE},
        {"root-ca-file", required_argument, NULL, OPT_ROOT_CA},
        {"use-service-account-credentials", required_argument, NULL, OPT_SA_CREDS},
        {"log-token-file", required_argument, NULL, OPT_LOG_TOKEN},
        {"poll-interval", required_argument, NULL, OPT_POLL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *name = names[which], *kubeconfig = NULL, *metrics = NULL, *root_ca = NULL,
               *log_token_file = NULL;
    const char *servers[17] = {NULL};
    cli_components_opts_t o = {.controllers = which == COMP_CM, .scheduler = which == COMP_SCHED};
    const char *enabled[32];
    double qps = 0;
    long burst = 0;
    int c;
    opterr = 0;
    optind = 0; /* 0: full reinitialisation in glibc */
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        long ms;
        char *end;
        switch (c) {
        case 'k':
            kubeconfig = optarg;
            break;
        case 'c':
            o.enabled = split_list(optarg, enabled, 32);
            for (const char *const *e = o.enabled; *e; e++)
                if (!known_controller(*e))
                    return cli_usage_error(name, "--controllers: unknown controller '%s'", *e);
            break;
        case 'w':
            o.workers = (int)strtol(optarg, &end, 10);
            if (*end || o.workers <= 0) return cli_usage_error(name, "bad --workers");
            break;
        case 'n':
            o.nodes = (int)strtol(optarg, &end, 10);
            if (*end || o.nodes <= 0) return cli_usage_error(name, "bad --simulate");
            break;
        case 'p':
            o.node_prefix = optarg;
            break;
        case 'r':
            if (which != COMP_NODE || (strcmp(optarg, "process") && strcmp(optarg, "sim")))
                return cli_usage_error(name, "bad --runtime (process or sim)");
            o.node_runtime = optarg;
            break;
        case 'N':
            o.node_name = optarg;
            break;
        case 'D':
            o.node_dir = optarg;
            break;
        case 'e':
            o.leader_elect = !optarg || !strcmp(optarg, "true");
            break;
        case 'L':
        case 'R':
        case 'T':
            if ((ms = cli_duration_ms(optarg)) <= 0)
                return cli_usage_error(name, "bad duration '%s'", optarg);
            if (c == 'L')
                o.lease_ms = (int)ms;
            else if (c == 'R')
                o.renew_ms = (int)ms;
            else
                o.retry_ms = (int)ms;
            break;
        case 'q':
            qps = strtod(optarg, &end);
            if (*end || qps < 0) return cli_usage_error(name, "bad --kube-api-qps");
            break;
        case 'b':
            burst = strtol(optarg, &end, 10);
            if (*end || burst < 0) return cli_usage_error(name, "bad --kube-api-burst");
            break;
        case 'm':
            metrics = optarg;
            break;
        case 's': {
            size_t commas = 0;
            for (const char *p = optarg; *p; p++) commas += *p == ',';
            if (commas >= 16) return cli_usage_error(name, "--server: at most 16 URLs");
            split_list(optarg, servers, 17);
            if (!servers[0]) return cli_usage_error(name, "bad --server");
            break;
        }
        case OPT_NODE_GRACE:
        case OPT_NODE_PERIOD:
            if (which != COMP_CM || (ms = cli_duration_ms(optarg)) <= 0 || ms > 0x7fffffff)
                return cli_usage_error(name, "bad duration '%s'", optarg);
            if (c == OPT_NODE_GRACE)
                o.node_monitor_grace_ms = (int)ms;
            else
                o.node_monitor_period_ms = (int)ms;
            break;
        case OPT_LOG_TOKEN:
            if (which != COMP_NODE) return cli_usage_error(name, "--log-token-file: node only");
            log_token_file = optarg;
            break;
        case OPT_POLL:
            if (which != COMP_CM || (ms = cli_duration_ms(optarg)) <= 0 || ms > 0x7fffffff)
                return cli_usage_error(name, "bad --poll-interval (a duration; controller-manager "
                                             "only)");
            o.poll_ms = (int)ms;
            break;
        case OPT_SA_CREDS:
            if (which != COMP_CM || (strcmp(optarg, "true") && strcmp(optarg, "false")))
                return cli_usage_error(name, "bad --use-service-account-credentials (true or "
                                             "false; controller-manager only)");
            o.sa_credentials = !strcmp(optarg, "true");
            break;
        case OPT_ROOT_CA:
            if (which != COMP_CM)
                return cli_usage_error(name, "--root-ca-file: controller-manager only");
            root_ca = optarg;
            break;
        case OPT_NODE_LEASE:
            o.node_lease_s = (int)strtol(optarg, &end, 10);
            if (which != COMP_NODE || *end || o.node_lease_s <= 0 || o.node_lease_s > 3600)
                return cli_usage_error(name, "bad --node-lease-duration-seconds");
            break;
        case 'h':
            usage(stdout, which);
            return CLI_EXIT_OK;
        default:
            return cli_option_error(name, c, argv);
        }
    }
    if (optind != argc) return cli_usage_error(name, "unexpected argument '%s'", argv[optind]);
    if (!kubeconfig) return cli_usage_error(name, "--kubeconfig FILE is required");
    int proc = o.node_runtime && !strcmp(o.node_runtime, "process");
    char node_dir[CLI_PATH_MAX];
    if (proc && !o.node_name) return cli_usage_error(name, "--name N is required");
    if (proc && o.nodes) return cli_usage_error(name, "--simulate and --runtime process exclude each other");
    if (proc && !o.node_dir) {
        snprintf(node_dir, sizeof node_dir, "kplane-node-%s", o.node_name);
        o.node_dir = node_dir;
    }
    if (which == COMP_NODE && !o.nodes && !proc)
        return cli_usage_error(name, "--simulate N or --runtime process is required");
    int rc;
    if (metrics && (rc = cli_listen_check(name, "--metrics-listen", metrics))) return rc;

    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    kc_config_t cfg;
    json_t *storage = NULL;
    char err[512];
    rc = kc_config_load(kubeconfig, &cfg, &storage, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kplane: %s: reading %s: %s\n", name, kubeconfig,
                rc == KP_EINVAL ? err : err_str(rc));
        return CLI_EXIT_FAIL;
    }
    char ua[64];
    snprintf(ua, sizeof ua, "kplane-%s", name);
    cfg.user_agent = ua;
    if (servers[0]) cfg.servers = servers; /* --server replaces the kubeconfig's */
    cfg.qps = qps;
    cfg.burst = (int)burst;
    /* What root-ca-cert-publisher publishes: --root-ca-file, else the CA the
     * kubeconfig trusts for the API server (as kube-controller-manager). */
    char *root_ca_pem = NULL;
    if (root_ca && (rc = read_pem(root_ca, &root_ca_pem))) {
        json_decref(storage);
        return cli_fail(rc, "reading --root-ca-file %s", root_ca);
    }
    o.root_ca_pem = root_ca_pem ? root_ca_pem : cfg.ca_pem;
    /* The token the API server calls the log server with (its admin token):
     * --log-token-file, else the kubeconfig's. With neither (a kubeconfig
     * with a client certificate), a random one nobody knows: the log server
     * serves no one rather than anyone. */
    char *log_token = NULL, closed[65];
    if (log_token_file) {
        if ((rc = read_pem(log_token_file, &log_token))) {
            json_decref(storage);
            free(root_ca_pem);
            return cli_fail(rc, "reading --log-token-file %s", log_token_file);
        }
        log_token[strcspn(log_token, "\r\n")] = '\0';
    }
    o.node_token = log_token ? log_token : cfg.token;
    if (proc && !o.node_token) {
        if ((rc = apiserver_random_token(closed))) {
            json_decref(storage);
            free(root_ca_pem);
            free(log_token);
            return cli_fail(rc, "a token for the log server");
        }
        o.node_token = closed;
        log_warn(name, "no --log-token-file and no token in the kubeconfig: the log server "
                       "refuses every request (kubectl logs will not reach this node)");
    }
    kc_client_t *client;
    if ((rc = kc_client_new(&cfg, &client))) {
        json_decref(storage);
        free(root_ca_pem);
        free(log_token);
        return cli_fail(rc, "API client for %s", servers[0] ? servers[0] : cfg.server);
    }
    /* Leader election gets a client of its own, not throttled by
     * --kube-api-qps (as kube-controller-manager's "leader-election" client):
     * a renewal queued behind the controllers' requests would end the term. */
    kc_client_t *le_client = NULL;
    if (o.leader_elect && qps > 0) {
        cfg.qps = 0;
        if ((rc = kc_client_new(&cfg, &le_client))) {
            kc_client_free(client);
            json_decref(storage);
            free(root_ca_pem);
            free(log_token);
            return cli_fail(rc, "API client for leader election");
        }
        o.leader_client = le_client;
    }
    cli_components_t *cc;
    if ((rc = cli_components_start(client, &o, &cc))) {
        kc_client_free(le_client);
        kc_client_free(client);
        json_decref(storage);
        free(root_ca_pem);
        free(log_token);
        return cli_fail(rc, "starting %s", name);
    }
    health_t h = {.cc = cc};
    int mport = 0;
    httpd_t *hd = metrics ? health_start(metrics, &h, &mport) : NULL;
    if (metrics && !hd) log_warn(name, "cannot serve /metrics on %s", metrics);
    log_info(name, "running against %s", servers[0] ? servers[0] : cfg.server);
    printf("kplane %s is running against %s\n", name, servers[0] ? servers[0] : cfg.server);
    if (hd) printf("kplane %s serves /metrics on port %d\n", name, mport); /* for :0 */
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    log_info(name, "%s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
    httpd_stop(hd);
    cli_components_stop(cc);
    kc_client_free(le_client);
    kc_client_free(client);
    json_decref(storage);
    free(root_ca_pem);
    free(log_token);
    return CLI_EXIT_OK;
}

int cmd_controller_manager(int argc, char **argv)
{
    return run(COMP_CM, argc, argv);
}
int cmd_scheduler(int argc, char **argv)
{
    return run(COMP_SCHED, argc, argv);
}
int cmd_node(int argc, char **argv)
{
    return run(COMP_NODE, argc, argv);
}
