/*
 * fuzz_request.c -- whole API requests against a real API server in this
 * process (an embedded store in a private directory, plain HTTP on a Unix
 * socket): the JSON and protobuf body decoding and every check the server
 * runs on a body (kind/apiVersion, metadata shapes, fieldValidation's
 * unknown and mistyped fields, the kinds' strategies, a custom resource's
 * schema), the patch types as the REST layer runs them, and the query
 * options of every verb (limit, continue, resourceVersion[Match],
 * labelSelector, fieldSelector, fieldManager, fieldValidation,
 * propagationPolicy, gracePeriodSeconds, orphanDependents, includeObject...).
 *
 * Input, as an HTTP request without its framing:
 *   METHOD TARGET            GET|POST|PUT|PATCH|DELETE, and the path?query
 *   Name: value              headers (Content-Type, Accept, User-Agent...),
 *   ...                      up to an empty line
 *   BODY                     the rest
 * The harness adds Host, Content-Length, Connection: close and the admin
 * token (a request is authenticated: what is fuzzed is the API, not the
 * login). Writes are made with dryRun=All (put first in the query, where the
 * server reads it), so the stored state seeded at start stays as it is and
 * every input replays the same. Watches are skipped: a watch only ends with
 * its timeout. Bytes a request line cannot carry are %-escaped.
 *
 * The server answers on its own threads; ASan/UBSan report there as here.
 * No answer within FZ_REQUEST_TIMEOUT_S is a crash too (a hung request).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "apiserver/apiserver.h"
#include "lib/buf.h"
#include "store/store.h"

/* Generous: the replay in `make test` shares the machine with the whole
 * suite; libFuzzer's own -timeout (fuzz-run: 25 s) catches a hang first. */
#define FZ_REQUEST_TIMEOUT_S 60
#define FZ_CRD_WAIT_MS 60000
#define FZ_TOKEN "fuzz-admin-token-0123456789abcdef"
#define FZ_HEADERS_MAX 16

/* The server of this process: set up once before the first input. */
static struct {
    char dir[64];
    char sock[108]; /* sizeof sun_path */
    store_t *store;
    apiserver_t *api;
} fz;

static void fz_stop(void)
{
    char p[400];
    apiserver_stop(fz.api);
    store_close(fz.store);
    static const char *const files[] = {"data.mdb", "lock.mdb", NULL};
    for (const char *const *f = files; *f; f++) {
        snprintf(p, sizeof p, "%s/store/%s", fz.dir, *f);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/store", fz.dir);
    rmdir(p);
    rmdir(fz.dir);
}

/* Send `req` (len bytes) on a new connection and read the answer into out
 * (capped). 0, or -1 if the server cannot be reached; abort()s when it does
 * not answer in time. */
static int fz_send(const char *req, size_t len, buf_t *out)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    _Static_assert(sizeof fz.sock == sizeof sa.sun_path, "a socket path");
    memcpy(sa.sun_path, fz.sock, sizeof fz.sock);
    struct timeval tv = {.tv_sec = FZ_REQUEST_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        close(fd);
        return -1;
    }
    for (size_t off = 0; off < len;) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* the server may answer before reading it all (413) */
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    char chunk[16384];
    for (;;) {
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            fprintf(stderr, "fuzz_request: no answer within %d s\n", FZ_REQUEST_TIMEOUT_S);
            abort();
        }
        if (n <= 0) break;
        (void)buf_append(out, chunk, (size_t)n); /* past the cap: only the head is kept */
    }
    close(fd);
    return 0;
}

/* A request made by the harness itself (seeding): its status code. */
static int fz_request(const char *method, const char *target, const char *ctype,
                      const char *body)
{
    buf_t req, out;
    buf_init(&req, 1u << 20);
    buf_init(&out, 1u << 20);
    size_t blen = body ? strlen(body) : 0;
    buf_printf(&req,
               "%s %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " FZ_TOKEN
               "\r\nConnection: close\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
               method, target, ctype ? ctype : "application/json", blen);
    buf_append(&req, body ? body : "", blen); /* buf_printf() cuts at 1 KiB */
    int code = -1;
    if (!fz_send(req.p, req.len, &out) && out.len > 12) code = (int)strtol(out.p + 9, NULL, 10);
    buf_free(&req);
    buf_free(&out);
    return code;
}

/* The objects every input meets: a ConfigMap, a Secret, a Deployment, a
 * Pod, a Service, a Node, and a CustomResourceDefinition with one custom
 * resource (once the CRD is served). */
static void fz_seed(void)
{
    static const struct {
        const char *target, *body;
    } objs[] = {
        {"/api/v1/namespaces/default/configmaps",
         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\","
         "\"labels\":{\"app\":\"web\"}},\"data\":{\"a\":\"1\"}}"},
        {"/api/v1/namespaces/default/secrets",
         "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},"
         "\"data\":{\"k\":\"dmFsdWU=\"}}"},
        {"/apis/apps/v1/namespaces/default/deployments",
         "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"
         "\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
         "\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":"
         "[{\"name\":\"nginx\",\"image\":\"nginx:1.25\",\"ports\":[{\"containerPort\":80}]}]}}}}"},
        {"/api/v1/namespaces/default/pods",
         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":"
         "{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\","
         "\"command\":[\"sleep\",\"3600\"]}]}}"},
        {"/api/v1/namespaces/default/services",
         "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"svc\"},"
         "\"spec\":{\"selector\":{\"app\":\"web\"},\"ports\":[{\"port\":80}]}}"},
        {"/api/v1/nodes",
         "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}}"},
        {"/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
         "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
         "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
         "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\","
         "\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},\"versions\":[{\"name\":\"v1\","
         "\"served\":true,\"storage\":true,\"subresources\":{\"status\":{},\"scale\":{"
         "\"specReplicasPath\":\".spec.replicas\",\"statusReplicasPath\":\".status.replicas\"}},"
         "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{"
         "\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"integer\",\"minimum\":1,"
         "\"maximum\":10},\"replicas\":{\"type\":\"integer\"},\"color\":{\"type\":\"string\","
         "\"enum\":[\"red\",\"blue\"],\"default\":\"red\"},\"name\":{\"type\":\"string\","
         "\"pattern\":\"^[a-z]+$\",\"maxLength\":20},\"tags\":{\"type\":\"array\",\"items\":{"
         "\"type\":\"string\"},\"x-kubernetes-list-type\":\"set\"}}},\"status\":{\"type\":"
         "\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}}}]}}"},
    };
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
        int code = fz_request("POST", objs[i].target, NULL, objs[i].body);
        if (code != 201) {
            fprintf(stderr, "fuzz_request: seeding %s: HTTP %d\n", objs[i].target, code);
            abort();
        }
    }
    /* The CRD controller serves the new resource shortly. */
    static const char widget[] =
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},"
        "\"spec\":{\"size\":3,\"name\":\"abc\",\"tags\":[\"x\"]}}";
    for (int i = 0; i < FZ_CRD_WAIT_MS / 10; i++) {
        int code =
            fz_request("POST", "/apis/example.com/v1/namespaces/default/widgets", NULL, widget);
        if (code == 201) return;
        usleep(10000);
    }
    fprintf(stderr, "fuzz_request: the CRD widgets.example.com was never served\n");
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("KPLANE_LOG", "error", 0); /* the server logs every request otherwise */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    int n = snprintf(fz.dir, sizeof fz.dir, "%s/kp-fuzz-XXXXXX", tmp);
    if (n < 0 || (size_t)n >= sizeof fz.dir || !mkdtemp(fz.dir)) {
        fprintf(stderr, "fuzz_request: cannot make a directory in %s (TMPDIR)\n", tmp);
        abort();
    }
    char url[100];
    snprintf(url, sizeof url, "lmdb:%s/store", fz.dir);
    snprintf(fz.sock, sizeof fz.sock, "%s/api.sock", fz.dir);
    if (store_open(url, NULL, &fz.store)) abort();
    apiserver_config_t cfg = {.listen = "127.0.0.1:0",
                              .store = fz.store,
                              .admin_token = FZ_TOKEN,
                              .unix_socket = fz.sock};
    if (apiserver_start(&cfg, &fz.api) || apiserver_serve(fz.api)) abort();
    atexit(fz_stop);
    fz_seed();
    return 0;
}

/* Headers the harness sets itself. */
static int fz_reserved(const char *name, size_t n)
{
    static const char *const names[] = {"host", "content-length", "transfer-encoding",
                                        "connection", "authorization", "expect", NULL};
    for (const char *const *p = names; *p; p++)
        if (strlen(*p) == n && !strncasecmp(*p, name, n)) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    char *line = fz_line(&data, &size);
    if (!line) return 0;
    buf_t req, out;
    buf_init(&req, FZ_INPUT_MAX * 4);
    buf_init(&out, 1u << 20);
    char *sp = strchr(line, ' ');
    if (!sp) goto done;
    *sp = 0;
    const char *method = line, *target = sp + 1;
    int writes = strcmp(method, "GET") != 0;
    if (strcmp(method, "GET") && strcmp(method, "POST") && strcmp(method, "PUT") &&
        strcmp(method, "PATCH") && strcmp(method, "DELETE"))
        goto done;
    if (target[0] != '/' || strcasestr(target, "watch")) goto done;
    /* The request line: the path, then the query with dryRun=All first. */
    buf_printf(&req, "%s ", method);
    const char *q = strchr(target, '?');
    size_t plen = q ? (size_t)(q - target) : strlen(target);
    for (size_t i = 0; i < strlen(target); i++) {
        unsigned char c = (unsigned char)target[i];
        if (i == plen) {
            buf_append(&req, writes ? "?dryRun=All&" : "?", writes ? 12 : 1);
            continue;
        }
        if (c <= 0x20 || c >= 0x7f || c == '#')
            buf_printf(&req, "%%%02X", c);
        else
            buf_append(&req, (const char *)&c, 1);
    }
    if (!q && writes) buf_append(&req, "?dryRun=All", 11);
    buf_printf(&req, " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " FZ_TOKEN
                     "\r\nConnection: close\r\n");
    /* Headers up to the first empty line; a header with bytes HTTP does
     * not allow is left out. */
    for (int n = 0; size;) {
        char *h = fz_line(&data, &size);
        if (!h) goto done;
        size_t hl = strlen(h);
        if (hl && h[hl - 1] == '\r') h[--hl] = 0;
        if (!hl) {
            free(h);
            break;
        }
        const char *colon = strchr(h, ':');
        int ok = colon && colon > h && n < FZ_HEADERS_MAX && !fz_reserved(h, (size_t)(colon - h));
        for (size_t i = 0; ok && i < hl; i++)
            ok = (unsigned char)h[i] >= 0x20 && h[i] != 0x7f;
        for (const char *c = h; ok && c < colon; c++)
            ok = isalnum((unsigned char)*c) || *c == '-' || *c == '_';
        if (ok) {
            buf_append(&req, h, hl);
            buf_append(&req, "\r\n", 2);
            n++;
        }
        free(h);
    }
    buf_printf(&req, "Content-Length: %zu\r\n\r\n", size);
    if (buf_append(&req, (const char *)data, size)) goto done;
    if (fz_send(req.p, req.len, &out)) {
        fprintf(stderr, "fuzz_request: the server is gone\n");
        abort();
    }
done:
    buf_free(&req);
    buf_free(&out);
    free(line);
    return 0;
}
