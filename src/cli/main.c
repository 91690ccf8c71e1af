/*
 * main.c -- the `kplane` binary: dispatch to a subcommand.
 *
 * Every subcommand lives in its own cmd_<name>.c and gets argv starting at its
 * own name. The helpers shared by subcommands (data dir resolution, error and
 * usage messages) live here so that there is exactly one of each.
 */
#include "cli/cli.h"

#include "lib/err.h"

#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KPLANE_VERSION
#define KPLANE_VERSION "0.1.0-dev"
#endif

static void usage(FILE *out)
{
    fputs("Usage: kplane [--help] COMMAND [ARGS...]\n"
          "\n"
          "A Kubernetes-compatible control plane.\n"
          "\n"
          "Commands:\n"
          "  server    run the control plane: API server, embedded store, controllers,\n"
          "            scheduler and simulated nodes, in one process\n"
          "  apiserver run the API server alone on a given store\n"
          "  controller-manager  run the controllers against a kubeconfig\n"
          "  scheduler run the scheduler against a kubeconfig\n"
          "  node      run simulated nodes against a kubeconfig\n"
          "  store     read, write, watch and maintain the local store\n"
          "  version   print the kplane version\n"
          "\n"
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
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        if (argc > 2 && !strcmp(cmd, "help") && !strcmp(argv[2], "store")) {
            cmd_store_usage(stdout);
            return CLI_EXIT_OK;
        }
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        if (argc > 2) return cli_usage_error(NULL, "version takes no arguments");
        printf("kplane version %s\n", KPLANE_VERSION);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "store")) return cmd_store(argc - 1, argv + 1);
    if (!strcmp(cmd, "server")) return cmd_server(argc - 1, argv + 1);
    if (!strcmp(cmd, "apiserver")) return cmd_apiserver(argc - 1, argv + 1);
    if (!strcmp(cmd, "controller-manager")) return cmd_controller_manager(argc - 1, argv + 1);
    if (!strcmp(cmd, "scheduler")) return cmd_scheduler(argc - 1, argv + 1);
    if (!strcmp(cmd, "node")) return cmd_node(argc - 1, argv + 1);

    return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
