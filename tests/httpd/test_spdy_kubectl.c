/*
 * test_spdy_kubectl.c -- SPDY/3.1 (lib/spdy.h) on a connection the engine
 * switched (httpd_upgrade), spoken by real kubectl: 1.20, whose exec speaks
 * only SPDY, and 1.32, which asks for a WebSocket first and falls back to
 * SPDY when the server refuses the WebSocket upgrade (client-go's fallback
 * executor).
 *
 * The server here is a stand-in for a pod's exec endpoint, not kplane's:
 * GET .../pods/p answers a running pod; POST .../pods/p/exec switches to
 * SPDY/3.1 with the v4.channel.k8s.io protocol (what kubelet picks for
 * these clients), answers each stream kubectl opens (error, stdin, stdout,
 * stderr) with SYN_REPLY, and runs one of three "commands" once every
 * stream it expects is open: `echo ARGS...` (stdout), `cat` (stdin back to
 * stdout until stdin ends) and `fail N` (stderr, then the v4 error
 * stream's Status with exit code N). What kubectl prints and its exit code
 * prove both directions of the framing, the header blocks' shared
 * compression context and the v4 status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "httpd/httpd.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/spdy.h"
#include "testutil.h"

enum { S_ERROR, S_STDIN, S_STDOUT, S_STDERR, S_N };
static const char *const STREAM_TYPES[S_N] = {"error", "stdin", "stdout", "stderr"};

/* One exec session; touched only on the loop thread once switched. */
typedef struct session {
    httpd_req_t *r;
    spdy_decoder_t dec;
    spdy_encoder_t enc;
    uint32_t id[S_N]; /* stream ids by type (0: not open yet) */
    int want[S_N];    /* the streams the query asked for */
    char cmd[16];     /* echo, cat, fail */
    buf_t args;       /* echo's words, space-separated */
    int exit_code;    /* fail's */
    int started, finished, ended;
} session_t;

static int send_buf(session_t *s, buf_t *b)
{
    int rc = b->len ? httpd_stream_write(s->r, b->p, b->len) : 0;
    buf_reset(b);
    return rc;
}

static int send_data(session_t *s, int type, const void *p, size_t n, int fin)
{
    buf_t b;
    buf_init(&b, SIZE_MAX);
    int rc = spdy_encode_data(&b, s->id[type], fin ? SPDY_FLAG_FIN : 0, p, n);
    if (!rc) rc = send_buf(s, &b);
    buf_free(&b);
    return rc;
}

/* The command is over: close its output streams, then the v4 status. */
static int finish(session_t *s)
{
    char status[512];
    if (s->exit_code)
        snprintf(status, sizeof status,
                 "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with "
                 "non-zero exit code: exit status %d\",\"reason\":\"NonZeroExitCode\","
                 "\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"%d\"}]}}",
                 s->exit_code, s->exit_code);
    else
        snprintf(status, sizeof status, "{\"metadata\":{},\"status\":\"Success\"}");
    int rc = 0;
    if (s->want[S_STDOUT]) rc = send_data(s, S_STDOUT, "", 0, 1);
    if (!rc && s->want[S_STDERR]) rc = send_data(s, S_STDERR, "", 0, 1);
    if (!rc) rc = send_data(s, S_ERROR, status, strlen(status), 1);
    s->finished = 1;
    return rc;
}

static int start_command(session_t *s)
{
    s->started = 1;
    if (!strcmp(s->cmd, "echo")) {
        int rc = buf_append(&s->args, "\n", 1);
        if (!rc) rc = send_data(s, S_STDOUT, s->args.p, s->args.len, 0);
        return rc ? rc : finish(s);
    }
    if (!strcmp(s->cmd, "fail")) {
        int rc = send_data(s, S_STDERR, "failing\n", 8, 0);
        return rc ? rc : finish(s);
    }
    return 0; /* cat: waits for stdin */
}

static int on_frame(void *arg, const spdy_frame_t *f)
{
    session_t *s = arg;
    buf_t b;
    buf_init(&b, SIZE_MAX);
    int rc = 0;
    switch (f->type) {
    case SPDY_SYN_STREAM: {
        size_t len;
        const char *t = spdy_header_get(f->headers, f->n_headers, "streamtype", &len);
        int k = -1;
        for (int i = 0; t && i < S_N; i++)
            if (len == strlen(STREAM_TYPES[i]) && !memcmp(t, STREAM_TYPES[i], len)) k = i;
        if (k < 0 || !s->want[k] || s->id[k]) {
            rc = spdy_encode_rst_stream(&b, f->stream_id, SPDY_RST_PROTOCOL_ERROR);
            break;
        }
        s->id[k] = f->stream_id;
        rc = spdy_encode_syn_reply(&s->enc, &b, f->stream_id, 0, NULL, 0);
        if (!rc) rc = send_buf(s, &b);
        int all = 1;
        for (int i = 0; i < S_N; i++)
            if (s->want[i] && !s->id[i]) all = 0;
        if (!rc && all && !s->started) rc = start_command(s);
        break;
    }
    case SPDY_DATA:
        if (f->stream_id == s->id[S_STDIN] && s->id[S_STDIN] && !s->finished) {
            if (f->len) rc = send_data(s, S_STDOUT, f->data, f->len, 0);
            if (!rc && (f->flags & SPDY_FLAG_FIN)) rc = finish(s);
        }
        break;
    case SPDY_PING:
        rc = spdy_encode_ping(&b, f->value);
        break;
    case SPDY_GOAWAY:
        rc = 1; /* kubectl is done */
        break;
    }
    if (!rc) rc = send_buf(s, &b);
    buf_free(&b);
    return rc;
}

static void session_end(session_t *s)
{
    if (s->ended) return;
    s->ended = 1;
    httpd_stream_end(s->r);
    spdy_decoder_free(&s->dec);
    spdy_encoder_free(&s->enc);
    buf_free(&s->args);
    free(s);
}

static int is_true(const char *v)
{
    return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

/* ---- the server ---- */

#define POD_PATH "/api/v1/namespaces/default/pods/p"

static const char POD[] =
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\",\"namespace\":"
    "\"default\",\"uid\":\"0c8e6a5e-5b0e-4f55-9a57-3c1f4a3ea001\"},\"spec\":{\"containers\":"
    "[{\"name\":\"c\",\"image\":\"busybox\"}]},\"status\":{\"phase\":\"Running\"}}";

static httpd_next_t on_headers(void *arg, httpd_req_t *r, size_t *body_max)
{
    (void)arg;
    (void)r;
    *body_max = 0;
    return HTTPD_READ_BODY;
}

static void reply_text(httpd_req_t *r, int code, const char *text)
{
    static const char *const hdrs[] = {"Content-Type", "application/json", NULL};
    httpd_reply(r, code, hdrs, strdup(text), strlen(text));
}

static void exec_start(httpd_req_t *r)
{
    const char *asked = httpd_upgrade_asked(r);
    const char *protos = httpd_header(r, "X-Stream-Protocol-Version");
    if (!asked || strcasecmp(asked, "SPDY/3.1")) { /* a WebSocket: refused, so 1.32 falls back */
        reply_text(r, 400,
                   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                   "\"message\":\"only SPDY/3.1 here\",\"reason\":\"BadRequest\",\"code\":400}");
        return;
    }
    if (!protos || !strstr(protos, "v4.channel.k8s.io")) {
        reply_text(r, 403,
                   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                   "\"message\":\"v4.channel.k8s.io wanted\",\"code\":403}");
        return;
    }
    session_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->r = r;
    spdy_decoder_init(&s->dec, 0, 0);
    spdy_encoder_init(&s->enc);
    buf_init(&s->args, 4096);
    s->want[S_ERROR] = 1;
    s->want[S_STDIN] = is_true(httpd_arg(r, "stdin"));
    s->want[S_STDOUT] = is_true(httpd_arg(r, "stdout"));
    s->want[S_STDERR] = is_true(httpd_arg(r, "stderr"));
    int words = 0;
    for (size_t i = 0; i < httpd_nargs(r); i++) {
        const char *name, *value;
        httpd_arg_at(r, i, &name, &value);
        if (strcmp(name, "command") || !value) continue;
        if (words++ == 0)
            snprintf(s->cmd, sizeof s->cmd, "%s", value);
        else if (!strcmp(s->cmd, "fail"))
            s->exit_code = (int)strtol(value, NULL, 10);
        else {
            if (s->args.len) buf_append(&s->args, " ", 1);
            buf_append(&s->args, value, strlen(value));
        }
    }
    httpd_set_data(r, s);
    const char *const hdrs[] = {"Upgrade", "SPDY/3.1", "X-Stream-Protocol-Version",
                                "v4.channel.k8s.io", NULL};
    assert_int_equal(httpd_upgrade(r, hdrs), 0);
}

static void on_request(void *arg, httpd_req_t *r)
{
    (void)arg;
    const char *path = httpd_path(r);
    if (!strcmp(path, POD_PATH) && !strcmp(httpd_method(r), "GET")) {
        reply_text(r, 200, POD);
        return;
    }
    if (!strcmp(path, "/api")) { /* discovery, enough to find pods */
        reply_text(r, 200,
                   "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
                   "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
                   "\"serverAddress\":\"127.0.0.1\"}]}");
        return;
    }
    if (!strcmp(path, "/apis")) {
        reply_text(r, 200, "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[]}");
        return;
    }
    if (!strcmp(path, "/api/v1")) {
        reply_text(r, 200,
                   "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
                   "{\"name\":\"pods\",\"singularName\":\"pod\",\"namespaced\":true,"
                   "\"kind\":\"Pod\",\"verbs\":[\"get\",\"list\"],\"shortNames\":[\"po\"]},"
                   "{\"name\":\"pods/exec\",\"singularName\":\"\",\"namespaced\":true,"
                   "\"kind\":\"PodExecOptions\",\"verbs\":[\"create\",\"get\"]}]}");
        return;
    }
    if (!strcmp(path, POD_PATH "/exec")) {
        exec_start(r);
        return;
    }
    reply_text(r, 404,
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
               "\"reason\":\"NotFound\",\"code\":404}");
}

static size_t on_data(void *arg, httpd_req_t *r, const char *p, size_t n)
{
    (void)arg;
    session_t *s = httpd_data(r);
    if (s && spdy_decode(&s->dec, p, n, on_frame, s)) session_end(s);
    return n;
}

static void on_gone(void *arg, httpd_req_t *r)
{
    (void)arg;
    session_t *s = httpd_data(r);
    if (s) session_end(s);
}

typedef struct server {
    httpd_t *h;
    int port;
    char *dir, *kubeconfig;
} server_t;

static void server_start(server_t *sv)
{
    int fd = tu_loopback_socket(&sv->port);
    httpd_config_t cfg = {.tcp_fd = fd,
                          .unix_fd = -1,
                          .workers = 2,
                          .on_headers = on_headers,
                          .on_request = on_request,
                          .on_gone = on_gone,
                          .on_data = on_data};
    assert_int_equal(httpd_start(&cfg, &sv->h), 0);
    sv->dir = tu_tmpdir("spdy");
    assert_true(asprintf(&sv->kubeconfig, "%s/kubeconfig", sv->dir) > 0);
    FILE *f = fopen(sv->kubeconfig, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
            "    server: http://127.0.0.1:%d\nusers:\n- name: u\n  user:\n    token: t\n"
            "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
            "    namespace: default\ncurrent-context: x\n",
            sv->port);
    fclose(f);
}

static void server_stop(server_t *sv)
{
    httpd_stop(sv->h);
    tu_rmtree(sv->dir);
    free(sv->dir);
    free(sv->kubeconfig);
}

/* ---- running kubectl ---- */

typedef struct ran {
    int status; /* exit code; -1 if killed */
    buf_t out, err;
} ran_t;

/* Run `kubectl ARGS` with `input` on its stdin, at most 60 s. */
static void run_kubectl(const server_t *sv, const char *kubectl, const char *const *args,
                        const char *input, ran_t *ran)
{
    int in[2], out[2], err[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(err), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        for (int fd = 3; fd < 64; fd++)
            close(fd);
        const char *argv[16] = {kubectl, "--kubeconfig", sv->kubeconfig, "--request-timeout",
                                "30s"};
        int n = 5;
        for (int i = 0; args[i] && n < 15; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(kubectl, (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    signal(SIGPIPE, SIG_IGN);
    if (input) assert_int_equal(write(in[1], input, strlen(input)), (ssize_t)strlen(input));
    close(in[1]);
    buf_init(&ran->out, 1 << 20);
    buf_init(&ran->err, 1 << 20);
    struct pollfd pf[2] = {{.fd = out[0], .events = POLLIN}, {.fd = err[0], .events = POLLIN}};
    buf_t *sink[2] = {&ran->out, &ran->err};
    time_t deadline = time(NULL) + 60;
    int open_fds = 2;
    while (open_fds && time(NULL) < deadline) {
        if (poll(pf, 2, 1000) <= 0) continue;
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !pf[i].revents) continue;
            char b[4096];
            ssize_t k = read(pf[i].fd, b, sizeof b);
            if (k > 0) {
                buf_append(sink[i], b, (size_t)k);
            } else {
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
            }
        }
    }
    if (open_fds) kill(pid, SIGKILL);
    for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0) close(pf[i].fd);
    int st;
    waitpid(pid, &st, 0);
    ran->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void ran_free(ran_t *ran)
{
    buf_free(&ran->out);
    buf_free(&ran->err);
}

static const char *text(const buf_t *b)
{
    return b->p ? b->p : "";
}

static void check_exec(const char *kubectl)
{
    server_t sv;
    server_start(&sv);
    ran_t ran;

    /* a command's output */
    run_kubectl(&sv, kubectl,
                (const char *const[]){"exec", "p", "--", "echo", "hello", "over", "spdy", NULL},
                NULL, &ran);
    if (ran.status != 0 || strcmp(text(&ran.out), "hello over spdy\n"))
        fail_msg("echo: exit %d, stdout '%s', stderr '%s'", ran.status, text(&ran.out),
                 text(&ran.err));
    ran_free(&ran);

    /* stdin to the command and back, 100 KB of it */
    buf_t in;
    buf_init(&in, 1 << 20);
    for (int i = 0; i < 2000; i++)
        buf_printf(&in, "line %04d of the stdin of cat over spdy\n", i);
    run_kubectl(&sv, kubectl, (const char *const[]){"exec", "-i", "p", "--", "cat", NULL}, in.p,
                &ran);
    if (ran.status != 0 || ran.out.len != in.len || memcmp(text(&ran.out), in.p, in.len))
        fail_msg("cat: exit %d, %zu bytes of %zu on stdout, stderr '%s'", ran.status, ran.out.len,
                 in.len, text(&ran.err));
    ran_free(&ran);
    buf_free(&in);

    /* a command that fails: its stderr, and its exit code as kubectl's */
    run_kubectl(&sv, kubectl, (const char *const[]){"exec", "p", "--", "fail", "3", NULL}, NULL,
                &ran);
    if (ran.status != 3 || !strstr(text(&ran.err), "failing\n"))
        fail_msg("fail 3: exit %d, stdout '%s', stderr '%s'", ran.status, text(&ran.out),
                 text(&ran.err));
    ran_free(&ran);
    server_stop(&sv);
}

static void test_kubectl_1_20(void **state)
{
    (void)state;
    check_exec(KUBECTL_120);
}

static void test_kubectl_1_32(void **state)
{
    (void)state;
    check_exec(KUBECTL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubectl_1_20),
        cmocka_unit_test(test_kubectl_1_32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
