/*
 * The floor for a held rate (issue 33): the least a load generator can do to send HTTP/1.1
 * requests on a fixed schedule over keep-alive connections and read the answers, recording
 * nothing. One thread, epoll, `connections` sockets with one request in flight each (as
 * strain over HTTP/1.1 without pipelining), request k due at k / rate seconds from the start;
 * every `tick_us` the loop wakes, sends every request that is due on a free connection (a due
 * request without one waits, as strain's does), and reads what arrived. A response is taken
 * as complete when its head and Content-Length body are in: enough for a fixed-size server.
 * The result, one JSON line on stdout: requests answered, sent late, never sent, seconds.
 *
 * Usage: paced HOST_IPV4 PORT CONNECTIONS RATE SECONDS [TICK_US=1000]
 * bench/rate.py builds it with `cc -O2` and runs it beside strain and the peers.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF 16384

struct conn {
    int fd;
    int busy;        /* a request is in flight */
    size_t have;     /* bytes of the current response read so far */
    char buf[BUF];
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
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

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s HOST_IPV4 PORT CONNECTIONS RATE SECONDS [TICK_US]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]), nconn = atoi(argv[3]);
    double rate = atof(argv[4]), seconds = atof(argv[5]);
    long tick_us = argc > 6 ? atol(argv[6]) : 1000;
    char req[256];
    int reqlen = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n", host, port);

    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    int ep = epoll_create1(0);
    struct conn *c = calloc(nconn, sizeof *c);
    int *idle = malloc(nconn * sizeof *idle), nidle = 0;
    for (int i = 0; i < nconn; i++) {
        c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(c[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(c[i].fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            perror("connect");
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (unsigned)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
        idle[nidle++] = i;
    }
    long long due = 0, answered = 0, late = 0;
    long long total = (long long)(rate * seconds);
    struct epoll_event evs[256];
    double start = now_s(), end = start + seconds;
    for (;;) {
        double t = now_s();
        /* Every request due by now goes out on a free connection. */
        while (due < total && start + due / rate <= t && nidle > 0) {
            if (t - (start + due / rate) > 0.001) late++;
            struct conn *k = &c[idle[--nidle]];
            if (write(k->fd, req, reqlen) != reqlen) {
                perror("write");
                return 1;
            }
            k->busy = 1;
            due++;
        }
        if (answered >= total || (t >= end + 2.0)) break;
        int n = epoll_wait(ep, evs, 256, (int)((tick_us + 999) / 1000));
        for (int e = 0; e < n; e++) {
            struct conn *k = &c[evs[e].data.u32];
            ssize_t r = read(k->fd, k->buf + k->have, BUF - k->have);
            if (r <= 0) {
                if (r < 0 && errno == EAGAIN) continue;
                fprintf(stderr, "connection %u closed\n", evs[e].data.u32);
                return 1;
            }
            k->have += (size_t)r;
            size_t used = complete(k->buf, k->have);
            if (used) {
                memmove(k->buf, k->buf + used, k->have - used);
                k->have -= used;
                k->busy = 0;
                answered++;
                idle[nidle++] = (int)evs[e].data.u32;
            }
        }
    }
    double took = now_s() - start;
    printf("{\"requests\": %lld, \"late\": %lld, \"unsent\": %lld, \"duration\": %.6f}\n", answered, late,
           total - due, took);
    return 0;
}
