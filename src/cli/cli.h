/*
 * cli.h -- the `kplane` command line: one entry point per subcommand, plus the
 * few helpers that every subcommand shares (data dir, error and usage output).
 *
 * Exit codes of every subcommand: 0 on success, CLI_EXIT_FAIL (1) when the
 * operation failed (the message went to stderr as "kplane: <what>: <err>"),
 * CLI_EXIT_USAGE (2) for a bad command line.
 */
#ifndef KP_CLI_H
#define KP_CLI_H

#include <stddef.h>
#include <stdio.h>

#define CLI_EXIT_OK    0
#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 2

/* The longest path the CLI builds (data dir, store dir, URLs). */
#define CLI_PATH_MAX 4096

/* Resolve the data directory into `out` (`size` bytes): `flag` (the value of
 * --data-dir, may be NULL), else $KPLANE_DATA_DIR, else /var/lib/kplane when
 * running as root, else ~/.local/share/kplane. Nothing is created.
 * Errors: KP_EINVAL (empty flag, no home directory, or the path does not fit). */
int cli_data_dir(const char *flag, char *out, size_t size);

/* Create `path` and any missing parents (mode 0700 for new ones), like
 * `mkdir -p`. Errors: KP_EIO (errno says why), KP_EINVAL (path too long). */
int cli_mkdir_p(const char *path);

/* Make `dir` the data dir of a server: create it (and missing parents) with
 * mode 0700; or check an existing one as etcd checks its data dir, but
 * stricter: group or other write permission is refused, read permission
 * warned about. Messages name the path, the mode and the fix (chmod 700)
 * on stderr. Returns 0, or CLI_EXIT_FAIL. */
int cli_data_dir_prepare(const char *dir);

/* Check that a server can listen on `listen` ("ADDR:PORT"), given with
 * option `flag` ("--listen"): binds a probe socket and lets it go. Returns
 * 0; CLI_EXIT_USAGE for a string that is no ADDR:PORT; CLI_EXIT_FAIL when
 * the address is in use (or not ours, or privileged), with a message that
 * names it and how to choose another. A port taken after the check still
 * fails the server's own start. */
int cli_listen_check(const char *cmd, const char *flag, const char *listen);

/* The usage error for what getopt_long returned as `c` ('?' or ':'; the
 * options string must start with ':' and opterr be 0): "unknown option
 * --bogus" or "option --listen needs a value". Returns CLI_EXIT_USAGE. */
int cli_option_error(const char *cmd, int c, char **argv);

/* Print "kplane: <what>: <err_str(rc)>" to stderr; returns CLI_EXIT_FAIL. */
int cli_fail(int rc, const char *what_fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "kplane: <msg>" and a hint to run `kplane [cmd] --help` to stderr
 * (`cmd` may be NULL); returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- subcommands: argv[0] is the subcommand's own name ---- */

/* `kplane server ...` and `kplane apiserver ...` (cmd_server.c) */
int cmd_server(int argc, char **argv);
int cmd_apiserver(int argc, char **argv);

/* `kplane controller-manager|scheduler|node ...` (cmd_components.c) */
int cmd_controller_manager(int argc, char **argv);
int cmd_scheduler(int argc, char **argv);
int cmd_node(int argc, char **argv);

/* `kplane store [--data-dir DIR | --store URL] SUBCOMMAND ...` */
int cmd_store(int argc, char **argv);
/* The store help text, written to `out`. */
void cmd_store_usage(FILE *out);

#endif
