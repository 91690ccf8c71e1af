/*
 * test_audit_file.c -- src/apiserver/audit/file.c: the audit log's file
 * rotated as lumberjack rotates kube-apiserver's (--audit-log-maxsize,
 * -maxbackup, -maxage): backups named NAME-<UTC time>EXT, the count and
 * the age kept, other files left alone; and log.c's queue and writer end to
 * end (lines written in order, what stop() leaves written, the counters).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apiserver/audit/audit.h"
#include "lib/err.h"
#include "testutil.h"

/* 2024-05-01T10:20:30.123Z */
#define T0  ((int64_t)1714558830 * 1000000000 + 123000000)
#define DAY ((int64_t)86400 * 1000000000)

static void test_backup_name(void **state)
{
    (void)state;
    char n[256];
    api_audit_backup_name("/var/log/audit.log", T0, n, sizeof n);
    assert_string_equal(n, "/var/log/audit-2024-05-01T10-20-30.123.log");
    api_audit_backup_name("/var/log.d/audit", T0, n, sizeof n);
    assert_string_equal(n, "/var/log.d/audit-2024-05-01T10-20-30.123");
    api_audit_backup_name("a.b.json", T0 + 877000000, n, sizeof n);
    assert_string_equal(n, "a.b-2024-05-01T10-20-31.000.json");
}

/* Names in dir, sorted, joined by spaces. */
static char *listing(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *names[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    for (size_t i = 0; i < n; i++) /* insertion sort */
        for (size_t k = i; k > 0 && strcmp(names[k - 1], names[k]) > 0; k--) {
            char *t = names[k];
            names[k] = names[k - 1];
            names[k - 1] = t;
        }
    static char out[4096];
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(out, names[i], sizeof out - strlen(out) - 2);
        if (i + 1 < n) strncat(out, " ", sizeof out - strlen(out) - 1);
        free(names[i]);
    }
    return out;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char b[8192];
    size_t n = fread(b, 1, sizeof b - 1, f);
    b[n] = '\0';
    fclose(f);
    return b;
}

static void test_rotate_at_size(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("audit-rot");
    char path[512], p[600];
    /* the directory is made (as lumberjack's MkdirAll) */
    snprintf(path, sizeof path, "%s/logs/audit.log", dir);
    api_audit_file_opts_t o = {.path = path, .max_bytes = 100};
    api_audit_file_t *f = NULL;
    char err[256];
    assert_int_equal(api_audit_file_open(&o, T0, &f, err, sizeof err), 0);
    char line[61];
    memset(line, 'a', 59);
    line[59] = '\n';
    line[60] = '\0';
    assert_int_equal(api_audit_file_write(f, line, 60, T0), 0);
    line[0] = 'b';
    /* 60 + 60 > 100: the first file becomes the backup */
    assert_int_equal(api_audit_file_write(f, line, 60, T0 + 1000000), 0);
    snprintf(p, sizeof p, "%s/logs", dir);
    assert_string_equal(listing(p), "audit-2024-05-01T10-20-30.124.log audit.log");
    assert_int_equal(slurp(path)[0], 'b');
    snprintf(p, sizeof p, "%s/logs/audit-2024-05-01T10-20-30.124.log", dir);
    assert_int_equal(strlen(slurp(p)), 60);
    /* new files are 0600 (the log holds who did what) */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* exactly up to the size: no rotation */
    assert_int_equal(api_audit_file_write(f, line, 40, T0 + 2000000), 0);
    snprintf(p, sizeof p, "%s/logs", dir);
    assert_string_equal(listing(p), "audit-2024-05-01T10-20-30.124.log audit.log");
    /* a write larger than the file may be is refused, as lumberjack does */
    char big[101];
    memset(big, 'x', sizeof big);
    assert_int_equal(api_audit_file_write(f, big, sizeof big, T0), KP_ETOOLARGE);
    /* two rotations in one millisecond keep both backups */
    assert_int_equal(api_audit_file_write(f, line, 60, T0 + 1000000), 0);
    assert_string_equal(listing(p), "audit-2024-05-01T10-20-30.124.log "
                                    "audit-2024-05-01T10-20-30.125.log audit.log");
    api_audit_file_close(f);
    /* reopened: appends, counting what is there */
    assert_int_equal(api_audit_file_open(&o, T0, &f, err, sizeof err), 0);
    assert_int_equal(api_audit_file_write(f, line, 30, T0 + 9000000), 0);
    assert_int_equal(strlen(slurp(path)), 90);
    assert_int_equal(api_audit_file_write(f, line, 30, T0 + 9000000), 0);
    assert_string_equal(listing(p), "audit-2024-05-01T10-20-30.124.log "
                                    "audit-2024-05-01T10-20-30.125.log "
                                    "audit-2024-05-01T10-20-30.132.log audit.log");
    api_audit_file_close(f);
    tu_rmtree(dir);
    free(dir);
}

static void test_max_backups_and_age(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("audit-keep");
    char path[512], p[600];
    snprintf(path, sizeof path, "%s/audit.log", dir);
    /* files that are not its backups stay */
    const char *others[] = {"audit.log.1", "other-2024-05-01T10-20-30.123.log",
                            "audit-2024-05-01T10-20-30.123.txt", "audit-yesterday.log"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, others[i]);
        FILE *o = fopen(p, "w");
        assert_non_null(o);
        fclose(o);
    }
    api_audit_file_opts_t o = {.path = path, .max_bytes = 10, .max_backups = 2};
    api_audit_file_t *f = NULL;
    char err[256];
    assert_int_equal(api_audit_file_open(&o, T0, &f, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) /* each write rotates the one before */
        assert_int_equal(api_audit_file_write(f, "0123456789", 10, T0 + i * DAY), 0);
    assert_string_equal(listing(dir), "audit-2024-05-01T10-20-30.123.txt "
                                      "audit-2024-05-05T10-20-30.123.log "
                                      "audit-2024-05-06T10-20-30.123.log audit-yesterday.log "
                                      "audit.log audit.log.1 other-2024-05-01T10-20-30.123.log");
    api_audit_file_close(f);
    /* maxage: backups whose time is before now - days go at the next
     * rotation (and at opening), whatever their count */
    o.max_backups = 0;
    o.max_age_days = 3;
    assert_int_equal(api_audit_file_open(&o, T0 + 9 * DAY, &f, err, sizeof err), 0);
    assert_string_equal(listing(dir), "audit-2024-05-01T10-20-30.123.txt audit-yesterday.log "
                                      "audit.log audit.log.1 other-2024-05-01T10-20-30.123.log");
    for (int i = 10; i < 14; i++) /* rotated on May 11, 12, 13, 14 */
        assert_int_equal(api_audit_file_write(f, "0123456789", 10, T0 + i * DAY), 0);
    /* at May 14's rotation, May 11's backup is exactly 3 days old: kept */
    assert_string_equal(listing(dir), "audit-2024-05-01T10-20-30.123.txt "
                                      "audit-2024-05-11T10-20-30.123.log "
                                      "audit-2024-05-12T10-20-30.123.log "
                                      "audit-2024-05-13T10-20-30.123.log "
                                      "audit-2024-05-14T10-20-30.123.log audit-yesterday.log "
                                      "audit.log audit.log.1 other-2024-05-01T10-20-30.123.log");
    assert_int_equal(api_audit_file_write(f, "0123456789", 10, T0 + 16 * DAY), 0);
    assert_string_equal(listing(dir), "audit-2024-05-01T10-20-30.123.txt "
                                      "audit-2024-05-14T10-20-30.123.log "
                                      "audit-2024-05-17T10-20-30.123.log audit-yesterday.log "
                                      "audit.log audit.log.1 other-2024-05-01T10-20-30.123.log");
    api_audit_file_close(f);
    tu_rmtree(dir);
    free(dir);
}

static void test_open_errors(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("audit-err");
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/file", dir);
    FILE *o = fopen(path, "w");
    assert_non_null(o);
    fclose(o);
    /* a directory path that is a file */
    snprintf(path, sizeof path, "%s/file/audit.log", dir);
    api_audit_file_opts_t opts = {.path = path};
    api_audit_file_t *f = NULL;
    assert_int_equal(api_audit_file_open(&opts, T0, &f, err, sizeof err), KP_EIO);
    assert_null(f);
    assert_non_null(strstr(err, path));
    tu_rmtree(dir);
    free(dir);
}

/* The log end to end: events in order, all written by stop(), counted. */
static void test_log(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("audit-log");
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/audit.log", dir);
    const char *yaml = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";
    api_audit_policy_t *p = NULL;
    assert_int_equal(api_audit_policy_parse(yaml, strlen(yaml), &p, err, sizeof err, NULL, 0), 0);
    api_audit_file_opts_t o = {.path = path};
    api_audit_t *a = NULL;
    assert_int_equal(api_audit_start(p, &o, &a, err, sizeof err), 0);
    for (int i = 0; i < 500; i++) {
        api_audit_item_t *it = calloc(1, sizeof *it);
        assert_non_null(it);
        /* head {"n":I, empty mid, tail } */
        char t[32];
        int n = snprintf(t, sizeof t, "{\"n\":%d", i);
        it->text = malloc((size_t)n + 4);
        assert_non_null(it->text);
        memcpy(it->text, t, (size_t)n + 1);
        memcpy(it->text + n + 1, "\0}", 3);
        it->mid = (size_t)n + 1;
        it->tail = (size_t)n + 2;
        api_audit_push(a, it);
    }
    api_audit_count_level(a, API_AUDIT_METADATA);
    api_audit_push(a, NULL); /* one that could not be built */
    buf_t m;
    buf_init(&m, SIZE_MAX);
    assert_int_equal(api_audit_metrics(a, &m), 0);
    assert_int_equal(buf_append(&m, "", 1), 0);
    assert_non_null(strstr(m.p, "apiserver_audit_event_total 501\n"));
    assert_non_null(strstr(m.p, "apiserver_audit_error_total{plugin=\"buffered\"} 0\n"));
    assert_non_null(strstr(m.p, "apiserver_audit_error_total{plugin=\"log\"} 1\n"));
    assert_non_null(strstr(m.p, "apiserver_audit_level_total{level=\"Metadata\"} 1\n"));
    buf_reset(&m);
    api_audit_stop(a);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[64];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char want[64];
        snprintf(want, sizeof want, "{\"n\":%d}\n", n++);
        assert_string_equal(line, want);
    }
    fclose(f);
    assert_int_equal(n, 500);
    assert_int_equal(api_audit_metrics(NULL, &m), 0);
    assert_int_equal(buf_append(&m, "", 1), 0);
    assert_non_null(strstr(m.p, "apiserver_audit_event_total 0\n"));
    assert_non_null(strstr(m.p, "apiserver_audit_error_total{plugin=\"buffered\"} 0\n"));
    assert_non_null(strstr(m.p, "apiserver_audit_level_total{level=\"RequestResponse\"} 0\n"));
    buf_free(&m);
    apiserver_audit_policy_free(p);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backup_name),
        cmocka_unit_test(test_rotate_at_size),
        cmocka_unit_test(test_max_backups_and_age),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
