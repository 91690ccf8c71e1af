/*
 * fuzz_protobuf.c -- protobuf bodies (apiserver/protobuf.c, protobuf_enc.c):
 * the "k8s\0" envelope and every kind the generated tables cover. Input: the
 * body. A body that decodes must print as JSON, encode back to protobuf, and
 * that encoding must decode again.
 */
#include "fuzz.h"
#include "apiserver/encode/protobuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    json_t *out = NULL, *again = NULL;
    char err[512];
    if (!api_pb_decode(data, size, &out, err, sizeof err)) {
        char *text = json_dumps(out, JSON_COMPACT);
        free(text);
        buf_t b;
        buf_init(&b, (size_t)FZ_INPUT_MAX * 4 + 4096);
        int rc = api_pb_encode(out, &b);
        if (!rc && api_pb_decode(b.p, b.len, &again, err, sizeof err)) {
            fprintf(stderr, "re-decoding our own encoding failed: %s\n", err);
            abort();
        }
        json_decref(again);
        buf_free(&b);
        json_decref(out);
    }
    return 0;
}
