/*
 * nfq-delay: a slow, lossy link for kernels built without `tc netem` (pnpm cluster faults, (c)).
 *
 *   nfq-delay QUEUE DELAY_MS LOSS_PERCENT     hold every packet the packet filter sends to NFQUEUE
 *                                             QUEUE for DELAY_MS, then let it through, or drop it
 *                                             (LOSS_PERCENT of them, chosen at random)
 *   nfq-delay --check QUEUE                   bind QUEUE and exit 0: this kernel and library can
 *
 * Run it in the namespace whose packets are queued (queues are per network namespace), then add
 * the rules, e.g. `iptables -I OUTPUT -o eth0 -j NFQUEUE --queue-num 0` (no --queue-bypass: a
 * delayer that died must not leave the link fast without anyone noticing). It prints `ready`
 * once bound. Every packet is held the same time, so they leave in the order they came. On
 * SIGTERM or SIGINT (after the rules are gone) it still gives each held packet its verdict when
 * due, prints `held N packets, dropped M` and exits 0.
 *
 * Built by apps/cluster/src/slow-link.ts with gcc against Debian's libnetfilter-queue-dev.
 * Only the packets' metadata is copied to this process (NFQNL_COPY_META): it decides, never reads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* At most this many packets held at once; the kernel's queue is as long, and drops beyond it. */
#define CAPACITY 65536

struct held {
  uint32_t id;
  uint64_t due_ns;
  int drop;
};

static struct held ring[CAPACITY];
static size_t head, count;
static uint64_t delay_ns;
static double loss;
static unsigned long long seen, dropped;
static volatile sig_atomic_t stopping;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *data, void *ctx) {
  (void)msg;
  (void)ctx;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(data);
  if (!ph) return 0;
  uint32_t id = ntohl(ph->packet_id);
  seen++;
  if (count == CAPACITY) {
    /* Full: this one goes now, as a full queue on a real link would drop it. */
    dropped++;
    return nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
  }
  struct held *slot = &ring[(head + count) % CAPACITY];
  slot->id = id;
  slot->due_ns = now_ns() + delay_ns;
  slot->drop = drand48() * 100.0 < loss;
  count++;
  return 0;
}

/* Gives every packet whose time is up its verdict, oldest first. */
static void release_due(struct nfq_q_handle *qh) {
  uint64_t now = now_ns();
  while (count > 0 && ring[head].due_ns <= now) {
    struct held *first = &ring[head];
    if (first->drop) dropped++;
    nfq_set_verdict(qh, first->id, first->drop ? NF_DROP : NF_ACCEPT, 0, NULL);
    head = (head + 1) % CAPACITY;
    count--;
  }
}

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static int usage(void) {
  fprintf(stderr, "usage: nfq-delay QUEUE DELAY_MS LOSS_PERCENT | nfq-delay --check QUEUE\n");
  return 64;
}

int main(int argc, char **argv) {
  int check = argc == 3 && strcmp(argv[1], "--check") == 0;
  if (!check && argc != 4) return usage();
  char *end;
  unsigned long queue = strtoul(argv[check ? 2 : 1], &end, 10);
  if (*end || queue > 65535) return usage();
  if (!check) {
    double delay_ms = strtod(argv[2], &end);
    if (*end || delay_ms < 0) return usage();
    loss = strtod(argv[3], &end);
    if (*end || loss < 0 || loss > 100) return usage();
    delay_ns = (uint64_t)(delay_ms * 1e6);
  }

  struct nfq_handle *h = nfq_open();
  if (!h) {
    perror("nfq-delay: nfq_open");
    return 1;
  }
  struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
  if (!qh) {
    fprintf(stderr, "nfq-delay: cannot bind queue %lu: %s\n", queue, strerror(errno));
    return 1;
  }
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0 || nfq_set_queue_maxlen(qh, CAPACITY) < 0) {
    perror("nfq-delay: configuring the queue");
    return 1;
  }
  if (check) {
    nfq_destroy_queue(qh);
    nfq_close(h);
    return 0;
  }
  /* Room for a burst's worth of packet notices before the socket overflows (ENOBUFS: lost). */
  nfnl_rcvbufsiz(nfq_nfnlh(h), 16 * 1024 * 1024);
  srand48((long)now_ns() ^ getpid());
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  printf("ready\n");
  fflush(stdout);

  int fd = nfq_fd(h);
  static char buf[65536] __attribute__((aligned));
  for (;;) {
    release_due(qh);
    if (stopping && count == 0) break;
    int timeout = -1;
    if (count > 0) {
      uint64_t now = now_ns();
      uint64_t due = ring[head].due_ns;
      timeout = due > now ? (int)((due - now + 999999) / 1000000) : 0;
    } else if (stopping) {
      timeout = 0;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int ready = poll(&pfd, 1, timeout);
    if (ready < 0 && errno != EINTR) {
      perror("nfq-delay: poll");
      return 1;
    }
    if (ready <= 0) continue;
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        nfq_handle_packet(h, buf, (int)n);
        continue;
      }
      /* ENOBUFS: notices were lost to an overflowing socket; the kernel dropped those packets. */
      if (n < 0 && errno == ENOBUFS) continue;
      break;
    }
  }
  printf("held %llu packets, dropped %llu\n", seen, dropped);
  nfq_destroy_queue(qh);
  nfq_close(h);
  return 0;
}
