/*
 * docs.h -- what the server says of itself: discovery and /version
 * (discovery.c), health (health.c); OpenAPI is openapi.h.
 */
#ifndef KP_API_DOCS_H
#define KP_API_DOCS_H


struct api_req;

/* discovery.c */
int api_serve_discovery(struct api_req *r);

/* /livez, /readyz, /healthz and their checks (health.c). */
int api_serve_health(struct api_req *r);

#endif
