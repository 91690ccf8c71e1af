/*
 * test_job.c -- the pure logic of the Job controller (src/controllers/job.c
 * through job_int.h): the pod failure back-off (10 s doubling, 6 min cap),
 * status.completedIndexes as Kubernetes writes and reads it, which indexes
 * an Indexed Job creates next, how many pods a Job wants active, and the
 * completion index a pod's annotation gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/job_int.h"

static void test_backoff_delay(void **state)
{
    (void)state;
    assert_int_equal(job__backoff_delay_ms(0), 0);
    assert_int_equal(job__backoff_delay_ms(1), 10000);
    assert_int_equal(job__backoff_delay_ms(2), 20000);
    assert_int_equal(job__backoff_delay_ms(3), 40000);
    assert_int_equal(job__backoff_delay_ms(6), 320000);
    assert_int_equal(job__backoff_delay_ms(7), 360000); /* 640 s, capped */
    assert_int_equal(job__backoff_delay_ms(1000), 360000);
}

static void test_backoff_remaining(void **state)
{
    (void)state;
    assert_int_equal(job__backoff_remaining_ms(0, 0), 0);
    assert_int_equal(job__backoff_remaining_ms(1, 0), 10000);
    assert_int_equal(job__backoff_remaining_ms(1, 4000), 6000);
    assert_int_equal(job__backoff_remaining_ms(1, 10000), 0);
    assert_int_equal(job__backoff_remaining_ms(2, 25000), 0);
    assert_int_equal(job__backoff_remaining_ms(2, 5000), 15000);
    /* A finish time in the future (clock skew) waits the whole delay. */
    assert_int_equal(job__backoff_remaining_ms(1, -3000), 10000);
}

/* Format set (given as a string of '0'/'1') and compare. */
static void check_format(const char *bits, const char *want)
{
    int n = (int)strlen(bits);
    unsigned char set[64] = {0};
    for (int i = 0; i < n; i++)
        set[i] = bits[i] == '1';
    char *got = job__indexes_format(set, n);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_indexes_format(void **state)
{
    (void)state;
    check_format("", "");
    check_format("000", "");
    check_format("111", "0-2");
    check_format("1110100", "0-2,4");
    check_format("0001100", "3,4"); /* a run of two: a comma, as Kubernetes */
    check_format("1010101", "0,2,4,6");
    check_format("0111111111111", "1-12");
}

static void check_parse(const char *text, int completions, const char *want_bits, size_t want_n)
{
    unsigned char set[64] = {0};
    size_t n = job__indexes_parse(text, completions, set);
    assert_int_equal(n, want_n);
    for (int i = 0; i < completions; i++)
        assert_int_equal(set[i], want_bits[i] == '1');
}

static void test_indexes_parse(void **state)
{
    (void)state;
    check_parse("", 5, "00000", 0);
    check_parse(NULL, 5, "00000", 0);
    check_parse("0-2", 5, "11100", 3);
    check_parse("0-2,4", 5, "11101", 4);
    check_parse("3,4", 5, "00011", 2);
    check_parse("1,3-10", 5, "01011", 3);       /* clipped to completions */
    check_parse("x,2,5-3,-1,4", 5, "00101", 2); /* malformed parts skipped */
    /* Round trip. */
    unsigned char set[40] = {0};
    job__indexes_parse("0-5,7,9,10,20-39", 40, set);
    char *s = job__indexes_format(set, 40);
    assert_string_equal(s, "0-5,7,9,10,20-39");
    free(s);
}

static void test_first_pending(void **state)
{
    (void)state;
    int out[8];
    unsigned char done[6] = {1, 0, 1, 0, 0, 0}, active[6] = {0, 1, 0, 0, 1, 0};
    assert_int_equal(job__first_pending(done, active, 6, 8, out), 2);
    assert_int_equal(out[0], 3);
    assert_int_equal(out[1], 5);
    assert_int_equal(job__first_pending(done, active, 6, 1, out), 1);
    assert_int_equal(out[0], 3);
    assert_int_equal(job__first_pending(NULL, NULL, 3, 8, out), 3);
    assert_int_equal(out[2], 2);
    unsigned char all[3] = {1, 1, 1};
    assert_int_equal(job__first_pending(all, NULL, 3, 8, out), 0);
}

static void test_want_active(void **state)
{
    (void)state;
    /* completions 5, parallelism 2 */
    assert_int_equal(job__want_active(5, 2, 0, 0), 2);
    assert_int_equal(job__want_active(5, 2, 4, 1), 1);
    assert_int_equal(job__want_active(5, 2, 5, 0), 0);
    assert_int_equal(job__want_active(5, 2, 7, 0), 0);
    /* no completions: parallelism until a success, then what runs */
    assert_int_equal(job__want_active(-1, 3, 0, 1), 3);
    assert_int_equal(job__want_active(-1, 3, 1, 2), 2);
    assert_int_equal(job__want_active(3, 0, 0, 0), 0);
}

static void test_pod_index(void **state)
{
    (void)state;
    const char *cases[][2] = {
        {"{\"metadata\":{\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"3\"}}}",
         "3"},
        {"{\"metadata\":{\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"x\"}}}",
         "-1"},
        {"{\"metadata\":{\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"-1\"}}}",
         "-1"},
        {"{\"metadata\":{\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"\"}}}",
         "-1"},
        {"{\"metadata\":{}}", "-1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *pod = json_loads(cases[i][0], 0, NULL);
        assert_non_null(pod);
        assert_int_equal(job__pod_index(pod), (int)strtol(cases[i][1], NULL, 10));
        json_decref(pod);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_delay),  cmocka_unit_test(test_backoff_remaining),
        cmocka_unit_test(test_indexes_format), cmocka_unit_test(test_indexes_parse),
        cmocka_unit_test(test_first_pending),  cmocka_unit_test(test_want_active),
        cmocka_unit_test(test_pod_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
