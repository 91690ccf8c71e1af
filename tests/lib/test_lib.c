/*
 * test_lib.c -- src/lib building blocks: the capped buffer and the error table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "testutil.h"

static void test_buf_grows_and_caps(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1000);
    assert_null(b.p);
    for (int i = 0; i < 100; i++) assert_int_equal(buf_append(&b, "0123456789", 10), 0);
    assert_int_equal(b.len, 1000);
    assert_int_equal(b.p[1000], '\0');
    /* Hitting the cap is an error that leaves the buffer as it was. */
    assert_int_equal(buf_append(&b, "x", 1), KP_ETOOLARGE);
    assert_int_equal(b.len, 1000);
    assert_memory_equal(b.p + 990, "0123456789", 10);
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.p, "");
    assert_int_equal(buf_append(&b, "", 0), 0);
    buf_free(&b);
    assert_null(b.p);
    assert_int_equal(b.max, 1000);
}

static void test_buf_reserve_and_detach(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 100);
    assert_int_equal(buf_reserve(&b, 101), KP_ETOOLARGE);
    assert_int_equal(buf_reserve(&b, 50), 0);
    assert_int_equal(b.cap, 51); /* exact: the bytes and the NUL */
    char *before = b.p;
    for (int i = 0; i < 5; i++) assert_int_equal(buf_append(&b, "0123456789", 10), 0);
    assert_ptr_equal(b.p, before); /* reserved: no move */
    assert_int_equal(b.len, 50);
    size_t len;
    char *p = buf_detach(&b, &len);
    assert_int_equal(len, 50);
    assert_int_equal(p[50], '\0');
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.max, 100);
    free(p);
    assert_null(buf_detach(&b, &len));
    assert_int_equal(len, 0);
}

static void test_err_str(void **state)
{
    (void)state;
    assert_string_equal(err_str(0), "ok");
    assert_string_equal(err_str(KP_ECONFLICT), "revision conflict");
    for (int rc = KP_ENOMEM; rc >= KP_EBUSY; rc--)
        assert_string_not_equal(err_str(rc), "unknown error");
    assert_string_equal(err_str(-9999), "unknown error");
}

static void test_buf_append_file(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("buf"), path[512];
    snprintf(path, sizeof path, "%s/f", dir);
    buf_t b;
    buf_init(&b, 8);
    assert_int_equal(buf_append_file(&b, path), KP_ENOTFOUND);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(buf_append_file(&b, path), 0); /* empty: still a string */
    assert_non_null(b.p);
    assert_int_equal(b.len, 0);
    f = fopen(path, "w");
    fputs("abcdefgh", f);
    fclose(f);
    assert_int_equal(buf_append_file(&b, path), 0);
    assert_string_equal(b.p, "abcdefgh");
    buf_reset(&b);
    f = fopen(path, "a");
    fputs("i", f);
    fclose(f);
    assert_int_equal(buf_append_file(&b, path), KP_ETOOLARGE); /* 9 bytes, cap 8 */
    buf_free(&b);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_grows_and_caps),
        cmocka_unit_test(test_buf_reserve_and_detach),
        cmocka_unit_test(test_buf_append_file),
        cmocka_unit_test(test_err_str),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
