/*
 * fuzz_protobuf.c -- protobuf request bodies (apiserver/protobuf.c): the
 * "k8s\0" envelope and the kinds kubectl's typed clients send. Input: the
 * body. A body that decodes must print as JSON.
 */
#include "fuzz.h"
#include "apiserver/protobuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    json_t *out = NULL;
    char err[512];
    if (!api_pb_decode(data, size, &out, err, sizeof err)) {
        char *text = json_dumps(out, JSON_COMPACT);
        free(text);
        json_decref(out);
    }
    return 0;
}
