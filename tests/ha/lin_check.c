/*
 * lin_check.c -- check a history recorded by lin_record (format: lincheck.h).
 *
 *   lin_check [--min-ops N] [--max-steps N] FILE
 *
 * Prints a summary line, and on failure the keys and operations that cannot
 * be linearized. Exit status: 0 linearizable, 1 not linearizable, 2 too
 * complex to decide within the limits, 3 unreadable file, usage error or
 * fewer than N operations checked (a drill that recorded nothing proves
 * nothing).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lincheck.h"

int main(int argc, char **argv)
{
    const char *path = NULL;
    unsigned long long min_ops = 0;
    lc_limits_t lim = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min-ops") && i + 1 < argc)
            min_ops = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--max-steps") && i + 1 < argc)
            lim.max_steps = strtoull(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    if (!path) {
        fprintf(stderr, "usage: lin_check [--min-ops N] [--max-steps N] FILE\n");
        return 3;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 3;
    }
    lc_history_t *h = NULL;
    size_t line = 0;
    int rc = lc_history_load(f, &h, &line);
    fclose(f);
    if (rc != 0) {
        fprintf(stderr, "lin_check: %s: %s at line %zu\n", path, err_str(rc), line);
        return 3;
    }
    lc_report_t rep;
    rc = lc_check(h, &lim, &rep);
    lc_history_free(h);
    if (rc != 0) {
        fprintf(stderr, "lin_check: %s\n", err_str(rc));
        return 3;
    }
    static const char *verdict[] = {"linearizable", "NOT LINEARIZABLE", "too complex"};
    printf("lin_check: %s: %s: %zu ops (%zu unknown writes) on %zu keys, busiest key %zu ops, "
           "%" PRIu64 " search steps\n",
           path, verdict[rep.status], rep.ops, rep.unknown, rep.keys, rep.max_key_ops, rep.steps);
    if (rep.status != LC_LINEARIZABLE) printf("%s", rep.explain);
    int status = rep.status == LC_LINEARIZABLE ? 0 : rep.status == LC_VIOLATION ? 1 : 2;
    if (!status && rep.ops < min_ops) {
        printf("lin_check: only %zu ops checked, wanted at least %llu\n", rep.ops, min_ops);
        status = 3;
    }
    lc_report_free(&rep);
    return status;
}
