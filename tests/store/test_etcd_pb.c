/*
 * test_etcd_pb.c -- etcd's v3 messages (src/store/etcd_pb.c) without an
 * etcd: requests are decoded field by field and compared with what etcd's
 * protobuf definitions say they must hold; responses are built as etcd
 * builds them (with the same wire writer) and decoded; malformed bytes are
 * KP_ECORRUPT. test_grpc drives the same messages against a real etcd.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/pbwire.h"
#include "store/etcd_pb.h"

/* Do the n bytes at p read as protobuf fields, all of them? */
static int parses(const uint8_t *p, size_t n)
{
    pbr_t r = {p, p + n};
    pbr_val_t f;
    while (r.p < r.end)
        if (pbr_field(&r, &f)) return 0;
    return 1;
}

/* A message's fields as "num=value" (varints), "num{...}" (a nested
 * message: num is in `nested` and its bytes read as fields) or
 * "num'bytes'", space-separated: a readable form to compare requests
 * with. */
static void dump(const uint8_t *p, size_t n, const char *nested, char *out, size_t cap)
{
    pbr_t r = {p, p + n};
    size_t len = strlen(out);
    while (r.p < r.end) {
        pbr_val_t f;
        assert_null(pbr_field(&r, &f));
        char num[8];
        snprintf(num, sizeof num, ",%u,", f.num);
        if (f.wt == PBW_VARINT) {
            len +=
                (size_t)snprintf(out + len, cap - len, "%u=%llu ", f.num, (unsigned long long)f.u);
        } else if (f.wt == PBW_LEN && strstr(nested, num) && parses(f.data, f.len)) {
            len += (size_t)snprintf(out + len, cap - len, "%u{", f.num);
            dump(f.data, f.len, nested, out, cap);
            len = strlen(out);
            len += (size_t)snprintf(out + len, cap - len, "} ");
        } else {
            len += (size_t)snprintf(out + len, cap - len, "%u'%.*s' ", f.num, (int)f.len,
                                    (const char *)f.data);
        }
        assert_true(len < cap);
    }
}

static void expect_msg(buf_t *b, const char *nested, const char *want)
{
    char got[2048] = "";
    dump((const uint8_t *)b->p, b->len, nested, got, sizeof got);
    assert_string_equal(got, want);
    buf_free(b);
    buf_init(b, (size_t)-1);
}

static void test_requests(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, (size_t)-1);

    assert_int_equal(etcd_pb_range(&b, "/k", 2, NULL, 0, 0, 0, 0), 0);
    expect_msg(&b, "", "1'/k' ");
    assert_int_equal(etcd_pb_range(&b, "/a/", 3, "/a0", 3, 500, 42, ETCD_PB_KEYS_ONLY), 0);
    expect_msg(&b, "", "1'/a/' 2'/a0' 3=500 4=42 8=1 ");
    assert_int_equal(etcd_pb_range(&b, "\0", 1, "\0", 1, 0, 0, ETCD_PB_COUNT_ONLY), 0);
    expect_msg(&b, "", "1'' 2'' 9=1 "); /* one NUL byte each, printed as '' */

    /* Create: if create_revision == 0 (EQUAL is 0, left out; the oneof
     * value is written though 0) then put; no failure branch. */
    assert_int_equal(etcd_pb_write_txn(&b, ETCD_PB_CREATE, "/k", 2, "v", 1, 0), 0);
    expect_msg(&b, ",1,2,", "1{2=1 3'/k' 5=0 } 2{2{1'/k' 2'v' } } ");
    /* Update at a revision: if mod_revision == 7 then put, else range. */
    assert_int_equal(etcd_pb_write_txn(&b, ETCD_PB_PUT, "/k", 2, "v", 1, 7), 0);
    expect_msg(&b, ",1,2,3,", "1{2=2 3'/k' 6=7 } 2{2{1'/k' 2'v' } } 3{1{1'/k' 8=1 } } ");
    /* Unconditional update: if create_revision > 0 (GREATER). */
    assert_int_equal(etcd_pb_write_txn(&b, ETCD_PB_PUT, "/k", 2, "", 0, 0), 0);
    expect_msg(&b, ",1,2,3,", "1{1=1 2=1 3'/k' 5=0 } 2{2{1'/k' } } 3{1{1'/k' 8=1 } } ");
    /* Delete at a revision. */
    assert_int_equal(etcd_pb_write_txn(&b, ETCD_PB_DELETE, "/k", 2, NULL, 0, 9), 0);
    expect_msg(&b, ",1,2,3,", "1{2=2 3'/k' 6=9 } 2{3{1'/k' } } 3{1{1'/k' 8=1 } } ");
    assert_int_equal(etcd_pb_write_txn(&b, 0, "/k", 2, NULL, 0, 9), KP_EINVAL);

    assert_int_equal(etcd_pb_compact(&b, 100, 1), 0);
    expect_msg(&b, "", "1=100 2=1 ");
    assert_int_equal(etcd_pb_watch_create(&b, "/p/", 3, "/p0", 3, 12, 1, 1), 0);
    expect_msg(&b, ",1,", "1{1'/p/' 2'/p0' 3=12 4=1 6=1 8=1 } ");
    assert_int_equal(etcd_pb_watch_progress(&b), 0);
    expect_msg(&b, ",3,", "3{} ");
    assert_int_equal(etcd_pb_watch_cancel(&b, 5), 0);
    expect_msg(&b, ",2,", "2{1=5 } ");
    buf_free(&b);
}

/* ---- responses, built as etcd builds them ---- */

static void put_varint(pbw_t *w, uint32_t f, uint64_t v)
{
    pbw_tag(w, f, PBW_VARINT);
    pbw_varint(w, v);
}

static void put_header(pbw_t *w, int64_t rev)
{
    size_t h = pbw_begin(w, 1);
    put_varint(w, 1, 11);
    put_varint(w, 2, 22);
    put_varint(w, 3, (uint64_t)rev);
    put_varint(w, 4, 4);
    pbw_end(w, h);
}

static void put_kv(pbw_t *w, uint32_t field, const char *k, const char *v, int64_t c, int64_t m)
{
    size_t s = pbw_begin(w, field);
    pbw_bytes(w, 1, k, strlen(k));
    put_varint(w, 2, (uint64_t)c);
    put_varint(w, 3, (uint64_t)m);
    put_varint(w, 4, 1);
    if (*v) pbw_bytes(w, 5, v, strlen(v));
    put_varint(w, 99, 1); /* a field of a later etcd: skipped */
    pbw_end(w, s);
}

typedef struct seen {
    char keys[256];
    int n;
} seen_t;

static int on_kv(void *arg, const etcd_pb_kv_t *kv)
{
    seen_t *s = arg;
    size_t len = strlen(s->keys);
    snprintf(s->keys + len, sizeof s->keys - len, "%.*s=%.*s@%lld/%lld ", (int)kv->key_len,
             (const char *)kv->key, (int)kv->value_len, (const char *)kv->value,
             (long long)kv->create_rev, (long long)kv->mod_rev);
    s->n++;
    return 0;
}

static int stop_at_first(void *arg, const etcd_pb_kv_t *kv)
{
    (void)kv;
    (void)arg;
    return KP_ECLOSED;
}

static void test_range_and_txn(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, (size_t)-1);
    pbw_t w = {.b = &b};
    put_header(&w, 50);
    put_kv(&w, 2, "/a", "one", 3, 5);
    put_kv(&w, 2, "/b", "", 4, 4);
    put_varint(&w, 3, 1);
    put_varint(&w, 4, 7);
    assert_int_equal(w.rc, 0);
    etcd_pb_header_t h;
    seen_t s = {0};
    int more;
    int64_t count;
    assert_int_equal(etcd_pb_range_resp((const uint8_t *)b.p, b.len, &h, on_kv, &s, &more, &count),
                     0);
    assert_int_equal(h.revision, 50);
    assert_int_equal(h.cluster_id, 11);
    assert_int_equal(h.member_id, 22);
    assert_int_equal(h.raft_term, 4);
    assert_string_equal(s.keys, "/a=one@3/5 /b=@4/4 ");
    assert_int_equal(more, 1);
    assert_int_equal(count, 7);
    assert_int_equal(
        etcd_pb_range_resp((const uint8_t *)b.p, b.len, &h, stop_at_first, NULL, &more, &count),
        KP_ECLOSED);
    assert_int_equal(etcd_pb_header_resp((const uint8_t *)b.p, b.len, &h), 0);
    assert_int_equal(h.revision, 50);
    buf_free(&b);

    /* A failed compare: the failure branch's range holds the key. */
    buf_init(&b, (size_t)-1);
    w = (pbw_t){.b = &b};
    put_header(&w, 60);
    size_t op = pbw_begin(&w, 3);
    size_t rr = pbw_begin(&w, 1);
    put_header(&w, 60);
    put_kv(&w, 2, "/k", "", 8, 9);
    pbw_end(&w, rr);
    pbw_end(&w, op);
    etcd_pb_txn_result_t t;
    assert_int_equal(etcd_pb_txn_resp((const uint8_t *)b.p, b.len, &t), 0);
    assert_int_equal(t.h.revision, 60);
    assert_false(t.succeeded);
    assert_true(t.found);
    assert_int_equal(t.kv.mod_rev, 9);
    assert_memory_equal(t.kv.key, "/k", 2);
    buf_free(&b);

    /* Succeeded: a put's response; nothing found. */
    buf_init(&b, (size_t)-1);
    w = (pbw_t){.b = &b};
    put_header(&w, 61);
    put_varint(&w, 2, 1);
    op = pbw_begin(&w, 3);
    size_t pr = pbw_begin(&w, 2);
    put_header(&w, 61);
    pbw_end(&w, pr);
    pbw_end(&w, op);
    assert_int_equal(etcd_pb_txn_resp((const uint8_t *)b.p, b.len, &t), 0);
    assert_true(t.succeeded);
    assert_false(t.found);
    assert_int_equal(t.h.revision, 61);
    buf_free(&b);
}

typedef struct evs {
    char text[512];
} evs_t;

static int on_event(void *arg, const etcd_pb_event_t *ev)
{
    evs_t *e = arg;
    size_t len = strlen(e->text);
    snprintf(e->text + len, sizeof e->text - len, "%s %.*s@%lld prev=%d/%.*s ",
             ev->type == ETCD_PB_EV_DELETE ? "DELETE" : "PUT", (int)ev->kv.key_len,
             (const char *)ev->kv.key, (long long)ev->kv.mod_rev, ev->has_prev,
             (int)ev->prev.value_len, (const char *)ev->prev.value);
    return 0;
}

static void test_watch_status_snapshot(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, (size_t)-1);
    pbw_t w = {.b = &b};
    put_header(&w, 70);
    put_varint(&w, 2, 3);
    put_varint(&w, 7, 1);
    size_t e = pbw_begin(&w, 11); /* PUT (type 0 left out), with prev */
    put_kv(&w, 2, "/x", "new", 5, 69);
    put_kv(&w, 3, "/x", "old", 5, 60);
    pbw_end(&w, e);
    e = pbw_begin(&w, 11);
    put_varint(&w, 1, 1);
    put_kv(&w, 2, "/y", "", 6, 70);
    pbw_end(&w, e);
    etcd_pb_watch_resp_t r;
    evs_t seen = {""};
    assert_int_equal(etcd_pb_watch_resp((const uint8_t *)b.p, b.len, &r, on_event, &seen), 0);
    assert_int_equal(r.h.revision, 70);
    assert_int_equal(r.watch_id, 3);
    assert_true(r.fragment);
    assert_false(r.created);
    assert_int_equal(r.events, 2);
    assert_string_equal(seen.text, "PUT /x@69 prev=1/old DELETE /y@70 prev=0/ ");
    buf_free(&b);

    /* Canceled: compacted, with a reason. */
    buf_init(&b, (size_t)-1);
    w = (pbw_t){.b = &b};
    put_header(&w, 80);
    put_varint(&w, 4, 1);
    put_varint(&w, 5, 40);
    pbw_bytes(&w, 6, "mvcc: required revision has been compacted", 42);
    assert_int_equal(etcd_pb_watch_resp((const uint8_t *)b.p, b.len, &r, NULL, NULL), 0);
    assert_true(r.canceled);
    assert_int_equal(r.compact_revision, 40);
    assert_int_equal(r.cancel_reason_len, 42);
    assert_memory_equal(r.cancel_reason, "mvcc: required", 14);
    buf_free(&b);

    buf_init(&b, (size_t)-1);
    w = (pbw_t){.b = &b};
    put_header(&w, 90);
    pbw_bytes(&w, 2, "3.4.23", 6);
    put_varint(&w, 3, 1 << 20);
    put_varint(&w, 4, 22);
    put_varint(&w, 5, 100);
    put_varint(&w, 6, 2);
    put_varint(&w, 9, 1 << 19);
    etcd_pb_status_t st;
    assert_int_equal(etcd_pb_status_resp((const uint8_t *)b.p, b.len, &st), 0);
    assert_string_equal(st.version, "3.4.23");
    assert_int_equal(st.db_size, 1 << 20);
    assert_int_equal(st.db_size_in_use, 1 << 19);
    assert_int_equal(st.leader, 22);
    assert_int_equal(st.raft_index, 100);
    assert_int_equal(st.raft_term, 2);
    buf_free(&b);

    buf_init(&b, (size_t)-1);
    w = (pbw_t){.b = &b};
    put_header(&w, 91);
    put_varint(&w, 2, 1000);
    pbw_bytes(&w, 3, "chunk", 5);
    etcd_pb_snapshot_t sn;
    assert_int_equal(etcd_pb_snapshot_resp((const uint8_t *)b.p, b.len, &sn), 0);
    assert_int_equal(sn.remaining_bytes, 1000);
    assert_int_equal(sn.blob_len, 5);
    assert_memory_equal(sn.blob, "chunk", 5);
    buf_free(&b);
}

static void test_malformed(void **state)
{
    (void)state;
    etcd_pb_header_t h;
    int more;
    int64_t count;
    static const uint8_t truncated[] = {0x18, 0x80};            /* varint cut short */
    static const uint8_t header_varint[] = {0x08, 0x01};        /* header as a varint */
    static const uint8_t past_end[] = {0x12, 0x05, 0x0a, 0x01}; /* length past the end */
    static const uint8_t group[] = {0x0b};                      /* a group */
    assert_int_equal(etcd_pb_range_resp(truncated, sizeof truncated, &h, NULL, NULL, &more, &count),
                     KP_ECORRUPT);
    assert_int_equal(
        etcd_pb_range_resp(header_varint, sizeof header_varint, &h, NULL, NULL, &more, &count),
        KP_ECORRUPT);
    assert_int_equal(etcd_pb_range_resp(past_end, sizeof past_end, &h, NULL, NULL, &more, &count),
                     KP_ECORRUPT);
    etcd_pb_watch_resp_t r;
    assert_int_equal(etcd_pb_watch_resp(group, sizeof group, &r, NULL, NULL), KP_ECORRUPT);
    etcd_pb_txn_result_t t;
    assert_int_equal(etcd_pb_txn_resp(truncated, sizeof truncated, &t), KP_ECORRUPT);
    /* The empty message is every field at its default. */
    assert_int_equal(etcd_pb_range_resp((const uint8_t *)"", 0, &h, NULL, NULL, &more, &count), 0);
    assert_int_equal(h.revision, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_range_and_txn),
        cmocka_unit_test(test_watch_status_snapshot),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
