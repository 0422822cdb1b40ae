/*
 * The floor for a held rate with io_uring (issue 33): bench/floor/paced.c's job, with batched
 * submission. One thread, `connections` HTTP/1.1 keep-alive sockets with one request in flight
 * each, request k due at k / rate seconds from the start; every `tick_us` the loop wakes, sends
 * every request that is due on a free connection (a due request without one waits), and reads
 * what arrived; a response is complete when its head and Content-Length body are in; nothing is
 * recorded. The result, one JSON line on stdout: requests answered, sent late, never sent,
 * seconds (as paced.c's).
 *
 * Why: paced.c, one `write` and one `read` system call per request, is 90 % kernel time, so a
 * generator built like it cannot go much below it. Here a tick's sends (one send SQE per due
 * request) and the re-armed receives go to the kernel together with the wait for completions in
 * one `io_uring_enter` (io_uring_submit_and_wait_timeout), and the answers come back as recv
 * completions: about one system call per wake-up instead of two per request. Successful sends
 * post no completion (IOSQE_CQE_SKIP_SUCCESS; MSG_WAITALL makes a short send the kernel's to
 * finish).
 *
 * Usage: paced_uring HOST_IPV4 PORT CONNECTIONS RATE SECONDS [TICK_US=1000]
 * Build: cc -O2 -o paced_uring bench/floor/paced_uring.c -luring  (liburing 2.3: liburing-dev)
 *
 * Measured (bench/results/floor-uring-2026-11-26.md): about 0.3 system calls per request
 * instead of 2.2, but the same CPU per request as paced.c (1.01x): io_uring's own kernel work
 * (poll arming, task work) takes the place of the system calls saved, and the TCP stack and the
 * wake-ups, which it does not change, are most of the cost.
 *
 * The environment variable PACED_URING picks a variant (the read strategies and setup flags
 * below measured alike, within noise; the default's re-armed recv needs no buffer ring and no
 * copy), a comma-separated list of:
 *   read=rearm      one recv SQE per connection, re-armed after each completion (default)
 *   read=multishot  one multishot recv per connection into a provided buffer ring
 *   setup=defer     IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (default)
 *   setup=coop      IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG
 *   setup=plain     no setup flags
 *   pollfirst=1|0   rearm: IORING_RECVSEND_POLL_FIRST, no recv try before data is in (default 1)
 *   fixed=1|0       registered sockets and ring fd (default 1)
 *   wait=tick       a diagnostic, not a floor: sleep the whole tick and take every completion
 *                   then (one wake-up per tick), instead of waking for the first completion;
 *                   answers are then seen up to a tick late, which a latency-measuring tool
 *                   cannot accept without kernel receive timestamps
 * and the variant is printed on stderr.
 */
#include "floor.h"

#include <errno.h>
#include <liburing.h>
#include <sys/mman.h>
#include <unistd.h>

#define NBUFS 256   /* provided buffers (multishot), a power of two */
#define BUFSZ 4096
#define BGID 1
#define RECV_TAG (1ull << 32)

static struct io_uring ring;
static struct conn *c;
static int multishot = 0, pollfirst = 1, fixed = 1, tickwait = 0;

/* A free SQE, submitting what is queued if the submission ring is full. */
static struct io_uring_sqe *sqe_get(void) {
    struct io_uring_sqe *s = io_uring_get_sqe(&ring);
    if (!s) {
        io_uring_submit(&ring);
        s = io_uring_get_sqe(&ring);
    }
    if (!s) {
        fprintf(stderr, "no SQE\n");
        exit(1);
    }
    return s;
}

/* Arms the receive of connection `i`: one recv, or one multishot recv into the buffer ring. */
static void arm_recv(int i) {
    struct io_uring_sqe *s = sqe_get();
    int fd = fixed ? i : c[i].fd;
    if (multishot) {
        io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
        s->flags |= IOSQE_BUFFER_SELECT;
        s->buf_group = BGID;
    } else {
        io_uring_prep_recv(s, fd, c[i].buf + c[i].have, BUF - c[i].have, 0);
        if (pollfirst) s->ioprio |= IORING_RECVSEND_POLL_FIRST;
    }
    if (fixed) s->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(s, RECV_TAG | (unsigned)i);
}

int main(int argc, char **argv) {
    struct run run;
    if (parse_run(argc, argv, &run)) return 2;

    const char *v = getenv("PACED_URING");
    v = v ? v : "";
    unsigned setup = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    const char *setup_name = "defer";
    if (strstr(v, "read=multishot")) multishot = 1;
    if (strstr(v, "setup=coop")) {
        setup = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
        setup_name = "coop";
    } else if (strstr(v, "setup=plain")) {
        setup = 0;
        setup_name = "plain";
    }
    if (strstr(v, "pollfirst=0")) pollfirst = 0;
    if (strstr(v, "fixed=0")) fixed = 0;
    if (strstr(v, "wait=tick")) tickwait = 1;
    fprintf(stderr, "paced_uring: read=%s setup=%s pollfirst=%d fixed=%d wait=%s\n",
            multishot ? "multishot" : "rearm", setup_name, pollfirst, fixed,
            tickwait ? "tick" : "first");

    struct io_uring_params p = {.flags = setup | IORING_SETUP_SUBMIT_ALL};
    int ret = io_uring_queue_init_params(1024, &ring, &p);
    if (ret < 0) {
        fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
        return 1;
    }
    if (fixed && io_uring_register_ring_fd(&ring) < 0) fprintf(stderr, "no registered ring fd\n");

    struct io_uring_buf_ring *br = NULL;
    char *bufs = NULL;
    int bmask = io_uring_buf_ring_mask(NBUFS);
    if (multishot) {
        br = mmap(NULL, NBUFS * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
                  MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
        bufs = malloc((size_t)NBUFS * BUFSZ);
        if (br == MAP_FAILED || !bufs) {
            perror("buffers");
            return 1;
        }
        io_uring_buf_ring_init(br);
        struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)br, .ring_entries = NBUFS,
                                       .bgid = BGID};
        if ((ret = io_uring_register_buf_ring(&ring, &reg, 0)) < 0) {
            fprintf(stderr, "io_uring_register_buf_ring: %s\n", strerror(-ret));
            return 1;
        }
        for (int b = 0; b < NBUFS; b++)
            io_uring_buf_ring_add(br, bufs + (size_t)b * BUFSZ, BUFSZ, b, bmask, b);
        io_uring_buf_ring_advance(br, NBUFS);
    }

    c = calloc(run.nconn, sizeof *c);
    int *fds = malloc(run.nconn * sizeof *fds);
    int *idle = malloc(run.nconn * sizeof *idle), nidle = 0;
    for (int i = 0; i < run.nconn; i++) {
        if ((c[i].fd = fds[i] = connect_one(&run)) < 0) return 1;
        idle[nidle++] = i;
    }
    if (fixed && (ret = io_uring_register_files(&ring, fds, run.nconn)) < 0) {
        fprintf(stderr, "io_uring_register_files: %s\n", strerror(-ret));
        return 1;
    }
    /* Every connection's receive is armed from the start (and re-armed after each answer). */
    for (int i = 0; i < run.nconn; i++) arm_recv(i);

    long long due = 0, answered = 0, late = 0;
    long long total = (long long)(run.rate * run.seconds);
    struct __kernel_timespec ts = {.tv_sec = run.tick_us / 1000000,
                                   .tv_nsec = (run.tick_us % 1000000) * 1000};
    double start = now_s(), end = start + run.seconds;
    for (;;) {
        double t = now_s();
        /* Every request due by now goes out on a free connection: one SQE each, no CQE. */
        while (due < total && start + due / run.rate <= t && nidle > 0) {
            if (t - (start + due / run.rate) > 0.001) late++;
            int i = idle[--nidle];
            struct io_uring_sqe *s = sqe_get();
            io_uring_prep_send(s, fixed ? i : c[i].fd, run.req, run.reqlen, MSG_WAITALL);
            s->flags |= IOSQE_CQE_SKIP_SUCCESS | (fixed ? IOSQE_FIXED_FILE : 0);
            io_uring_sqe_set_data64(s, (unsigned)i);
            c[i].busy = 1;
            due++;
        }
        if (answered >= total || (t >= end + 2.0)) break;
        /* The tick's sends and re-armed receives, and the wait for completions: one enter. */
        struct io_uring_cqe *cqe;
        ret = io_uring_submit_and_wait_timeout(&ring, &cqe, tickwait ? 1u << 30 : 1, &ts, NULL);
        if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
            fprintf(stderr, "io_uring_submit_and_wait_timeout: %s\n", strerror(-ret));
            return 1;
        }
        unsigned head, seen = 0, returned = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            int i = (int)(unsigned)cqe->user_data;
            struct conn *k = &c[i];
            if (!(cqe->user_data & RECV_TAG)) {
                fprintf(stderr, "send on connection %d: %s\n", i,
                        cqe->res < 0 ? strerror(-cqe->res) : "short");
                return 1;
            }
            if (cqe->res == -ENOBUFS && multishot) {
                arm_recv(i);
                continue;
            }
            if (cqe->res <= 0) {
                fprintf(stderr, "connection %d closed (%d)\n", i, cqe->res);
                return 1;
            }
            if (multishot) {
                int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
                size_t n = (size_t)cqe->res;
                if (n > BUF - k->have) n = BUF - k->have;
                memcpy(k->buf + k->have, bufs + (size_t)bid * BUFSZ, n);
                k->have += n;
                io_uring_buf_ring_add(br, bufs + (size_t)bid * BUFSZ, BUFSZ, bid, bmask,
                                      returned++);
            } else {
                k->have += (size_t)cqe->res;
            }
            if (answered_on(k)) {
                answered++;
                idle[nidle++] = i;
            }
            if (multishot ? !(cqe->flags & IORING_CQE_F_MORE) : 1) arm_recv(i);
        }
        if (returned) io_uring_buf_ring_advance(br, returned);
        io_uring_cq_advance(&ring, seen);
    }
    double took = now_s() - start;
    print_result(answered, late, total - due, took);
    return 0;
}
