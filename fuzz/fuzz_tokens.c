/*
 * fuzz_tokens.c -- the static token file (apiserver/authn.c,
 * --token-auth-file: CSV token,user,uid[,"groups"]) and bearer-token
 * matching (http/authn.h's api_authn_token). Input: a first line, the token a request presents, then the
 * file. The file is written to a private directory and loaded; when it
 * loads, the token is matched against it.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "apiserver/apiserver.h"
#include "apiserver/http/authn.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (fz_tmpdir_init()) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    char *token = fz_line(&data, &size);
    char path[512], err[512];
    apiserver_tokens_t *t = NULL;
    if (token && !fz_file("tokens.csv", data, size, path, sizeof path) &&
        !apiserver_tokens_load(path, &t, err, sizeof err)) {
        (void)apiserver_tokens_count(t);
        static const char *const g[] = {"system:masters"};
        api_user_t admin = {.name = "admin", .uid = "", .groups = g, .ngroups = 1}, u;
        if (api_authn_token("admin-token-0123456789", &admin, t, token, &u) == API_AUTHN_OK &&
            !u.name)
            abort(); /* a match always names its user */
        apiserver_tokens_free(t);
    }
    free(token);
    return 0;
}
