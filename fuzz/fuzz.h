/*
 * fuzz.h -- what the fuzz targets of fuzz/ share.
 *
 * Each fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput() (and, where it
 * needs set-up, LLVMFuzzerInitialize()). Built with -DKP_FUZZ=ON and clang,
 * libFuzzer's main drives it; in the test build (gcc, ASan+UBSan) replay.c's
 * main runs it once per file of the committed corpus fuzz/corpus/<name>/.
 *
 * Inputs that carry several parts (a document and a patch, a kind and an
 * object) put them on lines: fz_line() takes the next line off the input,
 * so a corpus file stays readable and editable by hand.
 */
#ifndef KP_FUZZ_H
#define KP_FUZZ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/schema.h"
#include "lib/yamljson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Inputs past this many bytes are skipped: the server caps bodies at 3 MiB
 * before any parser runs, and smaller inputs keep the fuzzer fast. */
#define FZ_INPUT_MAX (256u << 10)

/* Feed a stream decoder p[0..n) as a stream decoder's fuzz target does:
 * whole when `cut` is 0; a byte at a time when it is 64; else in chunks of
 * 0 to 4 * cut bytes from a generator seeded by the input (the same cuts
 * for the same input). Stops at feed()'s first nonzero, which it returns. */
static inline int fz_feed(const uint8_t *p, size_t n, unsigned cut,
                          int (*feed)(void *arg, const uint8_t *p, size_t k), void *arg)
{
    if (!cut) return feed(arg, p, n);
    unsigned seed = cut * 2654435761u + (unsigned)n;
    for (size_t i = 0; i < n;) {
        seed = seed * 1103515245u + 12345u;
        size_t k = cut == 64 ? 1 : (seed >> 8) % (4 * cut + 1);
        if (k > n - i) k = n - i;
        int rc = feed(arg, p + i, k);
        if (rc) return rc;
        i += k;
    }
    return 0;
}

/* The next line of *data (without its '\n') as a new NUL-terminated string
 * the caller frees; *data and *size move past it. NULL when out of memory. */
static inline char *fz_line(const uint8_t **data, size_t *size)
{
    const uint8_t *nl = memchr(*data, '\n', *size);
    size_t n = nl ? (size_t)(nl - *data) : *size;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, *data, n);
    s[n] = 0;
    *data += nl ? n + 1 : n;
    *size -= nl ? n + 1 : n;
    return s;
}

/* The rest of the input as a NUL-terminated copy (the parsers that take C
 * strings stop at a NUL byte, as the server's do). Caller frees. */
static inline char *fz_str(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return NULL;
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* A JSON document as the API server decodes a body (any value, duplicate
 * keys allowed, the last winning); NULL if it does not parse. New reference. */
static inline json_t *fz_json(const char *text, size_t len)
{
    return json_loadb(text, len, JSON_DECODE_ANY, NULL);
}

/* YAML as the API server converts an apply body (rest_patch.c's budgets):
 * the one call of yaml_to_json() in fuzz/. 0 with *out (new reference), or the
 * KP_* code. */
static inline int fz_yaml(const char *text, size_t len, json_t **out, char *err, size_t errlen)
{
    static const yamljson_limits_t lim = {.max_depth = API_JSON_DEPTH_MAX,
                                          .max_bytes = API_YAML_BYTES_MAX,
                                          .max_alias_bytes = API_YAML_ALIAS_MAX};
    return yaml_to_json(text, len, &lim, out, err, errlen);
}

/* A private directory for targets whose parser reads a file (fz_file());
 * removed with its files at exit. 0, or -1 if it cannot be made. */
int fz_tmpdir_init(void);
/* Write the input to the file `name` in that directory; its path goes to
 * path (size n). 0, or -1 on an I/O error. */
int fz_file(const char *name, const uint8_t *data, size_t size, char *path, size_t n);

/* The API's type facts (schema.h), loaded at the first call (abort()s if
 * they do not parse); kept for the process. */
const api_schema_t *fz_schema(void);

/* The schema node of the kind a line names: "apps/v1 Deployment", "v1 Pod"
 * (NULL if the API has no such kind: the engines then treat the object as
 * schemaless, as for a custom resource). */
static inline const json_t *fz_kind_node(const api_schema_t *s, const char *line)
{
    char group[64] = "", version[64] = "", kind[128] = "";
    const char *sp = strchr(line, ' ');
    if (!sp || (size_t)(sp - line) >= sizeof version) return NULL;
    const char *slash = memchr(line, '/', (size_t)(sp - line));
    if (slash) {
        snprintf(group, sizeof group, "%.*s", (int)(slash - line), line);
        snprintf(version, sizeof version, "%.*s", (int)(sp - slash - 1), slash + 1);
    } else {
        snprintf(version, sizeof version, "%.*s", (int)(sp - line), line);
    }
    snprintf(kind, sizeof kind, "%s", sp + 1);
    char *end = strchr(kind, ' ');
    if (end) *end = 0;
    return api_schema_kind(s, group, version, kind, NULL);
}

#endif
