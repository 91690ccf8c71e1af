/*
 * par.c -- see par.h.
 */
#include "lib/par.h"

#include <pthread.h>

typedef struct par_job {
    void (*fn)(void *arg, size_t i);
    void *arg;
    size_t i;
} par_job_t;

static void *par_main(void *p)
{
    par_job_t *j = p;
    j->fn(j->arg, j->i);
    return NULL;
}

void par_each(size_t n, void (*fn)(void *arg, size_t i), void *arg)
{
    for (size_t from = 0; from < n; from += PAR_MAX) {
        size_t k = n - from < PAR_MAX ? n - from : PAR_MAX;
        par_job_t jobs[PAR_MAX];
        pthread_t th[PAR_MAX];
        int started[PAR_MAX];
        for (size_t j = 0; j < k; j++) {
            jobs[j] = (par_job_t){fn, arg, from + j};
            started[j] = !pthread_create(&th[j], NULL, par_main, &jobs[j]);
            if (!started[j]) fn(arg, from + j);
        }
        for (size_t j = 0; j < k; j++)
            if (started[j]) pthread_join(th[j], NULL);
    }
}
