/*
 * main.c -- the `kplane` binary: dispatch to a subcommand.
 *
 * Every subcommand lives in its own cmd_<name>.c (but `version` and `help`,
 * a few lines each, here) and gets argv starting at its own name; the table
 * `commands` dispatches and lists them. The helpers shared by subcommands (data dir resolution, error and
 * usage messages) live here so that there is exactly one of each.
 */
#include "cli/cli.h"

#include "apiserver/apiserver.h"
#include "lab/lab.h"
#include "lib/err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KPLANE_VERSION
#define KPLANE_VERSION "0.1.0-dev"
#endif

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

/* Every subcommand: the one table that dispatches and that the usage lists. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"server", cmd_server,
     "run the control plane in one process: API server, embedded\n"
     "store, controllers, scheduler and simulated nodes"},
    {"apiserver", cmd_apiserver, "run the API server alone on a given store"},
    {"controller-manager", cmd_controller_manager, "run the controllers against a kubeconfig"},
    {"scheduler", cmd_scheduler, "run the scheduler against a kubeconfig"},
    {"node", cmd_node, "run simulated nodes against a kubeconfig"},
    {"store", cmd_store, "read, write, watch and maintain the local store"},
    {"lab", lab_main,
     "run the seed investigations' experiments on loopback and\n"
     "print what they observed (lab list, lab run NAME)"},
    {"version", cmd_version, "print the kplane version"},
    {"help", cmd_help, "print this help, or a command's: help COMMAND"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fputs("Usage: kplane [--help] COMMAND [ARGS...]\n"
          "\n"
          "A Kubernetes-compatible control plane.\n"
          "\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        /* A summary's later lines are indented under its first. */
        fprintf(out, "  %-19s ", commands[i].name);
        for (const char *p = commands[i].summary; *p; p++) {
            fputc(*p, out);
            if (*p == '\n') fprintf(out, "%22s", "");
        }
        fputc('\n', out);
    }
    fputs("\n"
          "Run 'kplane COMMAND --help' for the options of a command.\n"
          "\n"
          "Data directory: --data-dir DIR, else $KPLANE_DATA_DIR, else /var/lib/kplane\n"
          "(as root) or ~/.local/share/kplane.\n",
          out);
}

int cli_data_dir(const char *flag, char *out, size_t size)
{
    const char *dir = flag;
    if (dir && !*dir) return KP_EINVAL;
    if (!dir) {
        const char *env = getenv("KPLANE_DATA_DIR");
        if (env && *env) dir = env;
    }
    if (!dir && geteuid() == 0) dir = "/var/lib/kplane";

    int n;
    if (dir) {
        n = snprintf(out, size, "%s", dir);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            struct passwd *pw = getpwuid(geteuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (!home || !*home) return KP_EINVAL;
        n = snprintf(out, size, "%s/.local/share/kplane", home);
    }
    if (n < 0 || (size_t)n >= size) return KP_EINVAL;
    /* "dir/" and "dir" are the same directory; keep the form we append to clean. */
    while (n > 1 && out[n - 1] == '/')
        out[--n] = '\0';
    return 0;
}

int cli_mkdir_p(const char *path)
{
    char buf[CLI_PATH_MAX];
    int n = snprintf(buf, sizeof buf, "%s", path);
    if (n <= 0 || (size_t)n >= sizeof buf) return KP_EINVAL;

    /* Create each prefix ending before a '/', then the whole path. */
    for (char *p = buf + 1;; p++) {
        int last = (*p == '\0');
        if (*p != '/' && !last) continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) return KP_EIO;
        *p = saved;
        if (last) break;
    }
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) return KP_EIO;
    return 0;
}

int cli_fail(int rc, const char *what_fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, what_fmt);
    vsnprintf(what, sizeof what, what_fmt, ap);
    va_end(ap);
    fprintf(stderr, "kplane: %s: %s\n", what, err_str(rc));
    return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kplane: %s\nRun 'kplane %s%s--help' for usage.\n", msg, cmd ? cmd : "",
            cmd ? " " : "");
    return CLI_EXIT_USAGE;
}

int cli_option_error(const char *cmd, int c, char **argv)
{
    /* glibc: an unknown short option is optopt (it may sit inside a
     * cluster); an unknown long one has optopt 0 and is the argument just
     * stepped over, as is any option missing its value (it ends argv). */
    const char *arg = argv[optind - 1];
    char name[128];
    if (c == ':' ? !strncmp(arg, "--", 2) : optopt == 0)
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    else
        snprintf(name, sizeof name, "-%c", optopt);
    if (c == ':') return cli_usage_error(cmd, "option %s needs a value", name);
    return cli_usage_error(cmd, "unknown option %s", name);
}

int cli_listen_check(const char *cmd, const char *flag, const char *listen)
{
    struct sockaddr_in sa;
    if (apiserver_listen_addr(listen, &sa))
        return cli_usage_error(cmd, "bad %s '%s' (ADDR:PORT, an IPv4 address and a port)", flag,
                               listen);
    if (!sa.sin_port) return 0; /* any free port */
    /* Bind as the server will (SO_REUSEADDR, never SO_REUSEPORT), then let go. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0; /* no socket to probe with: the server's start says why */
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int err = bind(fd, (struct sockaddr *)&sa, sizeof sa) ? errno : 0;
    close(fd);
    switch (err) {
    case 0: return 0;
    case EADDRINUSE:
        fprintf(stderr, "kplane: %s is in use; choose another with %s ADDR:PORT (port 0: any free "
                        "port)\n", listen, flag);
        return CLI_EXIT_FAIL;
    case EACCES:
        fprintf(stderr, "kplane: %s: permission denied (ports below 1024 need privileges); "
                        "choose another with %s ADDR:PORT\n", listen, flag);
        return CLI_EXIT_FAIL;
    case EADDRNOTAVAIL:
        fprintf(stderr, "kplane: %s: not an address of this host; choose another with %s "
                        "ADDR:PORT\n", listen, flag);
        return CLI_EXIT_FAIL;
    default:
        fprintf(stderr, "kplane: %s: %s\n", listen, strerror(err));
        return CLI_EXIT_FAIL;
    }
}

int cli_data_dir_prepare(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT) {
            fprintf(stderr, "kplane: data dir %s: %s\n", dir, strerror(errno));
            return CLI_EXIT_FAIL;
        }
        int rc = cli_mkdir_p(dir);
        /* 0700 whatever the umask: the mode kplane checks below. */
        if (!rc && chmod(dir, 0700)) rc = KP_EIO;
        if (rc) {
            fprintf(stderr, "kplane: creating data dir %s: %s\n", dir, strerror(errno));
            return CLI_EXIT_FAIL;
        }
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "kplane: data dir %s: not a directory\n", dir);
        return CLI_EXIT_FAIL;
    }
    unsigned mode = (unsigned)st.st_mode & 07777;
    /* Others who may write could replace the admin token, the TLS key or the
     * store: refused. Others who may only read get a warning, as etcd warns
     * on a data dir that is not 0700. */
    if (mode & 022) {
        fprintf(stderr,
                "kplane: data dir %s has mode %04o: group or others may write to it, and it "
                "holds the admin token, the TLS key and the store; refusing to start. Fix: "
                "chmod 700 %s\n",
                dir, mode, dir);
        return CLI_EXIT_FAIL;
    }
    if (mode & 077)
        fprintf(stderr,
                "kplane: warning: data dir %s has mode %04o: group or others may read it; the "
                "recommended mode is 0700 (chmod 700 %s)\n",
                dir, mode, dir);
    return 0;
}

static int cmd_version(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    optind = 0; /* 0: full reinitialisation in glibc */
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c != 'h') return cli_option_error("version", c, argv);
        fputs("Usage: kplane version\n\nPrint the kplane version.\n", stdout);
        return CLI_EXIT_OK;
    }
    if (optind != argc) return cli_usage_error("version", "version takes no arguments");
    printf("kplane version %s\n", KPLANE_VERSION);
    return CLI_EXIT_OK;
}

/* `kplane help [COMMAND]` (also `kplane --help`): COMMAND's own --help. */
static int cmd_help(int argc, char **argv)
{
    if (argc > 2) return cli_usage_error(NULL, "help takes at most one command");
    const char *want = argc == 2 ? argv[1] : NULL;
    if (want && (!strcmp(want, "--help") || !strcmp(want, "-h") || !strcmp(want, "help")))
        want = NULL;
    if (!want) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (want[0] == '-') return cli_usage_error(NULL, "unknown option %s", want);
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(want, commands[i].name)) {
            char name[32], help[] = "--help";
            snprintf(name, sizeof name, "%s", commands[i].name);
            char *args[] = {name, help, NULL};
            return commands[i].run(2, args);
        }
    return cli_usage_error(NULL, "unknown command '%s'", want);
}

/* Servers hold a socket per watch and per client connection: take the hard
 * limit on open files, as the Go runtime does for Kubernetes' binaries (the
 * usual soft limit, 1024, is less than a thousand watches need). */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    raise_nofile();
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) return cmd_help(argc - 1, argv + 1);
    if (!strcmp(cmd, "--version")) return cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    if (cmd[0] == '-') return cli_usage_error(NULL, "unknown option %s", cmd);
    return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
