/*
 * ios_quota.h - what each uid holds in a storage daemon's lock table: its
 * lock requests and the table memory they take (tlk_request_footprint),
 * against the config's lock_requests_per_uid and lock_bytes_per_uid, and
 * the lock descriptions it has in progress (locks sent in several
 * messages), against lock_pending_per_uid, so one user cannot fill the
 * tables that every user's locks share. Root (uid 0) has no per-uid
 * share. Only the loop thread calls these.
 */
#ifndef TESSERA_IOS_QUOTA_H
#define TESSERA_IOS_QUOTA_H

#include <stddef.h>
#include <stdint.h>

struct ios_lockq;

struct ios_lockq_limits {
	uint32_t requests;   /* live requests of one uid */
	uint64_t bytes;      /* their lock table memory */
	uint32_t pending;    /* descriptions in progress of one uid */
	uint64_t pending_ranges; /* the ranges they have room for */
};
int ios_lockq_create(const struct ios_lockq_limits *lim, struct ios_lockq **out);
void ios_lockq_destroy(struct ios_lockq *q);
/* May uid add one request of `bytes`? 0, or -EDQUOT with why (which limit,
 * what uid holds) written for the error reply. */
int ios_lockq_admit(struct ios_lockq *q, uint32_t uid, size_t bytes, char *why, size_t len);
/* The request lock_id of `owner` (a lock session) now exists, charged to
 * uid; -ENOMEM (then it is not counted). */
int ios_lockq_charge(struct ios_lockq *q, uint64_t lock_id, uint64_t owner, uint32_t uid,
		     size_t bytes);
/* The request is gone (released); the owner's requests are gone (its
 * lease expired). Unknown ids are ignored. */
void ios_lockq_release(struct ios_lockq *q, uint64_t lock_id);
void ios_lockq_release_owner(struct ios_lockq *q, uint64_t owner);
/* May uid start one more description? 0, or -EDQUOT with why. Then one
 * more (delta 1: -ENOMEM) or one fewer (-1) of uid's. */
int ios_lockq_pending_admit(struct ios_lockq *q, uint32_t uid, char *why, size_t len);
int ios_lockq_pending_add(struct ios_lockq *q, uint32_t uid, int delta);
/* Room for `more` ranges in uid's descriptions (a negative `more` gives
 * them back): 0, or -EDQUOT past pending_ranges (nothing changed). */
int ios_lockq_pending_ranges(struct ios_lockq *q, uint32_t uid, int64_t more);

#endif /* TESSERA_IOS_QUOTA_H */
