/*
 * transport_int.h - what transport.c (tnet's RDM mode and its public
 * calls) and transport_conn.c (its connected mode, TNET_PROVIDER_CONN)
 * share. Private to proto/: the public face is tnet_* in tproto.h.
 */
#ifndef TRANSPORT_INT_H
#define TRANSPORT_INT_H

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <sys/epoll.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "tp_clock.h"
#include "tproto.h"

_Static_assert(sizeof(struct fi_context2) <= 64, "fi_context2 fits tnet_ctx");

#define TNET_FI_VERSION FI_VERSION(1, 9)
#define TNET_NAME_CACHE 1024 /* peers remembered by raw name (power of 2) */

struct tnet_peer_name {
	uint8_t len; /* 0: empty slot */
	uint8_t name[TP_MAX_ADDR - 1];
	fi_addr_t addr;
};

struct tnet_conns; /* connected mode: transport_conn.c */

struct tnet {
	struct tnet_conns *conns;    /* connected mode; NULL for RDM */
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	int fd;                      /* the cq's wait fd */
	unsigned nrecv;
	struct tnet_rbuf *rbufs;     /* nrecv buffers, all posted when idle */
	struct tnet_peer_name *names; /* open-addressing cache of raw names */
	struct tnet_times times;     /* tnet_open's */
	int tagged;                  /* FI_TAGGED granted */
	int lends;                   /* tnet_can_lend */
	size_t iov_limit;            /* of sends and receives both */
};

/* transport.c's helpers the connected mode uses too. */
int tnet_fi_err(int rc);
void tnet_note_caps(struct tnet *net);
/* tnet_open's first steps in either mode: the provider's fabric, its
 * domain and the completion queue; *step says which one failed. */
int tnet_open_domain(struct tnet *net, const struct tnet_opts *opts, const char **step);
int tnet_find_name(struct tnet *net, const void *name, size_t len, uint64_t *peer);
void tnet_cache_name(struct tnet *net, const void *name, size_t len, uint64_t peer);

/* One completion (op_context, len, and status: 0 or the failure's
 * negative errno) into *ev: returns the events made, 0 or 1. */
typedef int (*tnet_event_fn)(struct tnet *net, struct tnet_event *ev, void *op_context,
			     size_t len, int status);
/* Up to max completions of net's cq, each through fn: the events made,
 * or a negative errno when the cq failed before any. */
int tnet_cq_drain(struct tnet *net, struct tnet_event *ev, int max, tnet_event_fn fn);

/* The connected mode, called by the public tnet_* calls when net->conns
 * is set. Same contracts as the tnet_* call each serves. */
int tnet_conn_open(struct tnet *net, const struct tnet_opts *opts, const char **step);
void tnet_conn_destroy(struct tnet *net);
int tnet_conn_fd(const struct tnet *net);
struct fid *tnet_conn_eq_fid(struct tnet *net);
int tnet_conn_name(struct tnet *net, void *buf, size_t *len);
int tnet_conn_connect(struct tnet *net, struct fi_info *info, uint64_t *peer);
void tnet_conn_forget(struct tnet *net, uint64_t peer);
int tnet_conn_send(struct tnet *net, uint64_t peer, const struct iovec *iov, size_t n,
		   struct tnet_ctx *ctx);
int tnet_conn_repost(struct tnet *net, struct tnet_rbuf *rb);
int tnet_conn_poll(struct tnet *net, struct tnet_event *ev, int max);

#endif
