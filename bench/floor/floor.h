/*
 * What bench/floor/paced.c and paced_uring.c share: the command line, the connections, the
 * response framing and the result line. Each floor stays one source file plus this header,
 * built by one `cc` line (bench/rate.py).
 */
#ifndef FLOOR_H
#define FLOOR_H

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BUF 16384

struct conn {
    int fd;
    int busy;        /* a request is in flight */
    size_t have;     /* bytes of the current response read so far */
    char buf[BUF];
};

/* The command line: HOST_IPV4 PORT CONNECTIONS RATE SECONDS [TICK_US=1000], and the request. */
struct run {
    struct sockaddr_in addr;
    int nconn;
    double rate, seconds;
    long tick_us;
    char req[256];
    int reqlen;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Reads the command line into `r`; 0, or 2 (the usage printed) when it is short. */
static int parse_run(int argc, char **argv, struct run *r) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s HOST_IPV4 PORT CONNECTIONS RATE SECONDS [TICK_US]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    r->nconn = atoi(argv[3]);
    r->rate = atof(argv[4]);
    r->seconds = atof(argv[5]);
    r->tick_us = argc > 6 ? atol(argv[6]) : 1000;
    r->reqlen = snprintf(r->req, sizeof r->req, "GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n", host, port);
    memset(&r->addr, 0, sizeof r->addr);
    r->addr.sin_family = AF_INET;
    r->addr.sin_port = htons(port);
    inet_pton(AF_INET, host, &r->addr.sin_addr);
    return 0;
}

/* A connected TCP socket (TCP_NODELAY) to the run's server, or -1 (the error printed). */
static int connect_one(const struct run *r) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (const struct sockaddr *)&r->addr, sizeof r->addr) < 0) {
        perror("connect");
        return -1;
    }
    return fd;
}

/* Bytes of the response at the start of `b` (`n` read), or 0 if it is not complete yet. */
static size_t complete(const char *b, size_t n) {
    const char *end = memmem(b, n, "\r\n\r\n", 4);
    if (!end) return 0;
    size_t head = (size_t)(end - b) + 4;
    const char *cl = memmem(b, head, "Content-Length:", 15);
    if (!cl) cl = memmem(b, head, "content-length:", 15);
    size_t len = cl ? strtoul(cl + 15, NULL, 10) : 0;
    return n >= head + len ? head + len : 0;
}

/* Whether connection `k` now holds a whole response: if so it is taken off the buffer and the
 * connection is free again. */
static int answered_on(struct conn *k) {
    size_t used = complete(k->buf, k->have);
    if (!used) return 0;
    memmove(k->buf, k->buf + used, k->have - used);
    k->have -= used;
    k->busy = 0;
    return 1;
}

/* The result line on stdout. */
static void print_result(long long answered, long long late, long long unsent, double took) {
    printf("{\"requests\": %lld, \"late\": %lld, \"unsent\": %lld, \"duration\": %.6f}\n", answered, late,
           unsent, took);
}

#endif
