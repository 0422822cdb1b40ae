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
#include "floor.h"

#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct run run;
    if (parse_run(argc, argv, &run)) return 2;

    int ep = epoll_create1(0);
    struct conn *c = calloc(run.nconn, sizeof *c);
    int *idle = malloc(run.nconn * sizeof *idle), nidle = 0;
    for (int i = 0; i < run.nconn; i++) {
        if ((c[i].fd = connect_one(&run)) < 0) return 1;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (unsigned)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
        idle[nidle++] = i;
    }
    long long due = 0, answered = 0, late = 0;
    long long total = (long long)(run.rate * run.seconds);
    struct epoll_event evs[256];
    double start = now_s(), end = start + run.seconds;
    for (;;) {
        double t = now_s();
        /* Every request due by now goes out on a free connection. */
        while (due < total && start + due / run.rate <= t && nidle > 0) {
            if (t - (start + due / run.rate) > 0.001) late++;
            struct conn *k = &c[idle[--nidle]];
            if (write(k->fd, run.req, run.reqlen) != run.reqlen) {
                perror("write");
                return 1;
            }
            k->busy = 1;
            due++;
        }
        if (answered >= total || (t >= end + 2.0)) break;
        int n = epoll_wait(ep, evs, 256, (int)((run.tick_us + 999) / 1000));
        for (int e = 0; e < n; e++) {
            struct conn *k = &c[evs[e].data.u32];
            ssize_t r = read(k->fd, k->buf + k->have, BUF - k->have);
            if (r <= 0) {
                if (r < 0 && errno == EAGAIN) continue;
                fprintf(stderr, "connection %u closed\n", evs[e].data.u32);
                return 1;
            }
            k->have += (size_t)r;
            if (answered_on(k)) {
                answered++;
                idle[nidle++] = (int)evs[e].data.u32;
            }
        }
    }
    double took = now_s() - start;
    print_result(answered, late, total - due, took);
    return 0;
}
